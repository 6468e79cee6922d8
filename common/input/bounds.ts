/**
 * How long each step of a run may take, derived from the sizes it works on, so every wait has a bound that fits the
 * data (a 3.3-billion-row load is hours, a ci load seconds) and a dry run can print them. Pure and workflow-safe.
 * A bound is a generous multiple of an estimate from the storage's throughput: it exists to end a hung step with a
 * reason, never to cut a healthy one short.
 */
import type { FailoverDrillSpec, PartitionDrillSpec, PowerCutDrillSpec, ReplicaDrillSpec, RestoreDrillSpec } from './drill-spec';
import { hostDeadAfterSeconds, storageMiBps, type ExperimentSpec, type StorageClassSpec } from './spec';
import { accountRows, dataSetBytes } from './data-size';
import { providerOf, type ProviderName } from '../providers/registry';

export interface HostTimeouts {
  /** How long a new host's agent may take to come up (cloud boots are slow). */
  agentStartSeconds: number;
  /**
   * How long a host may stay silent: no agent picks up its next task (schedule-to-start), or a running task stops
   * heartbeating. Past it the host is dead and the workflow says so, instead of waiting for it forever.
   */
  deadAfterSeconds: number;
  /** Upper bound of the data load (rows, primary keys, VACUUM ANALYZE), from the data size. */
  loadHours: number;
  /** Upper bound of one measured run or step (pgbench duration plus overrun). */
  measureSeconds: number;
  /** Upper bound of one bulk step (a base backup, a restore's fetch), from the bytes it moves. */
  bulkSeconds: number;
}

/** Bytes pgbench_accounts takes per row on disk at fillfactor 100 (482 GiB for 3.3 billion rows). */
export const HEAP_BYTES_PER_ROW = 146;
/** Rows one loader connection inserts a second when the storage keeps up (CPU-bound; measured ~400k here). */
const ROWS_PER_WRITER_SECOND = 50_000;
/** The bound is this many times the estimate, and never under the minimum. */
const SAFETY = 3;
const MIN_LOAD_HOURS = 1;

/**
 * Estimated seconds of a load: the rows (heap plus about as much WAL written, at the storage's throughput or the
 * writers' CPU, whichever is slower), then the primary key (reads the heap, writes ~20 % of it) and VACUUM ANALYZE
 * (reads the heap and writes it once more for hint bits): about 3.2 heaps after the rows.
 */
export function loadEstimateSeconds(rows: number, writers: number, cls: Pick<StorageClassSpec, 'kind' | 'throughputMiBps'>): number {
  const bytesPerSecond = storageMiBps(cls) * 2 ** 20;
  const heap = rows * HEAP_BYTES_PER_ROW;
  const rowsSeconds = Math.max(rows / (writers * ROWS_PER_WRITER_SECOND), (2 * heap) / bytesPerSecond);
  return rowsSeconds + (3.2 * heap) / bytesPerSecond;
}

/** The load's bound in whole hours: SAFETY times the estimate on the slowest of the classes, at least an hour. */
export function loadBoundHours(rows: number, writers: number, classes: Pick<StorageClassSpec, 'kind' | 'throughputMiBps'>[]): number {
  const slowest = Math.max(...classes.map((c) => loadEstimateSeconds(rows, writers, c)));
  return Math.max(MIN_LOAD_HOURS, Math.ceil((SAFETY * slowest) / 3600));
}

/** Seconds to copy `mb` MB of data on the storage (a base backup, a restore's fetch), bounded like the load. */
export function bulkBoundSeconds(mb: number, classes: Pick<StorageClassSpec, 'kind' | 'throughputMiBps'>[]): number {
  const slowest = Math.min(...classes.map(storageMiBps));
  // Read from one place and written to another, checked, and written again on replay: about four passes.
  return 1800 + Math.ceil((SAFETY * 4 * mb) / slowest);
}

