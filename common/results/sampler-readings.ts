/**
 * What the sampler and the VACUUM and backlog phases measure, as stored in result.json.
 * Types only (plus nothing that needs Node), so workflows, activities and the report share them.
 */
import type { LeftoverCleanup } from './leftovers';

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
  /** The host's own I/O on its data device, from its I/O cgroup (the part a per-process throttle sees). */
  cgroupIo?: { readIops: number; writeIops: number; readMBps: number; writeMBps: number } | null;
  /** The host's memory cgroup, mean over the window: page cache (shared_buffers included) and anonymous memory. */
  memory?: { cacheMiB: number; anonMiB: number; limitMiB: number | null } | null;
  /** Client backends seen: mean idle in a transaction, distinct pids seen active or in a transaction (diagnose). */
  sessions?: { avgIdleInTransaction: number; distinctBackends: number };
}

/** What VACUUM (VERBOSE) reports for one relation (one "finished vacuuming" message). */
export interface VacuumVerboseReport {
  /** database.schema.table as VACUUM names it. */
  relation: string;
  indexScans: number;
  pages: { removed: number; remain: number; scanned: number };
  tuples: { removed: number; remain: number; deadNotYetRemovable: number };
  /** Dead tuples left on pages another backend had pinned (PostgreSQL 15+ prints the line only when there are any;
   * results recorded before the parser read it have no field). */
  missedDead?: { tuples: number; pages: number };
  /** Heap pages that held dead item identifiers, and how many identifiers the index pass removed. */
  deadItems: { pages: number; identifiersRemoved: number } | null;
  indexes: { name: string; pages: number; newlyDeleted: number; currentlyDeleted: number; reusable: number }[];
  /** Time spent in reads and writes (only with track_io_timing = on). */
  ioTimingsMs: { read: number; write: number } | null;
  avgReadMBps: number;
  avgWriteMBps: number;
  /** Shared-buffer hits, misses (PostgreSQL 17 calls them reads) and pages dirtied. */
  buffers: { hits: number; misses: number; dirtied: number };
  wal: { records: number; fullPageImages: number; bytes: number };
  cpu: { userSeconds: number; systemSeconds: number; elapsedSeconds: number };
}

/** The bloat + VACUUM phase of one cluster. Sizes in bytes; MB in requests is 2^20 bytes, as Postgres counts it. */
export interface VacuumPhaseResult {
  table: string;
  /** Leftovers of an earlier attempt that this one stopped first (absent: there were none). */
  cleanup?: LeftoverCleanup;
  requestedBytes: number;
  /** Dead tuple bytes produced, by pgstattuple_approx (after minus before). */
  deadBytes: number;
  deadTuples: number;
  /** deadBytes / requestedBytes - 1. */
  deadBytesDeviation: number;
  /**
   * Growth of the heap's used space (table_len - approx_free_space) while the bloat was made: the cross-check of
   * deadBytes, since the new row versions take new space (new pages, or free space an earlier VACUUM left).
   */
  usedBytesGrowth: number;
  relationBytesBefore: number;
  relationBytesAfter: number;
  rowsUpdated: number;
  /**
   * True when the host's emulated I/O cap was lifted for the preparation (the clearing VACUUM, making the dead tuples, pgstattuple_approx) and applied again before VACUUM (VERBOSE):
   * their seconds are then not storage figures. False or absent: preparation ran capped (a real volume, or results
   * from before it was lifted).
   */
  preparedWithoutCap?: boolean;
  bloatSeconds: number;
  /** Untimed VACUUM that cleared earlier dead tuples (the TPS run's) before the bloat was made. */
  preVacuumSeconds: number;
  /** Wall seconds of VACUUM (VERBOSE) on the table. */
  vacuumSeconds: number;
  verbose: VacuumVerboseReport;
  device: (DeviceRates & { name: string }) | null;
  cpu: CpuUsage | null;
  /** The table's autovacuum_enabled reloption before the phase, restored after (null: unset). */
  autovacuumSetting: string | null;
}

/** The replication backlog + drain phase of one cluster. */
export interface BacklogPhaseResult {
  slot: string;
  /** Leftovers of an earlier attempt that this one stopped first (absent: there were none). */
  cleanup?: LeftoverCleanup;
  plugin: string;
  publication: string;
  requestedBytes: number;
  /** The slot's confirmed_flush_lsn when the workload started, and pg_current_wal_lsn() when it stopped. */
  startLsn: string;
  targetLsn: string;
  /** WAL the consumer must decode: targetLsn - startLsn. */
  backlogBytes: number;
  /** WAL the slot held back when the workload stopped (pg_current_wal_lsn() - restart_lsn). */
  retainedBytes: number;
  /** True when the slot held at least the requested size before the consumer started. */
  reachedBeforeDrain: boolean;
  /**
   * True when the host's emulated I/O cap was lifted for the preparation (the checkpoint, writing the backlog) and applied again before the drain:
   * their seconds are then not storage figures. False or absent: preparation ran capped (a real volume, or results
   * from before it was lifted).
   */
  preparedWithoutCap?: boolean;
  fillSeconds: number;
  drainSeconds: number;
  /** backlogBytes / drainSeconds, in MB (2^20 bytes) a second. */
  drainMBps: number;
  confirmedFlushLsn: string;
  consumer: string;
  device: (DeviceRates & { name: string }) | null;
  cpu: CpuUsage | null;
}
