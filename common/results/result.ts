/**
 * The shape of what a run measured. `result.json` is this, versioned: later phases add fields, never rename.
 * Every figure here was measured by the code; the published reference sits beside it, labelled as such.
 */
import type { Check } from './check';
import type { LeftoverCleanup } from './leftovers';
import type { SamplerReadings } from './sampler-readings';
import type { PhaseMedians, PhaseResults } from '../phases/registry';
import type { ExperimentSpec, StorageKind } from '../input/spec';
import type { DeviceModel } from '../model/devices';

export const RESULT_SCHEMA_VERSION = 1;

export interface LatencyMs {
  mean: number;
  p50: number;
  p95: number;
  p99: number;
}

/** One pgbench run as measured: throughput, latency from the per-transaction log, and the per-second series. */
export interface TpsRun {
  tps: number;
  transactions: number;
  failedTransactions: number;
  durationSeconds: number;
  clients: number;
  threads: number;
  latencyMs: LatencyMs;
  /** Mean time a client spent between its transactions (pgbench's own work); absent in results before it existed. */
  clientGapMs?: number;
  tpsSeries: number[];
  pgbenchVersion: string;
  /** Leftovers of an earlier attempt that this one stopped first (absent: there were none). */
  cleanup?: LeftoverCleanup;
}

/** A failed attempt of a phase, kept so it is visible and never averaged in. */
export interface FailedAttempt {
  phase: string;
  attempt: number;
  error: string;
  at: string;
}

export interface LoadResult {
  rows: number;
  chunks: number;
  chunksResumed: number;
  loadSeconds: number;
  indexSeconds: number;
  vacuumSeconds: number;
  heapBytes: number;
  rowsPerSecond: number;
  /**
   * True when the host's emulated I/O cap was lifted for the load (rows, primary keys, VACUUM ANALYZE): its seconds
   * are then not storage figures. False or absent: it ran capped.
   */
  preparedWithoutCap?: boolean;
  /** count(*) and count(distinct aid) after the load, when the spec asks for the check. */
  verified?: { rows: number; distinctAids: number };
}

/** A cluster's data preparation with data sets: which set, loaded or restored, the seconds of each step and the checks. */
export interface ClusterDataSet {
  key: string;
  /** loaded: this host loaded (published: and made the set); restored: from the set another host or run published. */
  prepared: 'loaded' | 'loaded-and-published' | 'restored';
  /** Why a host that could have restored loaded instead (another builder's bound passed, a publish that failed). */
  reason?: string;
  /** The load's seconds on the publisher (rows, keys, VACUUM) as its manifest records them. */
  loadSeconds?: number;
  publishSeconds?: number;
  /**
   * Where the publish's seconds went (the publisher's own result): storage facts, archiving on, the row checksums and
   * the base backup (side by side, so they overlap), archiving off, and the relation files read in it.
   */
  publishParts?: { storageFactsSeconds: number; archiveOnSeconds: number; checksumSeconds: number; backupSeconds: number; archiveOffSeconds: number; relationFilesSeconds?: number; walgBuildWaitSeconds?: number };
  /**
   * A restore's fetch, WAL replay with promote, and restart; the checks' seconds apart, and where they went (the row
   * checksums and pg_amcheck side by side, so they overlap).
   */
  restore?: {
    fetchSeconds: number;
    recoverSeconds: number;
    restoreSeconds: number;
    checkSeconds: number;
    checkParts?: { storageFactsSeconds: number; relationFilesSeconds?: number; rowsScanned?: boolean; checksumSeconds: number; amcheckSeconds: number | null; indexKeysSeconds?: number; evictSeconds: number; walSegments?: number; walSeconds?: number; walStaged?: number; walStagedSeconds?: number; walStageError?: string };
  };
  /** Seconds this host waited for another builder's manifest. */
  waitedSeconds?: number;
  /** The comparison with the manifest (restored hosts): every check and whether it passed. */
  checks?: { name: string; ok: boolean; detail: string }[];
  /** The run that published the set (a restored host's source). */
  source?: { runId: string; hostId: string; publishedAt: string };
  /** pgbench_accounts' heap on this host (the memory checks read it where no load result is). */
  heapBytes?: number;
  preparedWithoutCap?: boolean;
}

