/**
 * The prediction model: from what a transaction was measured to ask of one system (CPU seconds, device reads and
 * writes, WAL bytes, wait time by kind) to its throughput and latency on other storage and hosts. A closed queueing
 * network (the clients are the customers) solved by exact mean value analysis, with IOPS and throughput caps as
 * service limits, a group-commit WAL flush (and a synchronous standby's), and a cache model for memory. Pure and
 * workflow-safe: the CLI, the workflows' activities and the report share it. docs/prediction-model.md lists the
 * assumptions; no constant here was fitted to the published reference's answers.
 */
import { z } from 'zod';

/** A service centre of the closed network: a single queue (IOPS cap, CPU after Seidmann) or a pure delay. */
export interface Station {
  name: string;
  kind: 'queue' | 'delay';
  /** Service demand per transaction, ms (visits × service time per visit). */
  demandMs: number;
  /** A load-dependent demand: the factor it grows by at a throughput (transactions per ms) of the network. */
  slowdownAt?: (throughput: number) => number;
}

export interface MvaSolution {
  /** Transactions per ms. */
  throughput: number;
  /** Time per transaction in the stations (not the think time), ms. */
  responseMs: number;
  /** Per station: residence time per transaction (ms) and mean number of transactions there. */
  residenceMs: number[];
  queue: number[];
  /** Per station: its demand at the solution's throughput (a load-dependent one grown by its slowdown), ms. */
  demandMs: number[];
}

/**
 * Exact mean value analysis of a closed single-class network (Reiser and Lavenberg): for n = 1..N,
 * R_k(n) = D_k (1 + Q_k(n-1)) at queues, D_k at delays; X(n) = n / (Z + sum R_k(n)); Q_k(n) = X(n) R_k(n).
 */
export function mva(stations: Station[], customers: number, thinkMs = 0): MvaSolution {
  const queue = stations.map(() => 0);
  const demandsAt = (x: number) => stations.map((s) => (s.slowdownAt ? s.demandMs * s.slowdownAt(x) : s.demandMs));
  const loadDependent = stations.some((s) => s.slowdownAt);
  let demandMs = demandsAt(0);
  let residenceMs = [...demandMs];
  let throughput = 0;
  for (let n = 1; n <= customers; n++) {
    const residencesOf = (demands: number[]) => stations.map((s, k) => (s.kind === 'queue' ? demands[k] * (1 + queue[k]) : demands[k]));
    const throughputOf = (residences: number[]) => n / (thinkMs + residences.reduce((a, b) => a + b, 0));
    if (loadDependent) {
      // A load-dependent demand must be the one at the throughput it yields: that throughput is where
      // x = n / (Z + sum R(x)), found by bisection (the right side falls as x rises, so there is one).
      let lo = 0;
      let hi = throughputOf(residencesOf(demandsAt(0)));
      for (let i = 0; i < BISECTION_STEPS; i++) {
        const mid = (lo + hi) / 2;
        if (throughputOf(residencesOf(demandsAt(mid))) > mid) lo = mid;
        else hi = mid;
      }
      demandMs = demandsAt(lo);
    }
    residenceMs = residencesOf(demandMs);
    throughput = throughputOf(residenceMs);
    residenceMs.forEach((r, k) => (queue[k] = throughput * r));
  }
  return { throughput, responseMs: residenceMs.reduce((a, b) => a + b, 0), residenceMs, queue, demandMs };
}

/** Halvings of the throughput interval of a load-dependent network (to 2^-60 of it). */
const BISECTION_STEPS = 60;

/**
 * A station of `servers` identical servers as MVA can take it (Seidmann's approximation): one queue with the
 * demand divided among the servers, plus a delay for the rest of one server's service.
 */
export function multiServer(name: string, demandMs: number, servers: number, slowdownAt?: Station['slowdownAt']): Station[] {
  return [
    { name, kind: 'queue', demandMs: demandMs / servers, slowdownAt },
    { name, kind: 'delay', demandMs: (demandMs * (servers - 1)) / servers, slowdownAt },
  ];
}

