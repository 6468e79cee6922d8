/**
 * What the sampler reads over a window (beside a TPS run, or in a diagnose capture), and the device and CPU figures
 * every measurement shares, as stored in result.json.
 * Types only (plus nothing that needs Node), so workflows, activities and the report share them.
 */

/** A device's activity over an interval, from /proc/diskstats. MB is 2^20 bytes, as Postgres counts it. */
export interface DeviceRates {
  readIops: number;
  writeIops: number;
  readMBps: number;
  writeMBps: number;
  /** Mean time a completed read (write) took, queueing included; null when there was none. */
  readLatencyMs: number | null;
  writeLatencyMs: number | null;
  /** Share of the interval the device was busy (0-1). */
  utilization: number;
}

/** CPU seconds the host used in a window, from its cgroup (Postgres, pgbench and the agent) or /proc/stat. */
export interface CpuUsage {
  source: 'cgroup' | 'proc';
  seconds: number;
  /** seconds / window: how many cores were busy on average. */
  coresBusy: number;
  /** Cores the host has. */
  cores: number;
  /**
   * Cores busy on the whole machine over the window (/proc/stat), the clients and everything beside the host
   * included: where pgbench shares the host's cores (the local provider), what they had left. Absent in older results.
   */
  machineCoresBusy?: number;
}

/** One second of the sampled window. */
export interface SamplerSecond {
  second: number;
  /** Mean number of active workload backends over the second's samples. */
  activeSessions: number;
  /** Of those, waiting on IO:DataFileRead. */
  dataFileRead: number;
  cpuCores: number | null;
  readIops: number | null;
  writeIops: number | null;
  readMBps: number | null;
  writeMBps: number | null;
  /** A modelled volume's operations in the second (its budget's units, reads and writes), by its own clock. */
  deviceOps?: number | null;
}

/**
 * What a modelled volume's own counters said over a window (infra/volume, docs/storage-emulation.md): the server's
 * count of what it served, modelled or not, and the loop device's own count read beside it at the same moments.
 */
export interface VolumeWindow {
  /** The device model (common/model/devices.ts) and the parameters the server ran with. */
  model: string;
  params: {
    iops: number;
    bytesPerSecond: number;
    readIops: number;
    writeIops: number;
    readBytesPerSecond: number;
    writeBytesPerSecond: number;
    opUnitBytes: number;
    readLatencyUs: number;
    writeLatencyUs: number;
    flushLatencyUs: number;
    queueDepth: number;
    burstMs: number;
  };
  /** Seconds between the two readings, by the server's clock. */
  seconds: number;
  /** Whether the model was on at both readings. */
  modelOn: { start: boolean; end: boolean };
  /** Everything the server served in the window, and the part it served modelled (units: the budget's operations). */
  served: { reads: number; writes: number; flushes: number; discards: number; readBytes: number; writeBytes: number };
  modelled: { reads: number; writes: number; units: number; readBytes: number; writeBytes: number };
  /**
   * The loop device's own completed I/Os in the window (/sys/block/<dev>/stat), the bytes they moved, and their mean
   * time; null when the server had no device. The kernel counts an empty flush as a write of no bytes (and a flush).
   */
  kernel: {
    reads: number;
    writes: number;
    flushes: number;
    discards: number;
    readBytes: number;
    writeBytes: number;
    readLatencyMs: number | null;
    writeLatencyMs: number | null;
  } | null;
  /** I/Os held by the budget (and for how long in all), and held for a queue slot. */
  throttleWaits: number;
  throttleWaitSeconds: number;
  queueWaits: number;
  /** Mean I/Os in the device (served and waiting), and the mean time of one, arrival to completion, by kind (ms). */
  meanQueue: number;
  meanReadLatencyMs: number | null;
  meanWriteLatencyMs: number | null;
  meanFlushLatencyMs: number | null;
  /** I/Os in the server at each reading (the tolerance of comparing its count with the kernel's). */
  inFlight: { start: number; end: number };
  /** CPU seconds the server used in the window, and where the volume's bytes live. */
  serverCpuSeconds: number;
  backing: 'ram' | 'file';
}