/** Result of one cluster: one Postgres on one host of one storage class. */
export interface ClusterResult {
  hostId: string;
  className: string;
  index: number;
  status: 'ok' | 'failed' | 'cancelled';
  error?: string;
  postgresVersion?: string;
  emulated: boolean;
  emulationNote?: string;
  startedAt: string;
  finishedAt: string;
  load?: LoadResult;
  /** How the host's data was prepared when the run uses data sets (issue 31): loaded (and published) or restored. */
  dataSet?: ClusterDataSet;
  /** Convenience copies of the load's figures, as the result schema promises them at cluster level. */
  rows?: number;
  loadSeconds?: number;
  tpsRun?: TpsRun;
  tps?: number;
  latencyMs?: LatencyMs;
  tpsSeries?: number[];
  failedAttempts: FailedAttempt[];
  /** Each phase's result under its name (common/phases/). */
  phases: ClusterPhases;
  /** What the sampler saw next to the TPS run. */
  diagnostics?: SamplerReadings;
  /** Mean latency of the TPS run apportioned by wait shares (common/results/breakdown.ts). */
  breakdownMs?: Record<string, number>;
}

/**
 * A cluster's measured phases by name (common/phases/registry.ts); `durability` holds the backup step's figures, a
 * key older than the word "phase" meant what it means now (result.json never renames a key).
 */
export type ClusterPhases = PhaseResults & { durability?: unknown };

/** Medians per class of the measured phases. */
export type ClassPhases = PhaseMedians;

export interface ClassResult {
  kind: StorageKind;
  emulated: boolean;
  emulationNote?: string;
  /** iopsBudget: one budget for reads and writes together (`shared`) or each its own; absent in results before the choice. */
  limits: { iops: number | null; throughputMiBps: number | null; memoryLimitMiB: number; iopsBudget?: 'shared' | 'separate' };
  /** The device model the class ran on (a modelled volume); absent for the machine's disk, AWS, and runs before it. */
  device?: DeviceModel;
  clusters: ClusterResult[];
  medianTps: number | null;
  medianLatencyMs: number | null;
  phases: ClassPhases;
  breakdownMs?: Record<string, number>;
  /** Median of each latency figure across the class's clusters. */
  latencyMs?: LatencyMs;
  /** Median share of active samples per wait event type, and per wait event. */
  waitClassShares?: Record<string, number>;
  waitEventShares?: Record<string, number>;
  /** The resource that bound the class's throughput, in words ("CPU-bound at 2 cores"). */
  boundBy?: string;
}

export interface ExperimentResult {
  schemaVersion: typeof RESULT_SCHEMA_VERSION;
  runId: string;
  name: string;
  preset: string | null;
  status: 'completed' | 'failed' | 'cancelled';
  startedAt: string;
  finishedAt: string;
  postgresVersion: string | null;
  host: { cpus: number; memoryMiB: number; kernel: string; provider: string };
  spec: ExperimentSpec;
  classes: Record<string, ClassResult>;
  /** Candidate's speedup over the baseline (reference: nvme over gp3). */
  ratios: Record<string, number | null>;
  compare: { baseline: string; candidate: string } | null;
  checks: Check[];
  /** Sections later features add (verdict, cost, drills) live under their own keys. */
  [section: string]: unknown;
}

/** What an experiment's results say in brief, with where they are. */
export interface ResultsSummary {
  location: string;
  status: ExperimentResult['status'];
  medianTps: Record<string, number | null>;
  ratios: ExperimentResult['ratios'];
  failedChecks: string[];
}

/** What an experiment returns: its results in brief, and its run. */
export interface ExperimentSummary extends ResultsSummary {
  runId: string;
}
