/**
 * Host activities: they run in the host agent, next to the Postgres they drive, on task queue `host:<hostId>`.
 * Built by a factory so the agent passes the real host and tests can pass another.
 */
import type { HostDeps, HostInput } from './deps';
import { assertHost, assertOwner } from './deps';
import { configurePostgres, isRunning, stopPostgres, type ConfigurePostgresInput } from './postgres';
import { loadData, verifyAccounts, type LoadInput } from './load';
import { runPgbench, type PgbenchInput } from './pgbench';
import { createPhaseActivities } from './phases';
import { createDrillHostActivities } from './durability';
import { describeServer, publishDataSet, restoreDataSet, type PublishInput, type RestoreDataSetInput } from './data-set';
import { watched } from './watchdog';

/**
 * The host's activities; each one runs only for the host's owner (assertOwner, before anything else), and each one
 * with a heartbeat timeout under the watchdog of its Postgres (./watchdog.ts).
 */
export function createHostActivities(deps: HostDeps) {
  return owned(deps, watched(deps, {
    /** The agent's hello: answers once the agent polls its queue, so workflows know the host is up. */
    async describeHost(input: HostInput): Promise<{ hostId: string; pid: number; postgresRunning: boolean }> {
      assertHost(deps, input);
      return { hostId: deps.config.hostId, pid: process.pid, postgresRunning: await isRunning(deps) };
    },
    configurePostgres: (input: ConfigurePostgresInput) => configurePostgres(deps, input),
    stopPostgres: (input: HostInput & { mode?: 'fast' | 'immediate' }) => stopPostgres(deps, input),
    loadData: (input: LoadInput) => loadData(deps, input),
    verifyAccounts: (input: HostInput) => verifyAccounts(deps, input),
    runPgbench: (input: PgbenchInput) => runPgbench(deps, input),
    ...createPhaseActivities(deps),
    describeServer: (input: HostInput) => describeServer(deps, input),
    publishDataSet: (input: PublishInput) => publishDataSet(deps, input),
    restoreDataSet: (input: RestoreDataSetInput) => restoreDataSet(deps, input),
    ...createDrillHostActivities(deps),
  }));
}

/** The same host activities, each refusing (before it acts) a workflow that does not own the host. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- activities take any arguments
function owned<T extends Record<string, (input: any) => Promise<unknown>>>(deps: HostDeps, activities: T): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (input: unknown) => {
        assertOwner(deps, input, name);
        return fn(input);
      },
    ]),
  ) as T;
}

export type HostActivities = ReturnType<typeof createHostActivities>;
