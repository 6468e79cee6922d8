/**
 * The sampler, on a connection of its own: wait events of active backends many times a second
 * (active-session-history style), cumulative statistics at both ends of the window, and, when the server's host is
 * this machine, its CPU seconds, its data device's IOPS, MB/s and latency, its I/O and memory cgroup, plus a
 * per-second series. Two uses: next to a TPS run (startSampler: the workload's backends, by application_name, over
 * the host's socket) and against any server (startSampling on a connection the caller made: every client backend
 * but its own; diagnose makes that connection read-only). Independent of the activity context, so the
 * sampler-overhead bench can run it too.
 */
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { waitClassShares, CPU_EVENT } from '../common/results/breakdown';
import type { CpuUsage, DeviceRates, SamplerReadings, SamplerSecond, VolumeWindow } from '../common/results/sampler-readings';
import type { HostConfig } from '../common/core/hosts';
import { cpuSeconds, ioCounters, writeCgroupFile } from './cgroups';
import { deviceMajMin } from './block-devices';
import { readKernelFile } from './lab-fs';
import { enforcedMemoryLimit } from './memory-limit';
import { connectLocal } from './pg';
import { VolumeControl, type VolumeStats } from './volume';
import { WORKLOAD_APP_PREFIX } from './pgbench-workload';
import { parseMemoryStat, type CgroupIoCounters } from './parsers/cgroup';
import { checkpointDeltas, databaseDeltas, ioDeltas, numericDeltas, type StatRow, type StatSnapshot } from './parsers/pg-stats';
import { diskRates, parseDiskstats, parsePidStatCpuSeconds, parseProcStat, type DiskCounters } from './parsers/proc';

/** What the sampler needs to know of its host. */
export type SamplerHost = Pick<HostConfig, 'socketDir' | 'postgres' | 'device' | 'cgroup' | 'volume'>;

export interface SamplerOptions {
  intervalMs: number;
  /** application_name of the workload's connections (only they are sampled). */
  applicationName: string;
}

/** Which backends a sampling looks at: the workload's (by application_name), or every client backend but its own. */
export type SessionFilter = { applicationName: string } | { allClientBackends: true };

export interface SamplingOptions {
  intervalMs: number;
  sessions: SessionFilter;
  /** Counters of the machine the server runs on; null when it runs elsewhere (no CPU, device or cgroup figures). */
  counters: HostCounters | null;
  /** Whose database sizes the cache competes for: the connected database only, or every database of the server. */
  databaseSize: 'current' | 'all';
  /** Said in the result's notes, e.g. what the opening reading could not wait for. */
  notes?: string[];
}

/**
 * How long the opening reading waits for an earlier workload's backends to exit. A backend sends the statistics it
 * has not flushed yet (pg_stat_io keeps up to a second, more when the lock is busy) as it exits; the warm-up's 64
 * backends, cut off mid-read at a cold cache, exit right as the TPS run starts: counted after the opening reading,
 * their reads are in the server's figure of this window and in no sample of it.
 */
export const EARLIER_WORKLOAD_WAIT_MS = 10_000;

export interface RunningSampler {
  /** Stops sampling, takes the closing readings and returns what was seen. */
  stop(): Promise<SamplerReadings>;
}

/** The wait event of an active backend with none. */
const eventSql = `coalesce(wait_event_type || ':' || wait_event, '${CPU_EVENT}')`;

/** Active workload backends by wait event (one row per event). */
const WORKLOAD_ASH_SQL = `SELECT ${eventSql} AS event, count(*)::int AS n, 'active' AS state
  FROM pg_stat_activity
  WHERE state = 'active' AND backend_type = 'client backend' AND application_name = $1 AND pid <> pg_backend_pid()
  GROUP BY 1`;

/** Every other client backend of this database in a transaction, by state and wait event, with their pids. */
const ALL_ASH_SQL = `SELECT ${eventSql} AS event, count(*)::int AS n,
    CASE WHEN state = 'active' THEN 'active' ELSE 'idle in transaction' END AS state, array_agg(pid) AS pids
  FROM pg_stat_activity
  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()
    AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')
  GROUP BY 1, 3`;

