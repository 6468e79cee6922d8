/**
 * What an earlier attempt on this host may have left running when its agent died: the workload's pgbench, a
 * pg_recvlogical, and the backends of the lab's own connections (a phase's, a loader's). A retried measurement
 * stops them first, so it measures alone and never against a ghost of itself; its result says what it stopped.
 */
import { listKernelDir, readKernelFile } from '../../lib/lab-fs';
import type { LeftoverCleanup } from '../../common/results/leftovers';
import { withConnection } from '../../lib/pg';
import type { HostDeps } from './deps';

/** Client tools the lab runs against a host's Postgres (found by the socket folder in their environment). */
const TOOLS = new Set(['pgbench', 'pg_recvlogical', 'psql']);
/** Backends of the lab's connections: application names the lab sets, and pg_recvlogical's default. */
const LAB_BACKENDS = `(application_name LIKE 'storage-lab %' OR application_name = 'pg_recvlogical')`;
const GONE_WAIT_MS = 10_000;

/** Pids and names of the client tools running against this host's Postgres (PGHOST is its socket folder). */
export function toolProcesses(socketDir: string): { pid: number; name: string }[] {
  const found: { pid: number; name: string }[] = [];
  for (const entry of listKernelDir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const name = readKernelFile(`/proc/${entry}/comm`).trim();
      if (!TOOLS.has(name)) continue;
      const env = readKernelFile(`/proc/${entry}/environ`).split('\0');
      if (env.includes(`PGHOST=${socketDir}`)) found.push({ pid: Number(entry), name });
    } catch {
      // Exited while we looked, or not ours to read.
    }
  }
  return found;
}

/** Stops the leftovers of earlier attempts; returns what was stopped, or undefined when nothing was. */
export async function stopLeftovers(deps: HostDeps): Promise<LeftoverCleanup | undefined> {
  const processes = toolProcesses(deps.config.socketDir);
  for (const p of processes) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  const backends = await withConnection(
    deps.config,
    async (c) => {
      const r = await c.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE ${LAB_BACKENDS} AND pid <> pg_backend_pid()`,
      );
      for (const started = Date.now(); Date.now() - started < GONE_WAIT_MS; ) {
        const left = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${LAB_BACKENDS} AND pid <> pg_backend_pid()`);
        if (left.rows[0].n === 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      return r.rows[0].n;
    },
    { database: 'postgres', applicationName: 'cleanup' },
  );
  if (processes.length === 0 && backends === 0) return undefined;
  return { processes: processes.map((p) => `${p.name} (pid ${p.pid})`), backends };
}
