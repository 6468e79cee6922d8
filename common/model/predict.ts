/**
 * The prediction model: from what a transaction was measured to ask of one system (CPU seconds, device reads and
 * writes, WAL bytes, wait time by kind) to its throughput and latency on other storage and hosts. A closed queueing
 * network (the clients are the customers) solved by exact mean value analysis, with IOPS and throughput caps as
 * service limits, a group-commit WAL flush (and a synchronous standby's), and a cache model for memory. Pure and
 * workflow-safe: the CLI, the workflows' activities and the report share it. docs/prediction-model.md lists the
 * assumptions; no constant here was fitted to the published reference's answers.
 */
import { z } from 'zod';
import { deviceModelOf, serverParams, type DeviceModel as DeviceModelSpec } from './devices';

/**
 * Math's functions and infinity, bound once for the hot loops below: the model runs inside sandboxes (Temporal's
 * workflow isolate, jest's vm context) where every lookup of a global goes through the context's interceptor, which
 * made the solver 2-3 times slower there than in plain node.
 */
const { abs, min, max } = Math;
const INFINITY = 1 / 0;

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
  // Flat loops over typed arrays, no closures per population: the validation matrix and the fixtures' mutation tests
  // solve this hundreds of thousands of times. The sums keep the order of a left-to-right reduce from 0, so a result
  // is the same to the last bit as a map-and-reduce form of the recursion gives.
  const m = stations.length;
  const isQueue = stations.map((s) => s.kind === 'queue');
  const base = stations.map((s) => s.demandMs);
  const slowdown = stations.map((s) => s.slowdownAt);
  const loadDependent = slowdown.some((f) => f !== undefined);
  const queue = new Float64Array(m);
  const demandMs = new Float64Array(m);
  const residenceMs = new Float64Array(m);
  const demandsAt = (x: number) => {
    for (let k = 0; k < m; k++) {
      const f = slowdown[k];
      demandMs[k] = f ? base[k] * f(x) : base[k];
    }
  };
  /** The sum of the residences at the current queues for the demands at x (x < 0: the demands as they stand). */
  const residenceSumAt = (x: number) => {
    let sum = 0;
    for (let k = 0; k < m; k++) {
      const f = slowdown[k];
      const d = f ? base[k] * f(x) : base[k];
      sum += isQueue[k] ? d * (1 + queue[k]) : d;
    }
    return sum;
  };
  demandsAt(0);
  residenceMs.set(demandMs);
  let throughput = 0;
  for (let n = 1; n <= customers; n++) {
    if (loadDependent) {
      // A load-dependent demand must be the one at the throughput it yields: x = g(x) = n / (Z + sum R(x)). A demand
      // that grows with the load (cores taken beside the path) makes g fall as x rises, one that shrinks (a flush
      // shared by a larger group) makes it rise, so there may be more than one such x: the one taken is the least
      // above the last population's throughput, where a network whose load grows from there settles. Iterating g
      // from below climbs to it while g rises; once a step overshoots, the root is bracketed and bisected.
      let x = throughput;
      let lo = throughput;
      let hi = INFINITY;
      for (let i = 0; i < FIXED_POINT_STEPS; i++) {
        const gx = n / (thinkMs + residenceSumAt(x));
        if (abs(gx - x) <= FIXED_POINT_TOLERANCE * max(gx, 1e-12)) break;
        if (gx > x) lo = x;
        else hi = x;
        x = hi === INFINITY ? gx : gx > lo && gx < hi ? (gx + (lo + hi) / 2) / 2 : (lo + hi) / 2;
      }
      demandsAt(x);
    }
    let sum = 0;
    for (let k = 0; k < m; k++) {
      residenceMs[k] = isQueue[k] ? demandMs[k] * (1 + queue[k]) : demandMs[k];
      sum += residenceMs[k];
    }
    throughput = n / (thinkMs + sum);
    for (let k = 0; k < m; k++) queue[k] = throughput * residenceMs[k];
  }
  const residences = Array.from(residenceMs);
  return { throughput, responseMs: residences.reduce((a, b) => a + b, 0), residenceMs: residences, queue: Array.from(queue), demandMs: Array.from(demandMs) };
}

/** Steps of a load-dependent network's fixed point, and the relative change at which it has converged. */
const FIXED_POINT_STEPS = 200;
const FIXED_POINT_TOLERANCE = 1e-10;

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
export const TARGET_KINDS = ['ebs', 'emulated-ebs', 'nvme', 'instance-store', 'local-disk'] as const;
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
    /**
     * emulated-ebs on the kernel's cgroup throttles, as runs recorded before the modelled volume had them: reads and
     * writes sharing one budget of `iops` re-split by a controller (`shared`) or `iops` each (`separate`). Absent: the
     * lab's modelled volume, whose budgets and latencies are its device model's (common/model/devices.ts).
     */
    iopsBudget: z.enum(['shared', 'separate'], { error: 'must be "shared" or "separate"' }).optional(),
    /**
     * The data set's size at the target (heap and indexes), GiB; default: the source's. A larger data set under the
     * target's memory misses the cache more (uniform access: readsAtMemory): a run here predicting the reference's
     * 482 GiB.
     */
    dataGiB: z.number().positive({ error: 'must be positive (GiB)' }).optional(),
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
  gp3: {
    iops: 3000,
    throughputMiBps: 125,
    latencyMs: 1.0,
    source: 'AWS: gp3 baseline 3,000 IOPS and 125 MiB/s, "single-digit millisecond" latency (1 ms taken)',
    latencyRangeMs: [0.5, 2] as const,
    rangeSource: 'assumed around the 1 ms taken: half to twice it',
  },
  io2: {
    iops: 3000,
    throughputMiBps: 500,
    latencyMs: 0.5,
    source: 'AWS: io2 Block Express under 500 µs for 16 KiB I/O; 500 MiB/s default throughput taken',
    latencyRangeMs: [0.25, 0.5] as const,
    rangeSource: 'AWS: "under 500 µs"; half of it taken as the low end',
  },
  nvme: {
    latencyMs: 0.1,
    source: 'assumed: 0.1 ms per read and per flush, a typical NVMe SSD (AWS publishes no instance-store latency)',
    latencyRangeMs: [0.05, 0.2] as const,
    rangeSource: 'assumed around the 0.1 ms taken: half to twice it',
  },
} as const;

