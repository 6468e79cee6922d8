/**
 * The diagnostics sampler that runs next to a TPS run, on its own connection: wait events of the workload's active
 * backends many times a second (active-session-history style), cumulative statistics at both ends of the window,
 * the host's CPU seconds and its data device's IOPS, MB/s and latency, plus a per-second series.
 * Independent of the activity context, so the sampler-overhead bench can run it too.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Client } from 'pg';
import { waitClassShares, CPU_EVENT } from '../../common/breakdown';
import type { CpuUsage, DeviceRates, Diagnostics, DiagnosticsSecond } from '../../common/diagnostics';
import type { HostConfig } from '../../infra/providers/host-provider';
import { cpuSeconds } from '../../infra/providers/local/cgroups';
import { connectLocal } from '../lib/pg';
import { checkpointDeltas, databaseDeltas, ioDeltas, numericDeltas, type StatSnapshot } from '../parsers/pg-stats';
import { diskRates, parseDiskstats, parsePidStatCpuSeconds, parseProcStat, type DiskCounters } from '../parsers/proc';

/** What the sampler needs to know of its host. */
export type SamplerHost = Pick<HostConfig, 'socketDir' | 'postgres' | 'device' | 'cgroup'>;

export interface SamplerOptions {
  intervalMs: number;
  /** application_name of the workload's connections (only they are sampled). */
  applicationName: string;
}

export interface RunningSampler {
  /** Stops sampling, takes the closing readings and returns what was seen. */
  stop(): Promise<Diagnostics>;
}

const ASH_SQL = `SELECT coalesce(wait_event_type || ':' || wait_event, '${CPU_EVENT}') AS event, count(*)::int AS n
  FROM pg_stat_activity
  WHERE state = 'active' AND backend_type = 'client backend' AND application_name = $1 AND pid <> pg_backend_pid()
  GROUP BY 1`;

/** The snapshot query for a server version: views it lacks are left out (pg_stat_wal 14+, io 16+, checkpointer 17+). */
function snapshotSql(versionNum: number): string {
  const part = (minVersion: number, sql: string) => (versionNum >= minVersion ? sql : 'NULL');
  return `SELECT
    (SELECT to_jsonb(d) FROM pg_stat_database d WHERE datname = current_database()) AS db,
    ${part(140000, '(SELECT to_jsonb(w) FROM pg_stat_wal w)')} AS wal,
    (SELECT to_jsonb(b) FROM pg_stat_bgwriter b) AS bgwriter,
    ${part(170000, '(SELECT to_jsonb(c) FROM pg_stat_checkpointer c)')} AS checkpointer,
    ${part(160000, '(SELECT jsonb_agg(to_jsonb(i)) FROM pg_stat_io i)')} AS io`;
}

/** Host-level counters read from files: CPU seconds (the host's cgroup, or the machine's) and the device's diskstats. */
export class HostCounters {
  readonly cpuSource: CpuUsage['source'];
  constructor(private readonly host: SamplerHost) {
    this.cpuSource = host.cgroup?.cpuDir ? 'cgroup' : 'proc';
  }
  cpu(): number {
    const cg = this.host.cgroup;
    if (cg?.cpuDir) return cpuSeconds({ kind: cg.kind, cpuDir: cg.cpuDir });
    return parseProcStat(readFileSync('/proc/stat', 'utf8')).busySeconds;
  }
  disk(): DiskCounters | null {
    return this.host.device ? parseDiskstats(readFileSync('/proc/diskstats', 'utf8'), this.host.device) : null;
  }

  /** Starts a window; its end() gives the CPU seconds and device rates since. */
  window(): { end(): { cpu: CpuUsage; device: (DeviceRates & { name: string }) | null } } {
    const started = performance.now();
    const cpu0 = this.cpu();
    const disk0 = this.disk();
    return {
      end: () => {
        const wall = (performance.now() - started) / 1000;
        const used = this.cpu() - cpu0;
        const disk = this.disk();
        return {
          cpu: { source: this.cpuSource, seconds: used, coresBusy: wall > 0 ? used / wall : 0, cores: os.cpus().length },
          device: disk && disk0 && this.host.device ? { name: this.host.device, ...diskRates(disk0, disk, wall) } : null,
        };
      },
    };
  }
}