/** The snapshot query for a server version: views it lacks are left out (pg_stat_wal 14+, io 16+, checkpointer 17+). */
function snapshotSql(versionNum: number): string {
  const part = (minVersion: number, sql: string) => (versionNum >= minVersion ? sql : 'NULL');
  return `SELECT
    (SELECT to_jsonb(d) FROM pg_stat_database d WHERE datname = current_database()) AS db,
    ${part(140000, '(SELECT to_jsonb(w) FROM pg_stat_wal w)')} AS wal,
    (SELECT to_jsonb(b) FROM pg_stat_bgwriter b) AS bgwriter,
    ${part(170000, '(SELECT to_jsonb(c) FROM pg_stat_checkpointer c)')} AS checkpointer,
    ${part(160000, '(SELECT jsonb_agg(to_jsonb(i)) FROM pg_stat_io i)')} AS io,
    (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text AS lsn`;
}

/** A snapshot plus the WAL position (the primary's insert position, or a standby's replay position). */
type Snapshot = StatSnapshot & { lsn: string | null } & Record<string, unknown>;

/** CPU seconds the whole machine has been busy (/proc/stat). */
function machineBusySeconds(): number {
  return parseProcStat(readKernelFile('/proc/stat')).busySeconds;
}

/** Host-level counters read from files: CPU seconds (the host's cgroup, or the machine's), diskstats, the I/O and memory cgroup. */
export class HostCounters {
  readonly cpuSource: CpuUsage['source'];
  private readonly majMin: string | null;
  private readonly volumeControl: VolumeControl | null;
  constructor(private readonly host: Pick<SamplerHost, 'device' | 'cgroup' | 'volume'>) {
    this.cpuSource = host.cgroup?.cpuDir ? 'cgroup' : 'proc';
    this.majMin = deviceMajMin(host.device);
    this.volumeControl = host.volume ? new VolumeControl(host.volume.socket) : null;
  }

  get hasVolume(): boolean {
    return this.volumeControl !== null;
  }

  /** The modelled volume's counters now, or null (no modelled volume, or its server did not answer). */
  async volume(): Promise<VolumeStats | null> {
    return this.volumeControl ? this.volumeControl.stats().catch(() => null) : null;
  }
  cpu(): number {
    const cg = this.host.cgroup;
    if (cg?.cpuDir) return cpuSeconds({ kind: cg.kind, cpuDir: cg.cpuDir });
    return parseProcStat(readKernelFile('/proc/stat')).busySeconds;
  }
  disk(): DiskCounters | null {
    return this.host.device ? parseDiskstats(readKernelFile('/proc/diskstats'), this.host.device) : null;
  }

  /**
   * Makes the I/O cgroup count the host's I/O on its device. cgroup v1 keeps blkio.throttle statistics only for a
   * device with a throttle rule, so a host without one (local disk) gets a read rule far above any device's rate.
   */
  enableIoAccounting(): void {
    const cg = this.host.cgroup;
    if (cg?.kind !== 'v1' || !cg.ioDir || !this.majMin) return;
    const rules = path.join(cg.ioDir, 'blkio.throttle.read_iops_device');
    try {
      if (!readKernelFile(rules).split('\n').some((l) => l.startsWith(`${this.majMin} `))) writeCgroupFile(cg.ioDir, 'blkio.throttle.read_iops_device', `${this.majMin} 1000000000`);
    } catch {
      // Not ours to change (no permission): the cgroup figures are then absent, as without a cgroup.
    }
  }

  /** The host's own I/O on its device from its I/O cgroup, or null (no cgroup, or no accounting for the device). */
  cgroupIo(): CgroupIoCounters | null {
    const cg = this.host.cgroup;
    if (!cg?.ioDir || !this.majMin) return null;
    return ioCounters({ kind: cg.kind, ioDir: cg.ioDir }, this.majMin);
  }

