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
  /**
   * Every host writes this setting off whatever the lab and the spec say: `fsync` (commits acknowledged with their WAL
   * in the page cache only) or `synchronous_commit` (acknowledged before their WAL is flushed). The power-cut drill's
   * fault tests: the count of acknowledged commits lost must be able to fail. Both stay refused in a spec's
   * postgres.settings.
   */
  durabilityOff?: DurabilityOff;
}

/** The settings the durability seam can turn off. */
export const DURABILITY_OFF = ['fsync', 'synchronous_commit'] as const;
export type DurabilityOff = (typeof DURABILITY_OFF)[number];

const ASYNC_QUORUM = 'STORAGE_LAB_TEST_ASYNC_QUORUM';
const DURABILITY_OFF_VAR = 'STORAGE_LAB_TEST_DURABILITY_OFF';

/** The variables a host agent gets for the seams a test's control worker was started with. */
export function testSeamEnv(seams: TestSeams | undefined): Record<string, string> {
  return {
    ...(seams?.asyncQuorum ? { [ASYNC_QUORUM]: '1' } : {}),
    ...(seams?.durabilityOff ? { [DURABILITY_OFF_VAR]: seams.durabilityOff } : {}),
  };
}

/** The seams a host agent was started with (its environment, as its provider gave it). */
export function testSeamsFromEnv(env: NodeJS.ProcessEnv): TestSeams {
  const off = env[DURABILITY_OFF_VAR];
  return {
    ...(env[ASYNC_QUORUM] === '1' ? { asyncQuorum: true } : {}),
    ...((DURABILITY_OFF as readonly (string | undefined)[]).includes(off) ? { durabilityOff: off as DurabilityOff } : {}),
  };
}