/** The agent's start bound, the provider's (a cloud boot installs packages, a local host starts a process). */
export function agentStartSeconds(provider: ProviderName): number {
  return providerOf(provider).agentStartSeconds;
}

/** "3 h", "45 min", "90 s": a bound as people read it. */
export function formatBound(seconds: number): string {
  if (seconds >= 2 * 3600) return `${Math.round(seconds / 3600)} h`;
  if (seconds >= 120) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds)} s`;
}

/** Bounds of an experiment cluster's host activities: the load's from the data, a run's from its duration. */
export function clusterBounds(spec: ExperimentSpec): HostTimeouts {
  const classes = Object.values(spec.storageClasses);
  return {
    agentStartSeconds: agentStartSeconds(spec.provider),
    deadAfterSeconds: hostDeadAfterSeconds(spec),
    loadHours: loadBoundHours(accountRows(spec.data.scale), spec.data.loadWriters, classes),
    measureSeconds: Math.max(spec.workload.durationSeconds, spec.workload.warmupSeconds) + 600,
    // A base backup copies the data set (each phase's own bound comes from its module, common/phases/).
    bulkSeconds: bulkBoundSeconds(dataSetBytes(spec.data.scale) / 2 ** 20, classes),
  };
}

/**
 * Bounds of a drill's host activities: `measureSeconds` bounds its longest single step; the load (restore drill) is
 * bounded from its data size and writers like a cluster's, and a base backup or a restore copies the data set once.
 */
function drillBounds(spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec, measureSeconds: number): HostTimeouts {
  const data = 'data' in spec ? spec.data : { scale: 1, loadWriters: 1 };
  const dataMB = dataSetBytes(data.scale) / 2 ** 20;
  return {
    agentStartSeconds: agentStartSeconds(spec.provider),
    deadAfterSeconds: hostDeadAfterSeconds(spec),
    loadHours: loadBoundHours(accountRows(data.scale), data.loadWriters, [spec.storageClass]),
    measureSeconds: Math.ceil(measureSeconds) + 600,
    bulkSeconds: Math.max(Math.ceil(measureSeconds) + 600, bulkBoundSeconds(dataMB, [spec.storageClass])),
  };
}

/** The restore drill's bounds: its longest step is the writes around the target, or the restore itself. */
export function restoreDrillBounds(spec: RestoreDrillSpec): HostTimeouts {
  return drillBounds(spec, Math.max(spec.workload.beforeSeconds + spec.workload.afterSeconds, spec.restoreTimeoutSeconds));
}

/** The failover drill's bounds: its longest step is a round's writer (writes, the outage, writes after). */
export function failoverDrillBounds(spec: FailoverDrillSpec): HostTimeouts {
  const w = spec.writer;
  return drillBounds(spec, w.killAfterSeconds + w.maxOutageSeconds + w.afterFailoverSeconds + 30);
}

/** The partition drill's bounds: its longest step is a round's writer (writes, the cut and the outage, writes after). */
export function partitionDrillBounds(spec: PartitionDrillSpec): HostTimeouts {
  const w = spec.writer;
  return drillBounds(spec, w.cutAfterSeconds + spec.partition.detectionSeconds + w.maxOutageSeconds + w.afterFailoverSeconds + 30);
}

/**
 * The power-cut drill's bounds: its longest step is a round's writer (writes up to the latest cut, then the outage it
 * waits out) or the crash recovery after the cut.
 */
export function powerCutDrillBounds(spec: PowerCutDrillSpec): HostTimeouts {
  const { powerCut, writer } = spec;
  return drillBounds(spec, Math.max(powerCut.latestSeconds + writer.maxOutageSeconds + 30, powerCut.recoveryTimeoutSeconds + 30));
}

/** Either replica drill's bounds. */
export function replicaDrillBounds(spec: ReplicaDrillSpec): HostTimeouts {
  return 'partition' in spec ? partitionDrillBounds(spec) : failoverDrillBounds(spec);
}