/** Starts sampling now; the caller starts the workload right after and calls stop() when it ends. */
export async function startSampler(host: SamplerHost, opts: SamplerOptions): Promise<RunningSampler> {
  const client = await connectLocal(host, { applicationName: 'storage-lab sampler' });
  try {
    return await begin(client, host, opts);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

async function begin(client: Client, host: SamplerHost, opts: SamplerOptions): Promise<RunningSampler> {
  const info = (await client.query<{ v: string; pid: number }>("SELECT current_setting('server_version_num') AS v, pg_backend_pid() AS pid")).rows[0];
  const versionNum = Number(info.v);
  // The sampler's own cost: CPU of its backend (null where /proc of the server is not visible, e.g. a remote host).
  const backendCpu = (): number | null => {
    try {
      return parsePidStatCpuSeconds(readFileSync(`/proc/${info.pid}/stat`, 'utf8'));
    } catch {
      return null;
    }
  };
  const backendCpuAtStart = backendCpu();
  const snapshot = async (): Promise<StatSnapshot> => (await client.query<StatSnapshot>(snapshotSql(versionNum))).rows[0];
  const counters = new HostCounters(host);
  const notes: string[] = [];
  if (versionNum < 160000) notes.push('pg_stat_io needs PostgreSQL 16+; not sampled');
  if (versionNum < 140000) notes.push('pg_stat_wal needs PostgreSQL 14+; not sampled');
  if (!host.device) notes.push('the host data device is unknown; no device IOPS');

  const firstStats = await snapshot();
  const window = counters.window();
  const started = performance.now();
  const startedAt = new Date().toISOString();

  const waitEvents: Record<string, number> = {};
  const seconds: { samples: number; active: number; dataFileRead: number }[] = [];
  const series: DiagnosticsSecond[] = [];
  let samples = 0;
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  let sampleError: string | null = null;

  // Samples on a fixed grid (start + k × interval), so the rate does not drift; a sample that comes late (a slow
  // query on a saturated host) is caught up at once, and only a backlog of more than one tick is dropped.
  let nextTick = started;
  let timer: NodeJS.Timeout | undefined;
  const sample = async () => {
    const at = performance.now();
    try {
      const r = await client.query<{ event: string; n: number }>({ name: 'storage-lab-ash', text: ASH_SQL, values: [opts.applicationName] });
      const bucket = (seconds[Math.floor((at - started) / 1000)] ??= { samples: 0, active: 0, dataFileRead: 0 });
      bucket.samples++;
      for (const { event, n } of r.rows) {
        waitEvents[event] = (waitEvents[event] ?? 0) + n;
        bucket.active += n;
        if (event === 'IO:DataFileRead') bucket.dataFileRead += n;
      }
      samples++;
    } catch (err) {
      sampleError ??= (err as Error).message;
    }
  };
  const schedule = () => {
    if (stopped) return;
    const now = performance.now();
    nextTick += opts.intervalMs;
    if (now - nextTick > opts.intervalMs) nextTick = now;
    timer = setTimeout(() => {
      inFlight = sample().then(schedule);
    }, Math.max(0, nextTick - now));
  };
  inFlight = sample().then(schedule);

  // Once a second: the host's CPU and device counters, for the per-second series.
  let lastCpu = counters.cpu();
  let lastDisk = counters.disk();
  let lastSecondAt = started;
  const secondTimer = setInterval(() => {
    const now = performance.now();
    const cpu = counters.cpu();
    const disk = counters.disk();
    const span = (now - lastSecondAt) / 1000;
    const rates: DeviceRates | null = disk && lastDisk ? diskRates(lastDisk, disk, span) : null;
    const index = series.length;
    const bucket = seconds[index];
    series.push({
      second: index + 1,
      activeSessions: bucket && bucket.samples ? bucket.active / bucket.samples : 0,
      dataFileRead: bucket && bucket.samples ? bucket.dataFileRead / bucket.samples : 0,
      cpuCores: span > 0 ? (cpu - lastCpu) / span : null,
      readIops: rates?.readIops ?? null,
      writeIops: rates?.writeIops ?? null,
      readMBps: rates?.readMBps ?? null,
      writeMBps: rates?.writeMBps ?? null,
    });
    lastCpu = cpu;
    lastDisk = disk;
    lastSecondAt = now;
  }, 1000);

  return {
    async stop(): Promise<Diagnostics> {
      stopped = true;
      clearTimeout(timer);
      clearInterval(secondTimer);
      await inFlight;
      try {
        const wall = (performance.now() - started) / 1000;
        // Backends send their last statistics as they exit: wait for the workload's to go before the closing reading.
        for (let i = 0; i < 50; i++) {
          const r = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [opts.applicationName]);
          if (r.rows[0].n === 0) break;
          await new Promise((res) => setTimeout(res, 100));
        }
        const lastStats = await snapshot();
        const host = window.end();
        const backendCpuAtEnd = backendCpu();
        if (sampleError) notes.push(`some wait-event samples failed: ${sampleError}`);
        const active = Object.values(waitEvents).reduce((s, n) => s + n, 0);
        return {
          serverVersionNum: versionNum,
          startedAt,
          seconds: wall,
          intervalMs: opts.intervalMs,
          samples,
          samplesPerSecond: wall > 0 ? samples / wall : 0,
          waitEvents,
          waitClassShares: waitClassShares(waitEvents),
          avgActiveSessions: samples > 0 ? active / samples : 0,
          database: databaseDeltas(firstStats.db, lastStats.db),
          wal: firstStats.wal && lastStats.wal ? numericDeltas(firstStats.wal, lastStats.wal) : null,
          checkpoints: checkpointDeltas(firstStats, lastStats),
          io: ioDeltas(firstStats.io, lastStats.io),
          cpu: host.cpu,
          samplerCpuSeconds: backendCpuAtStart !== null && backendCpuAtEnd !== null ? backendCpuAtEnd - backendCpuAtStart : null,
          device: host.device,
          series,
          notes,
        };
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}