/** pg_stat_database deltas over the window, and what follows from them. */
export interface DatabaseDeltas {
  xactCommit: number;
  xactRollback: number;
  blksRead: number;
  blksHit: number;
  /** ms spent reading blocks (track_io_timing = on). */
  blkReadTimeMs: number;
  blkWriteTimeMs: number;
  tupUpdated: number;
  tempBytes: number;
  deadlocks: number;
  /** blk_read_time / blks_read: the reference's "ms per block read"; null without reads. */
  msPerBlockRead: number | null;
  hitRatio: number | null;
}

/** Checkpoints in the window (pg_stat_bgwriter up to 16, pg_stat_checkpointer from 17). */
export interface CheckpointDeltas {
  timed: number;
  requested: number;
  writeTimeMs: number;
  syncTimeMs: number;
  buffersWritten: number;
}

/** pg_stat_io deltas of one backend type (PostgreSQL 16+). */
export interface IoDeltas {
  reads: number;
  readTimeMs: number;
  writes: number;
  writeTimeMs: number;
  extends: number;
  fsyncs: number;
}

/** Everything the sampler saw next to one TPS run. */
export interface SamplerReadings {
  serverVersionNum: number;
  startedAt: string;
  /** Wall seconds of the sampled window. */
  seconds: number;
  intervalMs: number;
  /** Wait-event samples taken, and how many a second that was. */
  samples: number;
  samplesPerSecond: number;
  /**
   * Active-session history: over all samples, how many active workload backends were seen per wait event
   * ("IO:DataFileRead", "LWLock:WALWrite", ...; "CPU" when active with no wait event).
   */
  waitEvents: Record<string, number>;
  /** Share of active samples per wait event type ("IO", "LWLock", "Lock", "CPU", ...); sums to 1. */
  waitClassShares: Record<string, number>;
  /** Mean number of active workload backends. */
  avgActiveSessions: number;
  database: DatabaseDeltas;
  /** pg_stat_wal deltas, column by column as the server names them. */
  wal: Record<string, number> | null;
  checkpoints: CheckpointDeltas | null;
  /** pg_stat_io deltas by backend type; null before PostgreSQL 16 (see notes). */
  io: Record<string, IoDeltas> | null;
  cpu: CpuUsage | null;
  /** CPU seconds the sampler's own backend used: its cost next to cpu.seconds (null where not visible). */
  samplerCpuSeconds: number | null;
  /** The host's data device over the window; null when the host's device is not known. */
  device: (DeviceRates & { name: string }) | null;
  series: SamplerSecond[];
  /** What could not be measured, and why. */
  notes: string[];
  /** Transactions the sampler's own connection ran in the window (read-only), to leave out of the server's counts. */
  ownTransactions?: number;
  /** Data pages Postgres wrote in the window (checkpointer, background writer, backends), 8 KiB each. */
  bufferWrites?: number;
  /** pg_current_wal_lsn() moved this many bytes in the window (every server version). */
  walBytes?: number;
  /** Size of the sampled database (pg_database_size) when the window began. */
  databaseBytes?: number;
  /** A modelled volume's own counters over the window; absent on other devices and in results before it. */
  volume?: VolumeWindow | null;
  /** The host's own I/O on its data device, from its I/O cgroup (the part a per-process throttle sees). */
  cgroupIo?: { readIops: number; writeIops: number; readMBps: number; writeMBps: number } | null;
  /** The host's memory cgroup, mean over the window: page cache (shared_buffers included) and anonymous memory. */
  memory?: { cacheMiB: number; anonMiB: number; limitMiB: number | null } | null;
  /** Client backends seen: mean idle in a transaction, distinct pids seen active or in a transaction (diagnose). */
  sessions?: { avgIdleInTransaction: number; distinctBackends: number };
}