/**
 * The round trip between EC2 hosts in two Availability Zones of a Region, where synchronous standbys live in the
 * production pattern. AWS: the zones are "close enough to use synchronous replication with single-digit millisecond
 * latency" (1 ms taken, the low end, as for gp3's latency).
 */
export const INTER_AZ_RTT = {
  rttMs: 1.0,
  rangeMs: [0.5, 2] as const,
  rangeSource: 'assumed around the 1 ms taken: half to twice it; AWS publishes "single-digit millisecond"',
  source: 'AWS: Availability Zones are "close enough to use synchronous replication with single-digit millisecond latency" (1 ms round trip taken, the low end)',
} as const;

/**
 * The share of an emulated shared budget its controller (lib/io-budget.ts) delivers to a workload the budget holds:
 * it re-splits the budget every 100 ms from what each direction used, so a held direction reaches its share only
 * after the fact. test/integration/io-budget.test.ts measured a reader alone at 880 of 1,000 IOPS.
 */
export const SHARED_BUDGET_DELIVERED = 0.88;

/**
 * The device model of a target on the lab's modelled volume (an `nvme` target, or `emulated-ebs` without the
 * cgroup throttles' iopsBudget), or null: its budgets and latencies are the model's own (common/model/devices.ts).
 */
export function modelledDevice(target: PredictTarget): DeviceModelSpec | null {
  if (target.kind === 'nvme') return deviceModelOf({ kind: 'nvme' });
  if (target.kind === 'emulated-ebs' && target.iopsBudget === undefined)
    return deviceModelOf({ kind: 'emulated-ebs', iops: target.iops, throughputMiBps: target.throughputMiBps, volumeType: target.volumeType });
  return null;
}

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
  /**
   * `machineMsPerTx`: CPU ms per transaction of the whole machine where the clients share the host's cores (the lab's
   * pgbench does): the cores then bind at vCPUs / it, and what the clients wait for a core is part of their time.
   */
  /**
   * `deviceMsPerTx`: of the machine's, what the lab's modelled volume's server used per transaction (the emulation's
   * cost, not the workload's).
   */
  /**
   * `leftOutMsPerTx`: of the machine's CPU the source measured, what the demands leave out because the target does
   * not have it (the modelled volume's server, at the reference's scale): `machineMsPerTx` is without it, and the
   * source's own wait for a core, against which the target's is scaled, is taken with it.
   */
  cpu: { msPerTx: number; vcpus: number; machineMsPerTx?: number; deviceMsPerTx?: number; leftOutMsPerTx?: number };
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
  /**
   * WAL bytes per transaction, WAL flushes (pg_stat_wal's wal_sync) per transaction, and the time a flush's write()
   * calls took before it (wal_write_time / wal_sync: the kernel copying the group's WAL, under the same lock), where
   * measured.
   */
  wal: { bytesPerTx: number; flushesPerTx?: number; writeMsPerFlush?: number };
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
  /** The TPS range from what the model does not know (predictWithInterval); absent on the model's inner solutions. */
  interval?: PredictionInterval;
  /** The WAL wait per transaction the stations model, before the source's ratio (Residuals.walFactor), ms. */
  modelWalMs: number;
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
export function readsAtMemory(
  demands: Pick<WorkloadDemands, 'reads' | 'cache'>,
  memoryMiB: number | undefined,
  dataBytes?: number,
): { perTx: number; note: string | null } {
  const c = demands.cache;
  const sameData = dataBytes === undefined || !c || dataBytes === c.dataBytes;
  if (!c || ((memoryMiB === undefined || memoryMiB === c.memoryMiB) && sameData)) return { perTx: demands.reads.perTx, note: null };
  const before = deviceReadShare(c.cacheBytes, c.dataBytes);
  const cacheAfter = Math.max(0, c.cacheBytes + ((memoryMiB ?? c.memoryMiB) - c.memoryMiB) * 2 ** 20);
  const dataAfter = dataBytes ?? c.dataBytes;
  const after = deviceReadShare(cacheAfter, dataAfter);
  if (before <= 0)
    return { perTx: demands.reads.perTx, note: `the data set fitted in the source's cache: reads at ${memoryMiB ?? c.memoryMiB} MiB taken as measured` };
  const data = sameData ? `${fmtGiB(c.dataBytes)} GiB` : `${fmtGiB(c.dataBytes)} → ${fmtGiB(dataAfter)} GiB`;
  return {
    perTx: (demands.reads.perTx * after) / before,
    note: `cache ${fmtGiB(c.cacheBytes)} → ${fmtGiB(cacheAfter)} GiB of ${data}: share of reads reaching the device ${pct(before)} → ${pct(after)}`,
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
  const modelled = modelledDevice(target);
  // The modelled volume counts every I/O that reaches it, the kernel's writeback included, against its budgets.
  if (modelled?.iops != null) return { sharedBudget: true, iops: modelled.iops, mibps: modelled.throughputMiBps, throttleSeesWriteback: true };
  if (modelled) return { sharedBudget: false, iops: null, mibps: null, throttleSeesWriteback: true };
  switch (target.kind) {
    case 'ebs': {
      const ebs = target.volumeType === 'io2' ? DEVICE_DEFAULTS.io2 : DEVICE_DEFAULTS.gp3;
      return { sharedBudget: true, iops: target.iops ?? ebs.iops, mibps: target.throughputMiBps ?? ebs.throughputMiBps, throttleSeesWriteback: true };
    }
    case 'emulated-ebs': {
      // The throttle counts what the host's cgroup issues (the writeback charged elsewhere escapes it), with one
      // budget re-split between reads and writes (lib/io-budget.ts) or the kernel's two.
      const shared = target.iopsBudget !== 'separate';
      const iops = target.iops ?? DEVICE_DEFAULTS.gp3.iops;
      return {
        sharedBudget: shared,
        iops: shared ? iops * SHARED_BUDGET_DELIVERED : iops,
        mibps: target.throughputMiBps ?? DEVICE_DEFAULTS.gp3.throughputMiBps,
        throttleSeesWriteback: false,
      };
    }
    default:
      return { sharedBudget: true, iops: target.iops ?? null, mibps: target.throughputMiBps ?? null, throttleSeesWriteback: true };
  }
}

function deviceModel(target: PredictTarget, demands: WorkloadDemands, assumptions: string[]): DeviceModel {
  // The emulated volume sits on this machine's disk: its own latency is the disk's, measured on a source here.
  const measuredHere = isMeasuredHere(target, demands);
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
  const modelled = modelledDevice(target);
  if (modelled) {
    // The modelled volume's own figures: its budgets, and its latency when nothing queues (a WAL flush: a write, then
    // a flush); a source's measured times on it hold its queueing too.
    assumptions.push(`device: the ${modelled.name} model's budgets and latencies (${modelled.standsFor})`);
    const shared = modelled.iops !== null;
    return {
      sharedBudget: shared,
      readIops: shared ? modelled.iops : modelled.readIops,
      writeIops: shared ? modelled.iops : modelled.writeIops,
      readMiBps: shared ? modelled.throughputMiBps : modelled.readMiBps,
      writeMiBps: shared ? modelled.throughputMiBps : modelled.writeMiBps,
      readLatencyMs: target.readLatencyMs ?? modelled.readLatencyMs,
      flushLatencyMs: target.flushLatencyMs ?? modelled.writeLatencyMs + modelled.flushLatencyMs,
      throttleSeesWriteback: true,
    };
  }
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
      const { iops, mibps, sharedBudget } = targetCaps(target);
      return {
        sharedBudget,
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
    case 'nvme': // modelled above
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
  /**
   * WAL wait beyond the model's: once its flush is done a commit waits for a core to wake on, and its sample still
   * shows LWLock:WALWrite or IO:WALSync until it runs; carried as a wait for a core (it follows the target's load).
   */
  walFsync: number;
  /**
   * Whether the source's other waits are carried: not where the source saturated a device cap, where they are waits
   * at its throttle (writes held back), which the model's own queue at the cap sets on every target.
   */
  carryOther?: boolean;
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
  // The same demands are predicted onto many targets: their residuals are found once per model variant.
  const key = JSON.stringify(variant);
  const cached = residualsCache.get(demands)?.get(key);
  if (cached) return cached;
  const found = findResiduals(demands, variant);
  if (!residualsCache.has(demands)) residualsCache.set(demands, new Map());
  residualsCache.get(demands)!.set(key, found);
  return found;
}

/** Residuals found, by demands object (demands are not changed once built) and variant. */
const residualsCache = new WeakMap<WorkloadDemands, Map<string, Residuals>>();

function findResiduals(demands: WorkloadDemands, variant: ModelVariant): Residuals {
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
      walFsync: carried.walFsync ? Math.max(0, s.walFsync - model.modelWalMs) : 0,
      carryOther: carried.pageReads,
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

/** A WAL flush's time: a fixed part, and a part per byte flushed (ms). */
export interface WalFlushModel {
  fixedMs: number;
  perByteMs: number;
  detail: string;
}

/**
 * How long a WAL flush takes on the target. On the source's own disk (the emulation sits on it), in proportion to its
 * bytes: the source's flush time (wal_sync_time plus wal_write_time, per wal_sync) ÷ the bytes it flushed. On this
 * machine's disk a flush of 18.7, 30.1 and 51.2 KiB took 0.35, 0.53 and 0.93 ms (predict-matrix-1 at 8, 16 and 32
 * clients): 0.06 ms plus 0.0157 ms per KiB, so the part taken as fixed (none) is 6-17 % of a flush; the interval
 * also takes a fixed part of one device read. Elsewhere, the device's flush latency (given, or published) plus the
 * source's write() time, fixed, and the transfer at a capped bandwidth per byte.
 */
export function walFlushModel(
  demands: WorkloadDemands,
  target: PredictTarget,
  deviceFlushMs: number,
  fixedPart: 'none' | 'device read' = 'none',
  variant: Pick<ModelVariant, 'walWriteOnItsDevice' | 'walWriteAtHeldBudget'> = {},
): WalFlushModel {
  const writeMs =
    (variant.walWriteOnItsDevice !== false && otherModelledDevice(demands, target)) || (variant.walWriteAtHeldBudget !== false && writeHeldAtSourceBudget(demands))
      ? 0
      : (demands.wal.writeMsPerFlush ?? 0);
  const flushes = demands.wal.flushesPerTx;
  const measured = demands.device.flushLatencyMs;
  if (target.flushLatencyMs === undefined && !modelledDevice(target) && isMeasuredHere(target, demands) && flushes && measured !== null && demands.wal.bytesPerTx > 0) {
    const bytesPerFlush = demands.wal.bytesPerTx / flushes;
    // The sync, and the write() calls (a copy of the bytes), in proportion to the bytes; at the interval's other end
    // a fixed part of one device I/O's round trip, as the source's reads took it.
    const fixedMs = fixedPart === 'device read' ? Math.min(measured, demands.device.readLatencyMs ?? 0) : 0;
    const perFlushMs = measured - fixedMs + writeMs;
    return {
      fixedMs,
      perByteMs: perFlushMs / bytesPerFlush,
      detail: `a WAL flush ${fixedMs.toFixed(3)} ms plus its bytes at the source's rate (${perFlushMs.toFixed(3)} ms for ${(bytesPerFlush / 1024).toFixed(1)} KiB)`,
    };
  }
  return { fixedMs: deviceFlushMs + writeMs, perByteMs: 0, detail: `a WAL flush ${(deviceFlushMs + writeMs).toFixed(3)} ms whatever its bytes` };
}

/**
 * Whether source and target are both on modelled devices, and not the same one (model and budgets). A source's WAL
 * write() time on a modelled volume is its device's, not a copy's: the kernel holds a write to a page under writeback
 * until the device has written it (the volume's loop device asks for stable pages), and the WAL's last page is
 * rewritten by every flush. On local-quick's gp3 it took 7.06 ms a flush, on its NVMe 0.11 ms
 * (exp-local-quick-20261204-203336). On another modelled device the target's own queue and latencies stand for it.
 */
export function otherModelledDevice(demands: WorkloadDemands, target: PredictTarget): boolean {
  const source = modelledDevice(demands.storage);
  const at = modelledDevice(target);
  return source !== null && at !== null && JSON.stringify(serverParams(source)) !== JSON.stringify(serverParams(at));
}

/**
 * Whether the source's WAL write() time was a wait at its modelled volume's budget, which the source held at least
 * SATURATED busy (the volume's own counts of reads, writes and flushes against its IOPS, or their bytes against its
 * MiB/s). A write() to the WAL's last page waits while that page is under writeback (the volume asks for stable pages),
 * and at a held budget that writeback waits its turn behind every I/O queued there: at 64 clients on local-quick's gp3
 * 9.4-9.6 ms a flush, at 16 and 8 clients on the same held budget 0.11 and 0.05 ms (the three demos of 2026-12-05,
 * lq-e16, lq-c8). The model's own wait behind the writes queued at the budget (walFlushTime's queuedMs) stands for it
 * on every target; carried as well, it counted that queue twice, and carried the source's queue to fewer clients.
 */
export function writeHeldAtSourceBudget(demands: WorkloadDemands): boolean {
  const model = modelledDevice(demands.storage);
  if (!model || model.iops === null || demands.writes.kind !== 'measured') return false;
  const perSecond = demands.measured.tps;
  const walOps = demands.wal.flushesPerTx ?? 0;
  const opsPerSecond = (demands.reads.perTx + demands.writes.perTx + walOps) * perSecond;
  const mibPerSecond = ((demands.reads.perTx * demands.reads.kib + demands.writes.perTx * demands.writes.kib) / 1024 + demands.wal.bytesPerTx / 2 ** 20) * perSecond;
  return opsPerSecond >= SATURATED * model.iops || (model.throughputMiBps !== null && mibPerSecond >= SATURATED * model.throughputMiBps);
}

/**
 * A source on an emulated volume measured its flushes and reads through the throttle (its waits behind held I/O are
 * in them): they say nothing of the bare disk's, nor of another budget's, so only a target with the same budget (more
 * memory, other clients) can take them; any other needs its own flush latency.
 */
function throttledSourceProblem(target: PredictTarget, demands: WorkloadDemands): string | null {
  const src = demands.storage;
  // A modelled target takes its device's figures from its model, not from the source's measurement.
  if (src.kind !== 'emulated-ebs' || target.flushLatencyMs !== undefined || modelledDevice(target)) return null;
  const sameBudget = target.kind === 'emulated-ebs' && target.iops === src.iops && target.throughputMiBps === src.throughputMiBps && (target.iopsBudget ?? 'shared') === (src.iopsBudget ?? 'shared');
  if (sameBudget) return null;
  return 'the source ran on an emulated volume, whose throttle is in every flush and read time it measured: give "flushLatencyMs" (and "readLatencyMs") of the target\'s device, or predict from a run on the local disk';
}

/** Whether the target's device is the one the source measured (the same kind, or the emulation on the source's disk). */
export function isMeasuredHere(target: PredictTarget, demands: WorkloadDemands): boolean {
  return (
    target.kind === demands.storage.kind ||
    (target.kind === 'emulated-ebs' && demands.storage.kind === 'local-disk') ||
    (target.kind === 'local-disk' && demands.storage.kind === 'emulated-ebs')
  );
}

/**
 * A flush's time for a group of commits, and the group at a throughput: a flush covers its own commit and those that
 * arrived while the flush before it ran, B = 1 + x t(B), with t(B) = fixed + perByte x bytes x B, so
 * B = (1 + x fixed) / (1 - x perByte bytes): it grows without bound (to the clients) as the throughput nears what the
 * per-byte part allows, where the flush is a saturated single server.
 */
export function walFlushTime(model: WalFlushModel, queuedMs: number, writeMiBps: number | null, bytesPerTx: number, clients: number, groupCommit: boolean) {
  const perByteMs = model.perByteMs + (writeMiBps ? 1000 / (writeMiBps * 2 ** 20) : 0);
  const fixedMs = model.fixedMs + queuedMs;
  return {
    fixedMs,
    /** The per-byte part of one commit's WAL: its work at the flush's single server. */
    perTxMs: perByteMs * bytesPerTx,
    timeMs: (group: number) => fixedMs + perByteMs * bytesPerTx * group,
    groupAt: (txPerMs: number) => {
      if (!groupCommit) return 1;
      const x = Math.max(0, txPerMs);
      const room = 1 - x * perByteMs * bytesPerTx;
      return room <= 0 ? Math.max(1, clients) : Math.min(Math.max(1, clients), Math.max(1, (1 + x * fixedMs) / room));
    },
  };
}

/**
 * The mean wait for one of `servers` cores at utilisation `u`, in units of one burst of CPU work: Erlang's C formula
 * (M/M/c), C(c, a) / (c - a) with a = c u. Only its ratio between two loads is used (how waits for a core grow).
 */
export function coreWait(u: number, servers: number): number {
  const c = Math.max(1, Math.round(servers));
  const a = c * Math.min(MAX_CORE_UTILIZATION, Math.max(0, u));
  let term = 1;
  let sum = 1;
  for (let k = 1; k < c; k++) {
    term *= a / k;
    sum += term;
  }
  const last = ((term * a) / c) * (c / (c - a));
  return last / (sum + last) / (c - a);
}

/** The cores' utilisation coreWait takes at most (a bound keeps the wait finite). */
const MAX_CORE_UTILIZATION = 0.98;

/** A station this busy at the source is saturated. */
const SATURATED = 0.9;

/** The least damping of that fixed point's steps. */
const MIN_DAMPING = 1 / 64;

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
  /**
   * Two things the measurement does not settle, whose ends the interval takes (predictWithInterval): how a flush's
   * time on the source's disk splits into a fixed part and a part per byte (`none` fixed, the default, or one device
   * I/O's round trip, the source's read latency), and whether the residuals are waits for a core (the default: they
   * follow the target's load) or constant.
   */
  flushFixedPart?: 'none' | 'device read';
  residualsAsCoreWaits?: boolean;
  /**
   * Terms added for issue 29, each on by default; off puts back what the model did before it, so the mutation tests
   * (test/unit/predict-mutations.test.ts) can show a check catches its removal.
   * - `clientTransactions`: demands per client transaction (windowTransactions). Off: per server commit.
   * - `walWriteOnItsDevice`: a source's WAL write() time stays with its own modelled device (otherModelledDevice).
   *   Off: carried to any target.
   * - `referenceWrites`: at the reference's scale, the background writes of its write window. Off: the source's.
   * - `volumeCpuLeftOut`: at the reference's scale, the modelled volume's server's CPU is left out of the machine's.
   *   Off: kept, as the target's work.
   * - `leftOutCpuAtSource`: the source's own wait for a core is taken on all the CPU it measured, the part left out at
   *   the target's scale included. Off: on what is left.
   */
  clientTransactions?: boolean;
  walWriteOnItsDevice?: boolean;
  /**
   * `walWriteAtHeldBudget` (model 7): a source's WAL write() time at a modelled budget it held (writeHeldAtSourceBudget)
   * is the budget's queue, which the model sets on each target. Off: carried as a fixed part of every flush.
   */
  walWriteAtHeldBudget?: boolean;
  /**
   * `clientsReleasedTogether` (model 7): the clients' time outside the server follows the size of the group a WAL flush
   * releases together, (G + 1) / 2, from the source's group to the target's. Off: carried as the source measured it
   * (scaled only by the wait for a core where the clients share the cores).
   */
  clientsReleasedTogether?: boolean;
  referenceWrites?: boolean;
  volumeCpuLeftOut?: boolean;
  leftOutCpuAtSource?: boolean;
}

/** Predicts throughput and latency of the demands on a target. Throws when the target lacks a figure it needs. */
/**
 * `measuredAs`: where the demands at the target differ from what the source measured (a run carried to another scale:
 * predict-reference.ts), the demands the source measured, on which its residuals are found.
 */
export function predict(demands: WorkloadDemands, target: PredictTarget, variant: ModelVariant = {}, measuredAs?: WorkloadDemands): Prediction & { interval: PredictionInterval } {
  return predictWithInterval(demands, target, variant, measuredAs);
}

/** The model on a target with the source's residuals. */
function solve(demands: WorkloadDemands, target: PredictTarget, residuals: Residuals, variant: ModelVariant = {}): Prediction {
  const groupCommit = variant.groupCommit !== false;
  const assumptions: string[] = [];
  const clients = target.clients ?? demands.clients;
  const vcpus = target.vcpus ?? demands.cpu.vcpus;
  if (!(vcpus > 0)) throw new Error('the source\'s vCPUs are unknown (a capture of a server on another machine): give "vcpus" in the target');
  const throttled = throttledSourceProblem(target, demands);
  if (throttled) throw new Error(throttled);
  const dev = deviceModel(target, demands, assumptions);
  const cached = readsAtMemory(demands, target.memoryMiB, target.dataGiB === undefined ? undefined : target.dataGiB * 2 ** 30);
  if (cached.note) assumptions.push(cached.note);
  if (target.memoryMiB !== undefined && !demands.cache) assumptions.push('the source did not measure its cache: reads taken as measured at any memory size');
  const reads = cached.perTx;
  const readKiB = demands.reads.kib;
  const writeKiB = demands.writes.kib;
  const s = demands.serverMs;
  const serverTotal = s ? s.cpu + s.pageReads + s.walFsync + s.lock + s.other : 0;
  // Lock waits wait for other transactions to finish, so they scale with the time the rest of a transaction takes.
  const lockRatio = s && serverTotal - s.lock > 0 ? s.lock / (serverTotal - s.lock) : 0;
  const otherMs = residuals.carryOther === false ? 0 : (s?.other ?? 0);
  // Waits for a core: a backend woken from a read, or a client on the same machine, waits for a core before it
  // runs, and its sample still shows what it waited on before. That part of the source's page-read residual and, where
  // the clients share the machine, of their time, follows the wait for a core at the target's load (coreWait).
  const machineCpuMs = Math.max(demands.cpu.msPerTx, demands.cpu.machineMsPerTx ?? 0);
  const sourceMachineCpuMs = machineCpuMs + (variant.leftOutCpuAtSource === false ? 0 : (demands.cpu.leftOutMsPerTx ?? 0));
  const sourceCoreWait = demands.cpu.vcpus > 0 ? coreWait((demands.measured.tps / 1000) * sourceMachineCpuMs / demands.cpu.vcpus, demands.cpu.vcpus) : 0;
  // The residuals are taken as time from a wake-up to the end of the burst of work after it (the wait for a core plus
  // the burst), so they scale with 1 + the wait in bursts, not the wait alone (which a lightly loaded source barely has).
  const coreWaitRatio = (txPerMs: number) => (demands.cpu.vcpus > 0 ? (1 + coreWait((txPerMs * machineCpuMs) / vcpus, vcpus)) / (1 + sourceCoreWait) : 1);
  const clientsShareCores = demands.cpu.machineMsPerTx !== undefined;
  // The commits one WAL flush releases reach their clients together, and their replies are handled one after another
  // (on the backends' cores, by pgbench's threads): a client waits for the ones before it in its group, (G + 1) / 2
  // handlings on average for a group of G. Its time outside the server, in its latency and between its transactions,
  // follows that from the source's group (one per flush it measured) to the target's. On local-quick's gp3 the
  // clients' time a transaction was 1.66 ms at 64 clients (groups of 23.8), 0.32 at 16 (6.0) and 0.18 at 8 (3.3),
  // with the cores a quarter busy: not a wait for a core by load, but by the group's arrival.
  // At least one: the model's own group never falls below one commit (walFlushTime's groupAt), so a source that flushed
  // more often than it committed (the WAL writer's flushes counted too, at one client) gives back its own time.
  const sourceGroup = demands.wal.flushesPerTx ? Math.max(1, 1 / demands.wal.flushesPerTx) : null;
  const releasedTogetherRatio = (group: number) =>
    variant.clientsReleasedTogether === false || !groupCommit || sourceGroup === null ? 1 : (group + 1) / (sourceGroup + 1);
  let lastGroup = sourceGroup ?? 1;
  // CPU on a transaction's path is what its backend was sampled running (active without a wait event); the rest of
  // the host's CPU per transaction (other backends' and processes' work: the WAL writer, a client on the same host)
  // runs beside it and only takes cores from it.
  const onPathCpuMs = s && s.cpu > 0 && s.cpu < demands.cpu.msPerTx ? s.cpu : demands.cpu.msPerTx;
  const besideCpuMs = Math.max(demands.cpu.msPerTx, demands.cpu.machineMsPerTx ?? 0) - onPathCpuMs;
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
  let modelWalMs = 0;
  const flushModel = walFlushModel(demands, target, dev.flushLatencyMs, variant.flushFixedPart ?? 'none', variant);
  let walOpsPerTx = 0;
  let writesPerTx = 0;
  let damping = 0.5;
  let lastStep = 0;
  let readShares: Record<string, number> = {};
  for (let i = 0; i < MAX_ITERATIONS; i++) {
    writesPerTx = backgroundWritesPerTx(demands.writes, x * 1000);
    const waitScale = i === 0 || variant.residualsAsCoreWaits === false ? 1 : coreWaitRatio(x);
    const clientScale = (clientsShareCores ? waitScale : 1) * (i === 0 ? 1 : releasedTogetherRatio(lastGroup));
    const writeServiceMs = dev.writeIops ? 1000 / dev.writeIops : 0;
    // A WAL flush is one write of its group's bytes, under WALWriteLock: a fixed part (the device's flush, and the
    // wait behind the writes queued at a capped device) and a part per byte (the device's, and the transfer at a
    // capped bandwidth). Its group is its own commit and those that arrived while the flush before it ran.
    const flush = walFlushTime(flushModel, writeServiceMs * (1 + walQueue), dev.writeMiBps, demands.wal.bytesPerTx, clients, groupCommit);
    const group = flush.groupAt(x);
    lastGroup = group;
    // The fixed part of a flush is shared by its group, so it does not bound the throughput (the groups grow): a
    // commit waits for half of the one in progress (when one is) and its own, a delay. The part per byte is work every
    // commit's WAL needs, one flush after another: a single server (queue) of the commits' bytes. Without group
    // commit (the test seam) each commit's flush is its own, fixed part included, one after another.
    walMs = groupCommit ? groupedFlushWaitMs(flush.fixedMs, x) : 0;
    // A synchronous standby: after its own flush a commit waits for the WAL to cross the network and be flushed on
    // the standby, where the flushes group the same way (its device serves no reads: replay of a page after its
    // full-page image needs none).
    if (syncStandbyRttMs > 0) {
      const standbyFlushMs = dev.flushLatencyMs + (dev.writeMiBps ? (demands.wal.bytesPerTx * group) / 2 ** 20 / dev.writeMiBps * 1000 : 0);
      walMs += syncStandbyRttMs + (groupCommit ? groupedFlushWaitMs(standbyFlushMs, x) : standbyFlushMs);
    }
    const flushesPerTx = 1 / group;
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
      ...multiServer('CPU', onPathCpuMs, vcpus, besideCpuMs > 0 ? (tx) => 1 / (1 - min(MAX_BESIDE_UTILIZATION, (tx * besideCpuMs) / vcpus)) : undefined),
      { name: 'read latency', kind: 'delay', demandMs: reads * dev.readLatencyMs },
      { name: 'WAL flush', kind: 'queue', demandMs: groupCommit ? flush.perTxMs : flush.timeMs(1) },
      { name: 'WAL flush', kind: 'delay', demandMs: walMs },
      { name: 'locks', kind: 'delay', demandMs: lockMs },
      { name: 'other waits', kind: 'delay', demandMs: otherMs },
      { name: 'unexplained at the source', kind: 'delay', demandMs: residuals.cpu + (residuals.pageReadsPerRead * reads + residuals.walFsync) * waitScale },
      { name: 'client time in latency', kind: 'delay', demandMs: demands.client.inLatencyMs * clientScale },
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
    solution = mva(stations, clients, demands.client.gapMs * clientScale);
    const solved = solution;
    modelWalMs = stations.reduce((sum, st, k) => (st.name === 'WAL flush' ? sum + solved.residenceMs[k] : sum), 0);
    const rest = solution.responseMs - lockMs - demands.client.inLatencyMs;
    const writeStation = stations.findIndex((st) => st.name === (dev.sharedBudget ? 'device IOPS' : 'write IOPS'));
    const next = solution.throughput;
    const change = Math.abs(next - x) / Math.max(next, 1e-12);
    // Damped; a step that turns back (the load-dependent parts overshot) halves the damping, so it settles.
    const step = next - x;
    if (i > 0 && step * lastStep < 0) damping = Math.max(MIN_DAMPING, damping / 2);
    lastStep = step;
    x = i === 0 ? next : x + damping * step;
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
    modelWalMs,
  };
}

/**
 * The model's version, recorded with every prediction it makes (the matrix, a run's report): a prediction made by one
 * version is compared with a measurement only as that version's. Raise it whenever a change moves a prediction.
 * 3: the primary's WAL flush a single server whose work per commit falls with its group (it was a delay); the cores
 * shared with the clients (the machine's CPU per transaction); emulated volumes with one shared IOPS budget.
 * 4: a target's data size (`dataGiB`); between two modelled devices the source's WAL write() time is not carried
 * (otherModelledDevice); demands carried to another scale keep the residuals found on what the source measured.
 * Frozen before predict-holdout-1 was predicted (docs/prediction-model.md, "Held out").
 * 5, after predict-holdout-1 was seen (it moved to the revision set; predict-holdout-2 is the held-out run): demands
 * per client transaction, not per server commit (windowTransactions: that run's script commits twice a transaction);
 * the modelled volume's server's CPU left out at the reference's scale.
 * 6, after local-quick-clients-2's reference predictions were seen: the source's own wait for a core, against which the
 * target's is scaled, is taken on all the CPU it measured (`leftOutMsPerTx`), not on what is left once the volume's
 * server is taken out. Only the reference-scale predictions move; local-quick-clients-2 is their revision run now, and
 * local-quick-2 is held out for them.
 * 7, after the 16- and 8-client runs of 2026-12-05 (lq-e16, lq-c8) were predicted from the demos' 64: a source's WAL
 * write() time at a modelled budget it held is not carried (writeHeldAtSourceBudget), and the clients' time outside
 * the server follows the group a flush releases, (G + 1) / 2 (clientsReleasedTogether). Those runs, predict-holdout-2
 * and -3, local-quick-2 and predict-matrix-3 moved to the revision set; predict-holdout-4 and local-quick-clients-3
 * are held out from it (common/model/split.ts).
 */
export const MODEL_VERSION = '7';

/**
 * Run-to-run spread of a TPS between two runs of the same spec on the same machine, as a standard deviation of
 * ln(TPS of one run / TPS of the other): the root mean square over the classes `predict-check-2` and `predict-check-3`
 * both ran (test/fixtures/results; test/unit/prediction-interval.test.ts recomputes it from them). A prediction from
 * one run of another carries this spread, the source's run and the target's each being one draw.
 */
export const RUN_TO_RUN_LOG_SPREAD = 0.0892;

/** An end of an unknown that moves the TPS by more than this share is named among the interval's inputs. */
const END_MOVES = 0.005;

/** The interval's coverage: the central 80 % of a normal spread (z = 1.2816). */
export const INTERVAL_Z = 1.2816;

/** What a prediction does not know, and the range the interval takes for it. */
export interface PredictionInterval {
  low: number;
  high: number;
  /** Each input taken as a range, in words. */
  from: string[];
}

/**
 * A prediction with its interval: the model again at both ends of each input it does not know for the target (a
 * published device latency, the default standby round trip), the lowest and highest TPS of those, widened by the
 * run-to-run spread of two runs at INTERVAL_Z.
 */
export function predictWithInterval(
  demands: WorkloadDemands,
  target: PredictTarget,
  variant: ModelVariant = {},
  measuredAs: WorkloadDemands = demands,
): Prediction & { interval: PredictionInterval } {
  const residuals = sourceResiduals(measuredAs, variant);
  const p = solve(demands, target, residuals, variant);
  const from: string[] = [];
  const scenarios: PredictTarget[] = [];
  const device = publishedLatencyRange(target, demands);
  if (device) {
    from.push(device.detail);
    for (const ms of device.rangeMs) scenarios.push({ ...target, readLatencyMs: target.readLatencyMs ?? ms, flushLatencyMs: target.flushLatencyMs ?? ms });
  }
  const rtt = target.syncStandbyRttMs ?? demands.storage.syncStandbyRttMs ?? 0;
  if (rtt > 0 && target.syncStandbyRttMs === undefined) {
    from.push(`standby round trip ${INTER_AZ_RTT.rangeMs.join('-')} ms (${INTER_AZ_RTT.rangeSource})`);
    for (const ms of INTER_AZ_RTT.rangeMs) scenarios.push({ ...target, syncStandbyRttMs: ms });
  }
  const tps = [p.tps, ...scenarios.map((t) => solve(demands, t, residuals, variant).tps)];
  // What the measurement does not settle (ModelVariant): each other end, with the source's residuals found again.
  const ends: [ModelVariant, string][] = [
    [{ flushFixedPart: 'device read' }, 'a WAL flush with a fixed part of one device read, not all in proportion to its bytes'],
    [{ residualsAsCoreWaits: false }, 'the source\'s residuals constant, not waits for a core'],
  ];
  for (const [end, what] of ends) {
    const v = { ...variant, ...end };
    const t = solve(demands, target, sourceResiduals(measuredAs, v), v).tps;
    if (Math.abs(t - p.tps) > END_MOVES * p.tps) from.push(what);
    tps.push(t);
  }
  const spread = Math.exp(INTERVAL_Z * RUN_TO_RUN_LOG_SPREAD);
  from.push(`run-to-run spread x/÷ ${spread.toFixed(3)} (two runs, ${(100 * RUN_TO_RUN_LOG_SPREAD).toFixed(1)} % each way at one sigma, 80 % central)`);
  return { ...p, interval: { low: Math.min(...tps) / spread, high: Math.max(...tps) * spread, from } };
}

/**
 * The range of a device latency the prediction took from published figures (not measured, not given), or null:
 * the published statements are ranges, not points.
 */
function publishedLatencyRange(target: PredictTarget, demands: WorkloadDemands): { rangeMs: readonly [number, number]; detail: string } | null {
  if (target.readLatencyMs !== undefined && target.flushLatencyMs !== undefined) return null;
  if (isMeasuredHere(target, demands) && demands.device.readLatencyMs !== null && demands.device.flushLatencyMs !== null) return null;
  const published = target.kind === 'ebs' ? (target.volumeType === 'io2' ? DEVICE_DEFAULTS.io2 : DEVICE_DEFAULTS.gp3) : target.kind === 'instance-store' ? DEVICE_DEFAULTS.nvme : null;
  if (!published) return null;
  return { rangeMs: published.latencyRangeMs, detail: `device latency ${published.latencyRangeMs.join('-')} ms (${published.rangeSource})` };
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
  // Only the TPS is compared: the model once, without the interval's extra solutions.
  const own = solve(demands, demands.storage, sourceResiduals(demands, variant), variant);
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
  const range = p.interval ? ` (${Math.round(p.interval.low).toLocaleString('en-US')}-${Math.round(p.interval.high).toLocaleString('en-US')})` : '';
  const head = `predicted: ${Math.round(p.tps).toLocaleString('en-US')} TPS${range}, mean latency ${p.latencyMs.mean.toFixed(2)} ms${p95}`;
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
