/** How the lab runs pgbench with a spec's workload: its flags and the application_name the sampler filters on. */

/** The sizes of a workload run: pgbench's scale, clients and threads. */
export interface WorkloadSize {
  scale: number;
  clients: number;
  threads: number;
}

/** pgbench's flags for a workload of the spec: the script file, clients, threads; callers add duration and logs. */
export function workloadArgs(input: WorkloadSize, scriptFile: string): string[] {
  return ['--no-vacuum', '--scale', String(input.scale), '--client', String(input.clients), '--jobs', String(input.threads), '--file', scriptFile];
}

/** application_name of a run's pgbench connections, so the sampler sees those backends and no others. */
export function workloadAppName(label: string): string {
  return `${WORKLOAD_APP_PREFIX}${label}`;
}

/** What every run's application_name starts with (the warm-up's, the TPS run's, a drill's writer's). */
export const WORKLOAD_APP_PREFIX = 'storage-lab pgbench ';