  /** The host's memory cgroup: page cache and anonymous bytes, and its limit; null without one. */
  memory(): { cacheBytes: number; anonBytes: number; limitBytes: number | null } | null {
    const dir = this.host.cgroup?.memoryDir;
    if (!dir) return null;
    try {
      const stat = parseMemoryStat(readKernelFile(path.join(dir, 'memory.stat')));
      if (!stat) return null;
      return { ...stat, limitBytes: enforcedMemoryLimit({ kind: this.host.cgroup!.kind, memoryDir: dir }) };
    } catch {
      return null;
    }
  }

  /** Starts a window; its end() gives the CPU seconds and device rates since. */
  window(): { end(): { cpu: CpuUsage; device: (DeviceRates & { name: string }) | null; cgroupIo: SamplerReadings['cgroupIo'] } } {
    const started = performance.now();
    const cpu0 = this.cpu();
    const machine0 = machineBusySeconds();
    const disk0 = this.disk();
    const io0 = this.cgroupIo();
    return {
      end: () => {
        const wall = (performance.now() - started) / 1000;
        const used = this.cpu() - cpu0;
        const disk = this.disk();
        const io = this.cgroupIo();
        const span = wall > 0 ? wall : 1;
        return {
          cpu: {
            source: this.cpuSource,
            seconds: used,
            coresBusy: wall > 0 ? used / wall : 0,
            cores: os.cpus().length,
            ...(wall > 0 ? { machineCoresBusy: (machineBusySeconds() - machine0) / wall } : {}),
          },
          device: disk && disk0 && this.host.device ? { name: this.host.device, ...diskRates(disk0, disk, wall) } : null,
          cgroupIo:
            io && io0
              ? {
                  readIops: Math.max(0, io.reads - io0.reads) / span,
                  writeIops: Math.max(0, io.writes - io0.writes) / span,
                  readMBps: Math.max(0, io.readBytes - io0.readBytes) / 2 ** 20 / span,
                  writeMBps: Math.max(0, io.writeBytes - io0.writeBytes) / 2 ** 20 / span,
                }
              : null,
        };
      },
    };
  }
}

/** A modelled volume's window from its counters at both ends (pure). */
export function volumeWindow(a: VolumeStats, b: VolumeStats): VolumeWindow {
  const d = (f: (s: VolumeStats) => number) => Math.max(0, f(b) - f(a));
  const seconds = b.atSeconds - a.atSeconds;
  const perIo = (time: number, n: number) => (n > 0 ? (1000 * time) / n : null);
  const ka = a.kernel;
  const kb = b.kernel;
  const kernel =
    ka && kb && a.device === b.device
      ? {
          reads: kb.reads - ka.reads,
          writes: kb.writes - ka.writes,
          flushes: kb.flushes - ka.flushes,
          discards: kb.discards - ka.discards,
          readBytes: (kb.readSectors - ka.readSectors) * 512,
          writeBytes: (kb.writeSectors - ka.writeSectors) * 512,
          readLatencyMs: kb.reads > ka.reads ? (kb.readTicksMs - ka.readTicksMs) / (kb.reads - ka.reads) : null,
          writeLatencyMs: kb.writes > ka.writes ? (kb.writeTicksMs - ka.writeTicksMs) / (kb.writes - ka.writes) : null,
        }
      : null;
  return {
    model: b.model.name,
    params: {
      iops: b.model.iops,
      bytesPerSecond: b.model.bytesPerSecond,
      readIops: b.model.readIops,
      writeIops: b.model.writeIops,
      readBytesPerSecond: b.model.readBytesPerSecond,
      writeBytesPerSecond: b.model.writeBytesPerSecond,
      opUnitBytes: b.model.opUnitBytes,
      readLatencyUs: b.model.readLatencyUs,
      writeLatencyUs: b.model.writeLatencyUs,
      flushLatencyUs: b.model.flushLatencyUs,
      queueDepth: b.model.queueDepth,
      burstMs: b.model.burstMs,
    },
    seconds,
    modelOn: { start: a.on, end: b.on },
    served: {
      reads: d((s) => s.reads),
      writes: d((s) => s.writes),
      flushes: d((s) => s.flushes),
      discards: d((s) => s.discards),
      readBytes: d((s) => s.readBytes),
      writeBytes: d((s) => s.writeBytes),
    },
    modelled: {
      reads: d((s) => s.modelledReads),
      writes: d((s) => s.modelledWrites),
      units: d((s) => s.modelledUnits),
      readBytes: d((s) => s.modelledReadBytes),
      writeBytes: d((s) => s.modelledWriteBytes),
    },
    kernel,
    throttleWaits: d((s) => s.throttleWaits),
    throttleWaitSeconds: d((s) => s.throttleWaitSeconds),
    queueWaits: d((s) => s.queueWaits),
    meanQueue: seconds > 0 ? d((s) => s.queueArea) / seconds : 0,
    meanReadLatencyMs: perIo(d((s) => s.readServiceSeconds), d((s) => s.reads)),
    meanWriteLatencyMs: perIo(d((s) => s.writeServiceSeconds), d((s) => s.writes)),
    meanFlushLatencyMs: perIo(d((s) => s.flushServiceSeconds), d((s) => s.flushes)),
    inFlight: { start: a.inFlight, end: b.inFlight },
    serverCpuSeconds: d((s) => s.cpuSeconds),
    backing: b.store.backing,
  };
}