/** Where the data lives in a prediction, as the spec's storage kinds name it. */
export const TARGET_KINDS = ['ebs', 'emulated-ebs', 'instance-store', 'local-disk'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** What `predict --target` takes: storage, and optionally the host (vCPUs, memory) and the clients. */
export const PredictTargetSchema = z
  .object({
    kind: z.enum(TARGET_KINDS, { error: `must be one of ${TARGET_KINDS.join(', ')}` }),
    /** EBS volume type: gp3 (default) or io2. */
    volumeType: z.enum(['gp3', 'io2']).optional(),
    iops: z.number().positive({ error: 'must be positive (IOPS)' }).optional(),
    throughputMiBps: z.number().positive({ error: 'must be positive (MiB/s)' }).optional(),
    vcpus: z.number().int().positive({ error: 'must be a positive whole number (vCPUs)' }).optional(),
    memoryMiB: z.number().positive({ error: 'must be positive (MiB)' }).optional(),
    clients: z.number().int().positive({ error: 'must be a positive whole number (clients)' }).optional(),
    /** Device time of one read and of one WAL write + flush when nothing queues, ms (default: measured or published). */
    readLatencyMs: z.number().positive().optional(),
    flushLatencyMs: z.number().positive().optional(),
    /**
     * Round trip to a synchronous standby, ms: with synchronous_commit = on and synchronous_standby_names set, a
     * commit also waits for the standby to receive its WAL and flush it. 0: no synchronous standby. Default: as at
     * the source.
     */
    syncStandbyRttMs: z.number().nonnegative({ error: 'must be zero or positive (ms of round trip; 0: no synchronous standby)' }).optional(),
    /** A name for the target in reports. */
    label: z.string().optional(),
  })
  .strict();
export type PredictTarget = z.output<typeof PredictTargetSchema>;

/**
 * Device figures used when neither the target nor the measurement gives them, with where each comes from.
 * EBS: AWS documents gp3 as "single-digit millisecond" latency (1 ms taken, the low end) and io2 Block Express as
 * under 500 µs for 16 KiB I/O; an I/O of up to 256 KiB counts as one operation. Instance store: AWS publishes no
 * latency; 0.1 ms per read and per flush is a typical NVMe SSD figure, taken as an assumption.
 */
export const DEVICE_DEFAULTS = {
  gp3: { iops: 3000, throughputMiBps: 125, latencyMs: 1.0, source: 'AWS: gp3 baseline 3,000 IOPS and 125 MiB/s, "single-digit millisecond" latency (1 ms taken)' },
  io2: { iops: 3000, throughputMiBps: 500, latencyMs: 0.5, source: 'AWS: io2 Block Express under 500 µs for 16 KiB I/O; 500 MiB/s default throughput taken' },
  nvme: { latencyMs: 0.1, source: 'assumed: 0.1 ms per read and per flush, a typical NVMe SSD (AWS publishes no instance-store latency)' },
} as const;

/**
 * The round trip between EC2 hosts in two Availability Zones of a Region, where synchronous standbys live in the
 * production pattern. AWS: the zones are "close enough to use synchronous replication with single-digit millisecond
 * latency" (1 ms taken, the low end, as for gp3's latency).
 */
export const INTER_AZ_RTT = {
  rttMs: 1.0,
  source: 'AWS: Availability Zones are "close enough to use synchronous replication with single-digit millisecond latency" (1 ms round trip taken, the low end)',
} as const;

/** Bytes EBS counts as one I/O operation at most. */
export const EBS_MAX_IO_BYTES = 256 * 1024;

/**
 * What a transaction asks of the system, per committed transaction, as measured on a source (a run's class, a
 * diagnose capture, or the reference's published figures).
 */
export interface WorkloadDemands {
  /** Where the figures come from. */
  source: string;
  clients: number;
  measured: { tps: number; latencyMs: { mean: number; p95: number | null } };
  /**
   * Client-side time per transaction the server never sees: the client's own time between its transactions
   * (`gapMs`), and the part of the latency it measures that is spent outside the server (`inLatencyMs`: network,
   * the client's own scheduling).
   */
  client: { gapMs: number; inLatencyMs: number };
  /** CPU ms per transaction on the host (Postgres and anything else on it, such as pgbench), of `vcpus` vCPUs. */
  cpu: { msPerTx: number; vcpus: number };
  /** Server time per transaction by part (active sessions sampled x Little's law), ms; null without samples. */
  serverMs: { cpu: number; pageReads: number; walFsync: number; lock: number; other: number } | null;
  /** Reads that reached the device per transaction, and their mean size. */
  reads: { perTx: number; kib: number };
  /**
   * Background writes per transaction (checkpoints, evictions, writeback; nobody waits on them): measured, or
   * pages dirtied per transaction of which a window of `windowSeconds` writes back only what `absorbPages` of
   * buffers cannot hold (a run shorter than its checkpoint interval). `throttledPerTx`: the part a per-process I/O
   * throttle sees (cgroup v1 does not charge kernel writeback to the host), where measured.
   */
  writes:
    | { kind: 'measured'; perTx: number; kib: number; throttledPerTx: number | null }
    | { kind: 'window'; dirtiedPagesPerTx: number; absorbPages: number; windowSeconds: number; kib: number };
  /** WAL bytes per transaction, and WAL flushes (pg_stat_wal's wal_sync) per transaction where measured. */
  wal: { bytesPerTx: number; flushesPerTx?: number };
  /** Device time of a read and of a WAL flush as measured on the source (queueing in the device included). */
  device: { readLatencyMs: number | null; flushLatencyMs: number | null };
  /** The cache: data set size and what memory holds of it; null when unknown (memory changes are then not predicted). */
  cache: { dataBytes: number; cacheBytes: number; memoryMiB: number } | null;
  /** The source's own storage and host, as a target: predicting it must give back the measurement. */
  storage: PredictTarget;
  /** How each figure was obtained where it was not measured directly. */
  notes: string[];
}

/** One part of the predicted time per transaction, ms. */
export const PREDICTED_PARTS = ['cpu', 'pageReads', 'walFsync', 'lock', 'other', 'unexplained', 'client'] as const;
export type PredictedPart = (typeof PREDICTED_PARTS)[number];

export interface Prediction {
  target: PredictTarget;
  tps: number;
  latencyMs: { mean: number; p95: number | null };
  /** The predicted mean latency apportioned by part (they sum to it). */
  breakdownMs: Record<PredictedPart, number>;
  /** The busiest station and each queue's utilisation (0-1). */
  bottleneck: string;
  utilization: Record<string, number>;
  /** Device reads per transaction after the cache model, background and WAL I/O operations per transaction. */
  readsPerTx: number;
  writesPerTx: number;
  walOpsPerTx: number;
  clients: number;
  vcpus: number;
  /** Figures the prediction took from published characteristics or assumptions rather than from the measurement. */
  assumptions: string[];
}

/** Share of reads that reach the device when `cacheBytes` of a `dataBytes` data set are cached (uniform access). */
export function deviceReadShare(cacheBytes: number, dataBytes: number): number {
  if (dataBytes <= 0) return 0;
  return Math.min(1, Math.max(0, 1 - cacheBytes / dataBytes));
}

/**
 * Device reads per transaction at another memory size: the measured reads scaled by the change in the share of
 * reads that miss the cache, where the memory added or removed is page cache.
 */
export function readsAtMemory(demands: Pick<WorkloadDemands, 'reads' | 'cache'>, memoryMiB: number | undefined): { perTx: number; note: string | null } {
  const c = demands.cache;
  if (!c || memoryMiB === undefined || memoryMiB === c.memoryMiB) return { perTx: demands.reads.perTx, note: null };
  const before = deviceReadShare(c.cacheBytes, c.dataBytes);
  const cacheAfter = Math.max(0, c.cacheBytes + (memoryMiB - c.memoryMiB) * 2 ** 20);
  const after = deviceReadShare(cacheAfter, c.dataBytes);
  if (before <= 0)
    return { perTx: demands.reads.perTx, note: `the data set fitted in the source's cache: reads at ${memoryMiB} MiB taken as measured` };
  return {
    perTx: (demands.reads.perTx * after) / before,
    note: `cache ${fmtGiB(c.cacheBytes)} → ${fmtGiB(cacheAfter)} GiB of ${fmtGiB(c.dataBytes)} GiB: share of reads reaching the device ${pct(before)} → ${pct(after)}`,
  };
}

/** Background writes per transaction at a throughput, for the demands' write model. */
export function backgroundWritesPerTx(writes: WorkloadDemands['writes'], tpsPerSecond: number): number {
  if (writes.kind === 'measured') return writes.perTx;
  const dirtied = writes.dirtiedPagesPerTx * tpsPerSecond * writes.windowSeconds;
  if (dirtied <= 0) return 0;
  return (writes.dirtiedPagesPerTx * Math.max(0, dirtied - writes.absorbPages)) / dirtied;
}

/** The device as the model sees it: caps (null: none), whether reads and writes share one budget, latencies. */
interface DeviceModel {
  sharedBudget: boolean;
  readIops: number | null;
  writeIops: number | null;
  readMiBps: number | null;
  writeMiBps: number | null;
  readLatencyMs: number;
  flushLatencyMs: number;
  /** Whether background writes reach the write cap (a per-process throttle sees only the throttled part). */
  throttleSeesWriteback: boolean;
}

/**
 * A target's I/O caps (null: none), whether reads and writes share one budget, and whether the budget sees the kernel's
 * writeback: EBS counts every I/O of a volume against one budget (AWS); the cgroup v1 emulation throttles reads and
 * writes apart and charges writeback to the root cgroup; a local disk or instance store has a cap only if given.
 */
export function targetCaps(target: PredictTarget): { sharedBudget: boolean; iops: number | null; mibps: number | null; throttleSeesWriteback: boolean } {
  switch (target.kind) {
    case 'ebs': {
      const ebs = target.volumeType === 'io2' ? DEVICE_DEFAULTS.io2 : DEVICE_DEFAULTS.gp3;
      return { sharedBudget: true, iops: target.iops ?? ebs.iops, mibps: target.throughputMiBps ?? ebs.throughputMiBps, throttleSeesWriteback: true };
    }
    case 'emulated-ebs':
      return { sharedBudget: false, iops: target.iops ?? DEVICE_DEFAULTS.gp3.iops, mibps: target.throughputMiBps ?? DEVICE_DEFAULTS.gp3.throughputMiBps, throttleSeesWriteback: false };
    default:
      return { sharedBudget: true, iops: target.iops ?? null, mibps: target.throughputMiBps ?? null, throttleSeesWriteback: true };
  }
}

function deviceModel(target: PredictTarget, demands: WorkloadDemands, assumptions: string[]): DeviceModel {
  const sameKind = target.kind === demands.storage.kind;
  // The emulated volume sits on this machine's disk: its own latency is the disk's, measured on a source here.
  const measuredHere = sameKind || (target.kind === 'emulated-ebs' && demands.storage.kind === 'local-disk') || (target.kind === 'local-disk' && demands.storage.kind === 'emulated-ebs');
  const published = (latencyMs: number, source: string) => {
    assumptions.push(source);
    return latencyMs;
  };
  const measuredOr = (measured: number | null, fallback: () => number) => (measuredHere && measured !== null ? measured : fallback());
  const ebs = target.volumeType === 'io2' ? DEVICE_DEFAULTS.io2 : DEVICE_DEFAULTS.gp3;
  const nvmeLatency = () => published(DEVICE_DEFAULTS.nvme.latencyMs, DEVICE_DEFAULTS.nvme.source);
  const needMeasured = (what: string) => {
    throw new Error(`the ${what} of a ${target.kind} target is not known: give "${what === 'read latency' ? 'readLatencyMs' : 'flushLatencyMs'}" in the target, or predict from a run on ${target.kind}`);
  };
  // A source that read nothing from its device reads nothing on the target either (reads scale with the source's):
  // the latency of a read it never makes is not needed.
  const unknownReadLatency = () => (demands.reads.perTx === 0 ? 0 : needMeasured('read latency'));
  switch (target.kind) {
    case 'ebs': {
      const { iops, mibps } = targetCaps(target);
      const latency = () => published(ebs.latencyMs, ebs.source);
      const read = target.readLatencyMs ?? measuredOr(demands.device.readLatencyMs, latency);
      return {
        sharedBudget: true,
        readIops: iops,
        writeIops: iops,
        readMiBps: mibps,
        writeMiBps: mibps,
        readLatencyMs: read,
        flushLatencyMs: target.flushLatencyMs ?? measuredOr(demands.device.flushLatencyMs, () => read),
        throttleSeesWriteback: true,
      };
    }
    case 'emulated-ebs': {
      const { iops, mibps } = targetCaps(target);
      return {
        // cgroup v1 throttles reads and writes as separate budgets, and charges kernel writeback to the root cgroup.
        sharedBudget: false,
        readIops: iops,
        writeIops: iops,
        readMiBps: mibps,
        writeMiBps: mibps,
        readLatencyMs: target.readLatencyMs ?? measuredOr(demands.device.readLatencyMs, unknownReadLatency),
        flushLatencyMs: target.flushLatencyMs ?? measuredOr(demands.device.flushLatencyMs, () => needMeasured('flush latency')),
        throttleSeesWriteback: false,
      };
    }
    case 'instance-store':
      return {
        sharedBudget: true,
        readIops: target.iops ?? null,
        writeIops: target.iops ?? null,
        readMiBps: target.throughputMiBps ?? null,
        writeMiBps: target.throughputMiBps ?? null,
        readLatencyMs: target.readLatencyMs ?? measuredOr(demands.device.readLatencyMs, nvmeLatency),
        flushLatencyMs: target.flushLatencyMs ?? measuredOr(demands.device.flushLatencyMs, nvmeLatency),
        throttleSeesWriteback: true,
      };
    case 'local-disk':
      return {
        sharedBudget: true,
        readIops: target.iops ?? null,
        writeIops: target.iops ?? null,
        readMiBps: target.throughputMiBps ?? null,
        writeMiBps: target.throughputMiBps ?? null,
        readLatencyMs: target.readLatencyMs ?? measuredOr(demands.device.readLatencyMs, unknownReadLatency),
        flushLatencyMs: target.flushLatencyMs ?? measuredOr(demands.device.flushLatencyMs, () => needMeasured('flush latency')),
        throttleSeesWriteback: true,
      };
  }
}

/** Server time per transaction by part that the model does not explain at the source. */
export interface Residuals {
  cpu: number;
  /** Page-read time beyond the model's, per device read at the source: it scales with the target's reads. */
  pageReadsPerRead: number;
  walFsync: number;
}
const NO_RESIDUALS: Residuals = { cpu: 0, pageReadsPerRead: 0, walFsync: 0 };

/**
 * What the model leaves unexplained at the source: each sampled part (active without a wait event, page reads, WAL)
 * minus the model's own time for it on the source's storage and host, with these residuals in place (a delay added
 * drains the queues the model would otherwise fill, so the residuals are found as a fixed point). Carried to every
 * target as a delay: time the server spends that the stations do not model (e.g. flush-time variance that group
 * commit amplifies, page-cache allocation in a memory-limited host, kernel work outside any wait event). Page-read
 * time is carried per read, so a target that reads less (more memory) carries less of it.
 */
export function sourceResiduals(demands: WorkloadDemands, variant: ModelVariant = {}): Residuals {
  const s = demands.serverMs;
  if (!s || variant.residuals === false) return NO_RESIDUALS;
  const { base, saturated } = sourceSaturation(demands, variant);
  // At a station the source saturated, the closed model itself sets how the clients' time splits between the
  // stations: a difference there is that split, not a delay, so it is not carried.
  const free = (stations: string[]) => stations.every((name) => !saturated.includes(name));
  const carried = {
    cpu: free(['CPU']),
    pageReads: free(['device IOPS', 'device MiB/s', 'read IOPS', 'read MiB/s']),
    walFsync: free(['device IOPS', 'device MiB/s', 'write IOPS', 'write MiB/s', 'WAL flush']),
  };
  let residuals = NO_RESIDUALS;
  let model = base;
  for (let i = 0; i < RESIDUAL_ITERATIONS; i++) {
    const b = model.breakdownMs;
    const pageReads = carried.pageReads ? Math.max(0, s.pageReads - b.pageReads) : 0;
    const next: Residuals = {
      cpu: carried.cpu ? Math.max(0, s.cpu - b.cpu) : 0,
      pageReadsPerRead: demands.reads.perTx > 0 ? pageReads / demands.reads.perTx : 0,
      walFsync: carried.walFsync ? Math.max(0, s.walFsync - b.walFsync) : 0,
    };
    const change = Math.max(Math.abs(next.cpu - residuals.cpu), Math.abs(next.pageReadsPerRead - residuals.pageReadsPerRead), Math.abs(next.walFsync - residuals.walFsync));
    residuals = next;
    if (change < RESIDUAL_CONVERGED_MS) break;
    model = solve(demands, demands.storage, residuals, variant);
  }
  return residuals;
}

/**
 * The stations the source saturated: the model without residuals on the source's own storage and host, its
 * utilisations taken at the source's measured throughput (where the model alone runs faster than the source, its own
 * utilisation would overstate the source's).
 */
export function sourceSaturation(demands: WorkloadDemands, variant: ModelVariant = {}): { base: Prediction; saturated: string[] } {
  const base = solve(demands, demands.storage, NO_RESIDUALS, variant);
  const atSource = base.tps > 0 ? demands.measured.tps / base.tps : 1;
  const saturated = Object.entries(base.utilization)
    .filter(([, u]) => u * atSource >= SATURATED)
    .map(([name]) => name);
  return { base, saturated };
}

/** The residuals' fixed point: each step moves them by less than the last (a queue drains slower than a delay grows). */
const RESIDUAL_ITERATIONS = 100;
const RESIDUAL_CONVERGED_MS = 1e-6;

/** The share of the cores the CPU beside the transactions' path may take in the model (a bound keeps it solvable). */
const MAX_BESIDE_UTILIZATION = 0.99;

/**
 * A commit's wait for a flush that groups commits: half of the one in progress (when one is, at `txPerMs`
 * transactions per ms), then its own.
 */
export function groupedFlushWaitMs(flushMs: number, txPerMs: number): number {
  return flushMs * (1 + Math.min(1, txPerMs * flushMs) / 2);
}

/** A station this busy at the source is saturated. */
const SATURATED = 0.9;

/** Iterations of the fixed point between throughput and the load-dependent parts (WAL flush, locks, writeback). */
const MAX_ITERATIONS = 200;
const CONVERGED = 1e-7;

/**
 * Parts of the model that can be switched off: a test seam, so that test/unit/predict-mutations.test.ts can show the
 * fixtures' checks fail without each part, and a way to see what a part contributes. Every caller outside the tests
 * uses the whole model (both on).
 */
export interface ModelVariant {
  /** Group commit (on by default). Off: every commit flushes the WAL alone, one flush at a time (a queue). */
  groupCommit?: boolean;
  /** The source's residuals carried to the target (on by default). Off: only what the stations model. */
  residuals?: boolean;
}

/** Predicts throughput and latency of the demands on a target. Throws when the target lacks a figure it needs. */
export function predict(demands: WorkloadDemands, target: PredictTarget, variant: ModelVariant = {}): Prediction {
  return solve(demands, target, sourceResiduals(demands, variant), variant);
}

/** The model on a target with the source's residuals. */
function solve(demands: WorkloadDemands, target: PredictTarget, residuals: Residuals, variant: ModelVariant = {}): Prediction {
  const groupCommit = variant.groupCommit !== false;
  const assumptions: string[] = [];
  const clients = target.clients ?? demands.clients;
  const vcpus = target.vcpus ?? demands.cpu.vcpus;
  if (!(vcpus > 0)) throw new Error('the source\'s vCPUs are unknown (a capture of a server on another machine): give "vcpus" in the target');
  const dev = deviceModel(target, demands, assumptions);
  const cached = readsAtMemory(demands, target.memoryMiB);
  if (cached.note) assumptions.push(cached.note);
  if (target.memoryMiB !== undefined && !demands.cache) assumptions.push('the source did not measure its cache: reads taken as measured at any memory size');
  const reads = cached.perTx;
  const readKiB = demands.reads.kib;
  const writeKiB = demands.writes.kib;
  const s = demands.serverMs;
  const serverTotal = s ? s.cpu + s.pageReads + s.walFsync + s.lock + s.other : 0;
  // Lock waits wait for other transactions to finish, so they scale with the time the rest of a transaction takes.
  const lockRatio = s && serverTotal - s.lock > 0 ? s.lock / (serverTotal - s.lock) : 0;
  const otherMs = s?.other ?? 0;
  const unexplained = residuals.cpu + residuals.pageReadsPerRead * reads + residuals.walFsync;
  // CPU on a transaction's path is what its backend was sampled running (active without a wait event); the rest of
  // the host's CPU per transaction (other backends' and processes' work: the WAL writer, a client on the same host)
  // runs beside it and only takes cores from it.
  const onPathCpuMs = s && s.cpu > 0 && s.cpu < demands.cpu.msPerTx ? s.cpu : demands.cpu.msPerTx;
  const besideCpuMs = demands.cpu.msPerTx - onPathCpuMs;
  const syncStandbyRttMs = target.syncStandbyRttMs ?? demands.storage.syncStandbyRttMs ?? 0;
  if (syncStandbyRttMs > 0)
    assumptions.push(
      `a commit also waits for a synchronous standby: ${syncStandbyRttMs} ms round trip, then its WAL flush there (the standby's storage like the target's, its flushes grouped like the primary's; the faster of several standbys is not modelled)`,
    );

  let x = 0; // transactions per ms
  let lockMs = 0;
  let walQueue = 0;
  let solution: MvaSolution | null = null;
  let stations: Station[] = [];
  let walMs = 0;
  // The last flush's duration: a group holds the commits that arrived while it ran.
  let walMsPrevious = demands.device.flushLatencyMs ?? 0;
  let walOpsPerTx = 0;
  let writesPerTx = 0;
  let readShares: Record<string, number> = {};
  for (let i = 0; i < MAX_ITERATIONS; i++) {
    writesPerTx = backgroundWritesPerTx(demands.writes, x * 1000);
    const writeServiceMs = dev.writeIops ? 1000 / dev.writeIops : 0;
    // A WAL flush is one write of the group's bytes: the device's own time, the transfer at a capped bandwidth,
    // and its wait behind the writes queued at a capped device.
    const groupBytes = x > 0 && groupCommit ? demands.wal.bytesPerTx * Math.max(1, x * walMsPrevious) : demands.wal.bytesPerTx;
    const transferMs = dev.writeMiBps ? (groupBytes / 2 ** 20 / dev.writeMiBps) * 1000 : 0;
    const flushMs = dev.flushLatencyMs + transferMs + writeServiceMs * (1 + walQueue);
    // Group commit: a commit waits for the flush in progress (half of one on average, when one is) and its own.
    // Without group commit (the test seam) each commit's flush is its own, and flushes queue one behind another.
    walMs = groupCommit ? groupedFlushWaitMs(flushMs, x) : 0;
    // A synchronous standby: after its own flush a commit waits for the WAL to cross the network and be flushed on
    // the standby, where the flushes group the same way (its device serves no reads: replay of a page after its
    // full-page image needs none).
    if (syncStandbyRttMs > 0) walMs += syncStandbyRttMs + (groupCommit ? groupedFlushWaitMs(dev.flushLatencyMs + transferMs, x) : dev.flushLatencyMs + transferMs);
    walMsPrevious = flushMs;
    const flushesPerTx = x > 0 && groupCommit ? Math.min(1, 1 / (x * flushMs)) : 1;
    const bytesPerFlush = demands.wal.bytesPerTx / flushesPerTx;
    walOpsPerTx = flushesPerTx * Math.max(1, Math.ceil(bytesPerFlush / EBS_MAX_IO_BYTES));
    const throttledWrites = dev.throttleSeesWriteback
      ? writesPerTx
      : demands.writes.kind === 'measured' && demands.writes.throttledPerTx !== null
        ? demands.writes.throttledPerTx
        : 0;
    const walKiB = demands.wal.bytesPerTx / 1024;
    stations = [
      // The cores the work beside the path leaves: at the throughput where both fill them, the path's demand has
      // grown to the whole CPU per transaction, so the cores still bind at vCPUs / CPU per transaction.
      ...multiServer('CPU', onPathCpuMs, vcpus, besideCpuMs > 0 ? (tx) => 1 / (1 - Math.min(MAX_BESIDE_UTILIZATION, (tx * besideCpuMs) / vcpus)) : undefined),
      { name: 'read latency', kind: 'delay', demandMs: reads * dev.readLatencyMs },
      ...(groupCommit ? [] : [{ name: 'WAL flush', kind: 'queue' as const, demandMs: flushMs }]),
      { name: 'WAL flush', kind: 'delay', demandMs: walMs },
      { name: 'locks', kind: 'delay', demandMs: lockMs },
      { name: 'other waits', kind: 'delay', demandMs: otherMs },
      { name: 'unexplained at the source', kind: 'delay', demandMs: unexplained },
      { name: 'client time in latency', kind: 'delay', demandMs: demands.client.inLatencyMs },
    ];
    const mib = (kib: number) => kib / 1024;
    const readMiB = mib(reads * readKiB);
    const writeMiB = mib(throttledWrites * writeKiB) + mib(walKiB);
    const readOps = reads;
    const writeOps = throttledWrites + walOpsPerTx;
    // Each cap: its demand, and the share of it that reads make (the rest is background writes and WAL).
    const caps: [string, number | null, number, number][] = dev.sharedBudget
      ? [
          ['device IOPS', dev.readIops, readOps + writeOps, readOps],
          ['device MiB/s', dev.readMiBps, readMiB + writeMiB, readMiB],
        ]
      : [
          ['read IOPS', dev.readIops, readOps, readOps],
          ['write IOPS', dev.writeIops, writeOps, 0],
          ['read MiB/s', dev.readMiBps, readMiB, readMiB],
          ['write MiB/s', dev.writeMiBps, writeMiB, 0],
        ];
    readShares = {};
    for (const [name, cap, amount, ofReads] of caps) {
      if (!cap) continue;
      stations.push({ name, kind: 'queue', demandMs: (amount * 1000) / cap });
      readShares[name] = amount > 0 ? ofReads / amount : 0;
    }
    solution = mva(stations, clients, demands.client.gapMs);
    const rest = solution.responseMs - lockMs - demands.client.inLatencyMs;
    const writeStation = stations.findIndex((st) => st.name === (dev.sharedBudget ? 'device IOPS' : 'write IOPS'));
    const next = solution.throughput;
    const change = Math.abs(next - x) / Math.max(next, 1e-12);
    x = i === 0 ? next : 0.5 * x + 0.5 * next;
    lockMs = lockRatio * rest;
    walQueue = writeStation >= 0 ? solution.queue[writeStation] * ((clients - 1) / Math.max(1, clients)) : 0;
    if (i > 3 && change < CONVERGED) break;
  }
  const sol = solution!;
  const byName = (name: string) => stations.reduce((sum, st, k) => (st.name === name ? sum + sol.residenceMs[k] : sum), 0);
  const capMs = (reading: boolean) =>
    stations.reduce((sum, st, k) => {
      const share = readShares[st.name];
      return share === undefined ? sum : sum + sol.residenceMs[k] * (reading ? share : 1 - share);
    }, 0);
  const breakdownMs: Record<PredictedPart, number> = {
    cpu: byName('CPU'),
    pageReads: byName('read latency') + capMs(true),
    walFsync: byName('WAL flush'),
    lock: byName('locks'),
    // Other waits, plus the queueing that background writes and WAL writes cause at a capped device.
    other: byName('other waits') + capMs(false),
    unexplained: byName('unexplained at the source'),
    client: byName('client time in latency'),
  };
  const utilization: Record<string, number> = {};
  stations.forEach((st, k) => {
    if (st.kind !== 'queue') return;
    utilization[st.name] = Math.min(1, sol.throughput * sol.demandMs[k]);
  });
  const [busiest, busiestUtilization] = Object.entries(utilization).sort((a, b) => b[1] - a[1])[0] ?? ['none', 0];
  // Below saturation no queue bounds the throughput: the clients spend their time waiting, and the longest wait
  // (a delay such as the WAL flush, or a queue's residence) is what bounds it.
  const residenceByName = new Map<string, number>();
  stations.forEach((st, k) => residenceByName.set(st.name, (residenceByName.get(st.name) ?? 0) + sol.residenceMs[k]));
  const longestWait = [...residenceByName.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'none';
  const bottleneck = busiestUtilization >= SATURATED ? busiest : longestWait;
  const mean = sol.responseMs;
  const p95Ratio = demands.measured.latencyMs.p95 !== null && demands.measured.latencyMs.mean > 0 ? demands.measured.latencyMs.p95 / demands.measured.latencyMs.mean : null;
  return {
    target,
    tps: sol.throughput * 1000,
    latencyMs: { mean, p95: p95Ratio === null ? null : mean * p95Ratio },
    breakdownMs,
    bottleneck,
    utilization,
    readsPerTx: reads,
    writesPerTx,
    walOpsPerTx,
    clients,
    vcpus,
    assumptions: [...new Set(assumptions)],
  };
}

/** The model on the source's own storage must give back the source's measured TPS within this. */
export const SOURCE_CHECK_TOLERANCE = 0.15;

/** What the check on the source is called wherever it shows (CLI, report, docs). */
export const SOURCE_CHECK_NAME = "source figures consistent (Little's law)";

/**
 * The check on the source: the model on the source's own storage and host, against what the source measured. It is a
 * consistency check of the source's figures, not a test of the model: with no station saturated at the source, the
 * residuals make every carried part equal its sample, so the model gives back the source by Little's law whatever its
 * stations say. Only at a saturated station (where the model, not the samples, splits the time) can a wrong model fail
 * it; `saturated` names those stations, and `byConstruction` says there were none.
 */
export interface SourceCheck {
  predictedTps: number;
  measuredTps: number;
  errorPct: number;
  ok: boolean;
  /** The stations the source saturated (empty: the check holds by construction). */
  saturated: string[];
  byConstruction: boolean;
  detail: string;
}

export function sourceCheck(demands: WorkloadDemands, variant: ModelVariant = {}): SourceCheck {
  const own = predict(demands, demands.storage, variant);
  const { saturated } = sourceSaturation(demands, variant);
  const error = errorPct(own.tps, demands.measured.tps);
  const ok = Math.abs(error) <= SOURCE_CHECK_TOLERANCE * 100;
  const carried = variant.residuals !== false;
  const what = saturated.length
    ? `the source saturated ${saturated.join(', ')}, where the model's own bound sets the figures, so a wrong model can fail this`
    : carried
      ? `no station saturated at the source: the unexplained time is carried so that every part equals its sample, so this restates Little's law on the source's figures and does not test the model`
      : 'no station saturated at the source, and no residuals carried (the test seam): the stations alone against the source';
  return {
    predictedTps: own.tps,
    measuredTps: demands.measured.tps,
    errorPct: error,
    ok,
    saturated,
    byConstruction: saturated.length === 0 && carried,
    detail: `the model gives ${Math.round(own.tps).toLocaleString('en-US')} TPS on the source's own storage and host, ${error >= 0 ? '+' : ''}${error.toFixed(1)} % from the measured ${Math.round(demands.measured.tps).toLocaleString('en-US')} (tolerance ${SOURCE_CHECK_TOLERANCE * 100} %); ${what}${ok ? '' : ': the source\'s figures do not hang together in the model, so its predictions from them are suspect'}`,
  };
}

/** Signed error of a prediction against a measurement, in per cent of the measurement. */
export function errorPct(predicted: number, measured: number): number {
  return measured === 0 ? NaN : (100 * (predicted - measured)) / measured;
}

/** One line of a prediction: starts with "predicted:", then TPS and latency. */
export function predictionLine(p: Prediction): string {
  const p95 = p.latencyMs.p95 === null ? '' : `, p95 ${p.latencyMs.p95.toFixed(1)} ms`;
  const head = `predicted: ${Math.round(p.tps).toLocaleString('en-US')} TPS, mean latency ${p.latencyMs.mean.toFixed(2)} ms${p95}`;
  const saturated = p.utilization[p.bottleneck];
  if (saturated !== undefined && saturated >= SATURATED) return `${head} (bound by ${p.bottleneck}, ${pct(saturated)} busy)`;
  const [busiest, busy] = Object.entries(p.utilization).sort((a, b) => b[1] - a[1])[0] ?? ['none', 0];
  return `${head} (no queue saturated, the busiest ${busiest} at ${pct(busy)}: bound by waits, most in ${p.bottleneck})`;
}

/** A target in words: "ebs gp3 3,000 IOPS 125 MiB/s, 768 MiB, 64 clients". */
export function describeTarget(t: PredictTarget): string {
  const parts: string[] = [t.label ?? (t.kind === 'ebs' ? `ebs ${t.volumeType ?? 'gp3'}` : t.kind)];
  if (t.iops) parts.push(`${t.iops.toLocaleString('en-US')} IOPS`);
  if (t.throughputMiBps) parts.push(`${t.throughputMiBps} MiB/s`);
  if (t.vcpus) parts.push(`${t.vcpus} vCPUs`);
  if (t.memoryMiB) parts.push(`${t.memoryMiB.toLocaleString('en-US')} MiB`);
  if (t.clients) parts.push(`${t.clients} clients`);
  if (t.syncStandbyRttMs) parts.push(`synchronous standby ${t.syncStandbyRttMs} ms away`);
  return parts.join(', ');
}

const pct = (v: number) => `${(v * 100).toFixed(0)} %`;
const fmtGiB = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
