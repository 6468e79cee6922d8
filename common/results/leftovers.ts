/**
 * What a measured attempt found still running from an earlier attempt on its host (whose agent died), and stopped
 * before it began (activities/host/leftovers.ts): it measures alone, never against a ghost of itself.
 */
export interface LeftoverCleanup {
  /** Processes stopped, as "pgbench (pid 1234)". */
  processes: string[];
  /** Database backends of the lab's earlier connections that were terminated. */
  backends: number;
}
