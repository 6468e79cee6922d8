/**
 * Test seams of the workers: switches that only a test's own control worker sets (startControlWorker's testSeams),
 * and that reach the host agents it starts through their environment. No workflow input, spec field or CLI flag
 * reaches them; the production control worker (worker/control-worker.ts main) never sets one, an agent's environment
 * takes no such variable from the control worker's own (infra/agent-env.ts lists what it takes), and EC2 hosts never
 * get one.
 */
export interface TestSeams {
  /**
   * Every host writes synchronous_standby_names = '' whatever the drill asks, and so waits for its standbys to stream,
   * not to stream synchronously (the partition drill's async test: the count of split-brain commits must be able to
   * fail). The setting stays refused in a spec's postgres.settings.
   */
  asyncQuorum?: boolean;
}

const ASYNC_QUORUM = 'STORAGE_LAB_TEST_ASYNC_QUORUM';

/** The variables a host agent gets for the seams a test's control worker was started with. */
export function testSeamEnv(seams: TestSeams | undefined): Record<string, string> {
  return seams?.asyncQuorum ? { [ASYNC_QUORUM]: '1' } : {};
}

/** The seams a host agent was started with (its environment, as its provider gave it). */
export function testSeamsFromEnv(env: NodeJS.ProcessEnv): TestSeams {
  return env[ASYNC_QUORUM] === '1' ? { asyncQuorum: true } : {};
}