/** Starts sampling the workload's backends now; the caller starts the workload right after and calls stop() when it ends. */
export async function startSampler(host: SamplerHost, opts: SamplerOptions): Promise<RunningSampler> {
  const client = await connectLocal(host, { applicationName: 'storage-lab sampler' });
  try {
    const counters = new HostCounters(host);
    counters.enableIoAccounting();
    const lingering = await waitForEarlierWorkloads(client, EARLIER_WORKLOAD_WAIT_MS);
    return await startSampling(client, {
      intervalMs: opts.intervalMs,
      sessions: { applicationName: opts.applicationName },
      counters,
      databaseSize: 'current',
      notes: lingering
        ? [`${lingering} backends of an earlier workload were still connected after ${EARLIER_WORKLOAD_WAIT_MS / 1000} s: statistics they flush as they exit count in this window`]
        : [],
    });
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

/** Waits (bounded) until no backend of an earlier workload run is connected; returns how many still are. */
export async function waitForEarlierWorkloads(client: Client, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE left(application_name, length($1)) = $1', [
      WORKLOAD_APP_PREFIX,
    ]);
    if (r.rows[0].n === 0 || Date.now() >= deadline) return r.rows[0].n;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/**
 * Samples over a connection the caller made (and this closes at stop()). Every statement is its own short
 * transaction: no snapshot is held open between samples, so a production server's VACUUM is never held back.
 */
export async function startSampling(client: Client, opts: SamplingOptions): Promise<RunningSampler> {
  // Statements this connection runs between the opening and the closing reading: the server counts them as transactions.
  let ownTransactions = 0;
  let counting = false;
  const query = async <R extends Record<string, unknown>>(config: string | { name?: string; text: string; values?: unknown[] }, values?: unknown[]) => {
    if (counting) ownTransactions++;
    return typeof config === 'string' ? client.query<R>(config, values) : client.query<R>(config);
  };
  const info = (
    await query<{ v: string; pid: number; size: string }>(
      `SELECT current_setting('server_version_num') AS v, pg_backend_pid() AS pid,
        ${opts.databaseSize === 'all' ? '(SELECT sum(pg_database_size(oid)) FROM pg_database WHERE datallowconn)' : 'pg_database_size(current_database())'}::text AS size`,
    )
  ).rows[0];
  const versionNum = Number(info.v);
  // The sampler's own cost: CPU of its backend (null where /proc of the server is not visible, e.g. a remote host).
  const backendCpu = (): number | null => {
    if (!opts.counters) return null;
    try {
      return parsePidStatCpuSeconds(readKernelFile(`/proc/${info.pid}/stat`));
    } catch {
      return null;
    }
  };
  const backendCpuAtStart = backendCpu();
  const snapshot = async (): Promise<Snapshot> => (await query<Snapshot>(snapshotSql(versionNum))).rows[0];
  const counters = opts.counters;
  const notes: string[] = [...(opts.notes ?? [])];
  if (versionNum < 160000) notes.push('pg_stat_io needs PostgreSQL 16+; not sampled');
  if (versionNum < 140000) notes.push('pg_stat_wal needs PostgreSQL 14+; not sampled');
  if (!counters) notes.push('the server runs on another machine: no CPU, device or cgroup figures');
  else if (!counters.disk()) notes.push('the host data device is unknown; no device IOPS');

  const firstStats = await snapshot();
  const volumeAtStart = (await counters?.volume()) ?? null;
  counting = true;
  const window = counters?.window() ?? null;
  const started = performance.now();
  const startedAt = new Date().toISOString();

  const waitEvents: Record<string, number> = {};
  const seconds: { samples: number; active: number; dataFileRead: number }[] = [];
  const series: SamplerSecond[] = [];
  const pidsSeen = new Set<number>();
  let idleInTransaction = 0;
  let samples = 0;
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  let sampleError: string | null = null;
  const byApplication = 'applicationName' in opts.sessions ? opts.sessions.applicationName : null;

  // Samples on a fixed grid (start + k × interval), so the rate does not drift; a sample that comes late (a slow
  // query on a saturated host) is caught up at once, and only a lag of more than one tick is dropped.
  let nextTick = started;
  let timer: NodeJS.Timeout | undefined;
  const sample = async () => {
    const at = performance.now();
    try {
      const r = byApplication
        ? await query<{ event: string; n: number; state: string }>({ name: 'storage-lab-ash', text: WORKLOAD_ASH_SQL, values: [byApplication] })
        : await query<{ event: string; n: number; state: string; pids: number[] }>({ name: 'storage-lab-ash-all', text: ALL_ASH_SQL });
      const bucket = (seconds[Math.floor((at - started) / 1000)] ??= { samples: 0, active: 0, dataFileRead: 0 });
      bucket.samples++;
      for (const row of r.rows) {
        for (const pid of (row as { pids?: number[] }).pids ?? []) pidsSeen.add(pid);
        if (row.state !== 'active') {
          idleInTransaction += row.n;
          continue;
        }
        waitEvents[row.event] = (waitEvents[row.event] ?? 0) + row.n;
        bucket.active += row.n;
        if (row.event === 'IO:DataFileRead') bucket.dataFileRead += row.n;
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

  // Once a second: the host's CPU, device and memory counters, for the per-second series and the memory mean.
  let lastCpu = counters?.cpu() ?? null;
  let lastDisk = counters?.disk() ?? null;
  let lastSecondAt = started;
  const memoryReadings: { cacheBytes: number; anonBytes: number; limitBytes: number | null }[] = [];
  // The volume's operations per second, by its own clock: each second's reading against the one before it.
  let lastVolume = volumeAtStart;
  const volumeOps: (number | null)[] = [];
  const volumeReads: Promise<void>[] = [];
  const secondTimer = setInterval(() => {
    if (counters && lastVolume) {
      const index = series.length;
      volumeReads.push(
        counters.volume().then((v) => {
          if (v && lastVolume && v.atSeconds > lastVolume.atSeconds) volumeOps[index] = (v.modelledUnits - lastVolume.modelledUnits) / (v.atSeconds - lastVolume.atSeconds);
          if (v) lastVolume = v;
        }),
      );
    }
    const now = performance.now();
    const cpu = counters?.cpu() ?? null;
    const disk = counters?.disk() ?? null;
    const memory = counters?.memory() ?? null;
    if (memory) memoryReadings.push(memory);
    const span = (now - lastSecondAt) / 1000;
    const rates: DeviceRates | null = disk && lastDisk ? diskRates(lastDisk, disk, span) : null;
    const index = series.length;
    const bucket = seconds[index];
    series.push({
      second: index + 1,
      activeSessions: bucket && bucket.samples ? bucket.active / bucket.samples : 0,
      dataFileRead: bucket && bucket.samples ? bucket.dataFileRead / bucket.samples : 0,
      cpuCores: cpu !== null && lastCpu !== null && span > 0 ? (cpu - lastCpu) / span : null,
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
    async stop(): Promise<SamplerReadings> {
      stopped = true;
      clearTimeout(timer);
      clearInterval(secondTimer);
      await inFlight;
      await Promise.all(volumeReads);
      series.forEach((s, i) => {
        if (volumeOps[i] !== undefined) s.deviceOps = volumeOps[i];
      });
      try {
        const wall = (performance.now() - started) / 1000;
        // Backends send their last statistics as they exit: wait for the workload's to go before the closing reading.
        for (let i = 0; byApplication && i < 50; i++) {
          const r = await query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [byApplication]);
          if (r.rows[0].n === 0) break;
          await new Promise((res) => setTimeout(res, 100));
        }
        counting = false;
        const lastStats = await snapshot();
        const host = window?.end() ?? null;
        const volumeAtEnd = (await counters?.volume()) ?? null;
        if (counters?.hasVolume && !(volumeAtStart && volumeAtEnd)) notes.push('the modelled volume\'s server did not answer at both ends of the window: no device accounting');
        const backendCpuAtEnd = backendCpu();
        if (sampleError) notes.push(`some wait-event samples failed: ${sampleError}`);
        const active = Object.values(waitEvents).reduce((s, n) => s + n, 0);
        const mean = (f: (m: (typeof memoryReadings)[number]) => number) => memoryReadings.reduce((s, m) => s + f(m), 0) / memoryReadings.length / 2 ** 20;
        const walLsnBytes = await walDistance(query, firstStats.lsn, lastStats.lsn);
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
          cpu: host?.cpu ?? null,
          samplerCpuSeconds: backendCpuAtStart !== null && backendCpuAtEnd !== null ? backendCpuAtEnd - backendCpuAtStart : null,
          device: host?.device ?? null,
          series,
          notes,
          ownTransactions,
          bufferWrites: bufferWrites(firstStats, lastStats),
          walBytes: walLsnBytes ?? undefined,
          databaseBytes: Number(info.size),
          cgroupIo: host?.cgroupIo ?? null,
          ...(volumeAtStart && volumeAtEnd ? { volume: volumeWindow(volumeAtStart, volumeAtEnd) } : {}),
          memory: memoryReadings.length
            ? { cacheMiB: mean((m) => m.cacheBytes), anonMiB: mean((m) => m.anonBytes), limitMiB: memoryReadings[0].limitBytes === null ? null : memoryReadings[0].limitBytes / 2 ** 20 }
            : null,
          ...(byApplication ? {} : { sessions: { avgIdleInTransaction: samples > 0 ? idleInTransaction / samples : 0, distinctBackends: pidsSeen.size } }),
        };
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}

/** Bytes between two WAL positions, computed by the server (null when either is unknown). */
async function walDistance(
  query: <R extends Record<string, unknown>>(sql: string, values?: unknown[]) => Promise<{ rows: R[] }>,
  from: string | null,
  to: string | null,
): Promise<number | null> {
  if (!from || !to) return null;
  const r = await query<{ d: string }>('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS d', [to, from]);
  return Math.max(0, Number(r.rows[0].d));
}

/**
 * Data pages Postgres wrote in the window: checkpoints, the background writer, and backends evicting dirty buffers
 * (pg_stat_bgwriter up to 16; from 17 pg_stat_checkpointer, pg_stat_bgwriter and pg_stat_io's client backends).
 */
export function bufferWrites(before: StatSnapshot, after: StatSnapshot): number {
  const delta = (a: StatRow | null, b: StatRow | null, key: string) => (a && b ? (numericDeltas(a, b)[key] ?? 0) : 0);
  if (after.checkpointer) {
    const backends = ioDeltas(before.io, after.io)?.['client backend']?.writes ?? 0;
    return delta(before.checkpointer, after.checkpointer, 'buffers_written') + delta(before.bgwriter, after.bgwriter, 'buffers_clean') + backends;
  }
  return ['buffers_checkpoint', 'buffers_clean', 'buffers_backend'].reduce((s, k) => s + delta(before.bgwriter, after.bgwriter, k), 0);
}
