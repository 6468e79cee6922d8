/**
 * The published reference (POSETTE 2026: NVMe vs gp3) as a test case of the model: each class's published figures
 * become the demands of a source, and the model predicts the other class from them, so a published answer is never
 * used to predict itself. Where the reference publishes no measurement, the demands follow from its setup and the
 * workload (stated in each note). Pure and workflow-safe.
 */
import { REFERENCE } from '../results/reference';
import { baselines, type BaselineName, type BaselinePrediction } from './baselines';
import { deviceReadShare, errorPct, INTER_AZ_RTT, predict, type ModelVariant, type PredictTarget, type Prediction, type PredictionInterval, type WorkloadDemands } from './predict';
import { demandsFromClass } from './demands';
import type { MatrixMutation } from './matrix';
import { RANDOM_UPDATE_SCRIPT } from '../input/workload-script';
import type { ExperimentResult } from '../results/result';

export type ReferenceClass = 'gp3' | 'nvme';

/**
 * The script reads one row by primary key and updates it: one index leaf page and one heap page per transaction may
 * miss the cache (the root and inner index pages stay cached); both are dirtied.
 */
const PAGES_PER_TX = 2;

/**
 * The reference's background writes: dirty pages stay in shared_buffers until a checkpoint or an eviction writes them;
 * seed-full (the lab's spec of the reference) sets checkpoint_timeout 30 min, so a 300 s window writes back only what
 * the buffers cannot hold.
 */
function referenceWriteWindow(): WorkloadDemands['writes'] {
  const s = REFERENCE.setup;
  return { kind: 'window', dirtiedPagesPerTx: PAGES_PER_TX, absorbPages: (s.sharedBuffersGiB * GIB) / PAGE, windowSeconds: s.durationSeconds, kib: PAGE / 1024 };
}

const GIB = 2 ** 30;
const PAGE = 8192;

/**
 * pgbench_accounts_pkey's size: an int4 btree leaf tuple takes 16 bytes plus a 4-byte line pointer, and a sorted
 * build fills leaf pages to the default fillfactor of 90 %.
 */
export function pgbenchIndexBytes(rows: number): number {
  const perPage = Math.floor((PAGE * 0.9) / 20);
  return Math.ceil(rows / perPage) * PAGE;
}

/**
 * The round trip to the synchronous standbys the model takes for the reference: every cluster commits to a quorum of
 * standbys in other Availability Zones (synchronous_standby_names), and the reference publishes no round trip, so
 * INTER_AZ_RTT's 1 ms (taken after the +39.7 % miss on NVMe without it was seen: `predict --reference` prints both).
 */
export function referenceStandbyRttMs(): number {
  return REFERENCE.setup.synchronousStandbyNames ? INTER_AZ_RTT.rttMs : 0;
}

/** What each class ran on, as a prediction target (vCPUs, memory and clients from the setup); `syncStandbyRttMs` overrides the round trip. */
export function referenceTarget(cls: ReferenceClass, syncStandbyRttMs = referenceStandbyRttMs()): PredictTarget {
  const s = REFERENCE.setup;
  const host = { vcpus: s.vcpus, memoryMiB: s.memoryGiB * 1024, clients: s.clients, syncStandbyRttMs };
  if (cls === 'gp3') {
    const g = s.storageClasses.gp3;
    return { kind: 'ebs', volumeType: 'gp3', iops: g.iops, throughputMiBps: g.throughputMiBps, ...host, label: 'gp3 (reference)' };
  }
  return { kind: 'instance-store', ...host, label: 'NVMe instance store (reference)' };
}

/** The demands of one reference class from its published figures and the setup. */
export function referenceDemands(cls: ReferenceClass, syncStandbyRttMs = referenceStandbyRttMs()): WorkloadDemands {
  const s = REFERENCE.setup;
  const r = REFERENCE.results[cls];
  const dataBytes = referenceDataBytes();
  const cacheBytes = s.memoryGiB * GIB;
  const b = r.latencyBreakdownMs;
  return {
    source: `reference ${cls} (published figures)`,
    clients: s.clients,
    measured: { tps: r.medianTps, latencyMs: { mean: r.medianLatencyMs, p95: null } },
    // The published latency breakdown is the server's; the reference publishes no client-side time.
    client: { gapMs: 0, inLatencyMs: 0 },
    cpu: { msPerTx: (1000 * r.cpuSeconds) / (r.profileWindowSeconds * r.medianTps), vcpus: s.vcpus },
    serverMs: { cpu: b.cpu, pageReads: b.pageReads, walFsync: b.walFsync, lock: b.lockAndScheduler, other: 0 },
    reads: { perTx: PAGES_PER_TX * deviceReadShare(cacheBytes, dataBytes), kib: PAGE / 1024 },
    writes: referenceWriteWindow(),
    // Nearly every change is a page's first since the last checkpoint (550 GiB of data): two full-page images,
    // plus the heap update and index insert records (about 200 bytes).
    wal: { bytesPerTx: PAGES_PER_TX * PAGE + 200 },
    device: { readLatencyMs: null, flushLatencyMs: null },
    cache: { dataBytes, cacheBytes, memoryMiB: s.memoryGiB * 1024 },
    storage: referenceTarget(cls, syncStandbyRttMs),
    notes: [
      `data set: heap ${s.heapGiB} GiB + primary key ${(pgbenchIndexBytes(s.rows) / GIB).toFixed(1)} GiB; cache: all ${s.memoryGiB} GiB of memory (an upper bound: process memory and double caching left out)`,
      `${PAGES_PER_TX} pages per transaction may miss the cache and are dirtied (one index leaf, one heap page)`,
      `CPU: ${r.cpuSeconds} CPU s over ${r.profileWindowSeconds} s at ${r.medianTps} TPS`,
      ...(s.synchronousStandbyNames
        ? [
            syncStandbyRttMs > 0
              ? `commits wait for synchronous_standby_names = '${s.synchronousStandbyNames}', standbys in other Availability Zones: ${syncStandbyRttMs === INTER_AZ_RTT.rttMs ? INTER_AZ_RTT.source : `${syncStandbyRttMs} ms round trip taken`}`
              : `synchronous_standby_names = '${s.synchronousStandbyNames}' left out: no round trip to a standby (0 ms), as if the TPS runs had none`,
          ]
        : []),
    ],
  };
}

export interface ReferenceCheck {
  target: ReferenceClass;
  from: ReferenceClass;
  prediction: Prediction;
  published: { tps: number; latencyMs: number };
  tpsErrorPct: number;
  latencyErrorPct: number;
  /** The synchronous standby's round trip at both the source and the target, ms (0: none). */
  syncStandbyRttMs: number;
  /** The baselines on the same pair, with their TPS errors. */
  baselines: Record<BaselineName, BaselinePrediction & { errorPct: number | null }>;
}

/**
 * Each class predicted from the other's published figures, beside its own published TPS and latency; the standby's
 * round trip (default: the one the model takes, referenceStandbyRttMs) at both classes.
 */
export function referenceChecks(syncStandbyRttMs = referenceStandbyRttMs()): ReferenceCheck[] {
  return (['gp3', 'nvme'] as const).map((target) => {
    const from: ReferenceClass = target === 'gp3' ? 'nvme' : 'gp3';
    const demands = referenceDemands(from, syncStandbyRttMs);
    const to = referenceTarget(target, syncStandbyRttMs);
    const prediction = predict(demands, to);
    const published = { tps: REFERENCE.results[target].medianTps, latencyMs: REFERENCE.results[target].medianLatencyMs };
    const b = baselines(demands, to);
    const withError = (name: BaselineName) => ({ ...b[name], errorPct: b[name].tps === null ? null : errorPct(b[name].tps!, published.tps) });
    return {
      target,
      from,
      prediction,
      published,
      tpsErrorPct: errorPct(prediction.tps, published.tps),
      latencyErrorPct: errorPct(prediction.latencyMs.mean, published.latencyMs),
      syncStandbyRttMs,
      baselines: { capDivision: withError('capDivision'), clientScaling: withError('clientScaling') },
    };
  });
}

/** The reference's predictions without the standby's round trip (0 ms) and with the one the model takes, side by side. */
export function referenceStandbyRange(): { rttMs: number; used: boolean; checks: ReferenceCheck[] }[] {
  const used = referenceStandbyRttMs();
  return [...new Set([0, used])].map((rttMs) => ({ rttMs, used: rttMs === used, checks: referenceChecks(rttMs) }));
}

/**
 * The reference's two classes at their own scale, predicted from a run of this lab (issue 29): "from what I can run
 * here, what would m6id.4xlarge with gp3 do?". Each class of the run on a modelled device is a source; the targets are
 * the lab's device models of the reference's devices (the modelled gp3 at its 3,000 IOPS and 125 MiB/s, m6id's NVMe:
 * common/model/devices.ts, each figure with its published source), on the reference's host (16 vCPUs, 64 GiB, 64
 * clients), its data set (heap and primary key), and its synchronous standby (INTER_AZ_RTT). No figure of the
 * reference's results enters: they are printed beside the predictions, never used by them.
 */
export const REFERENCE_FROM_RUN_GOAL_PCT = 20;

/** The reference's data set: heap and primary key, bytes. */
export function referenceDataBytes(): number {
  const s = REFERENCE.setup;
  return s.heapGiB * GIB + pgbenchIndexBytes(s.rows);
}

/** A reference class as a target on the lab's model of its device. */
export function referenceModelledTarget(cls: ReferenceClass, syncStandbyRttMs = referenceStandbyRttMs()): PredictTarget {
  const s = REFERENCE.setup;
  const host = { vcpus: s.vcpus, memoryMiB: s.memoryGiB * 1024, clients: s.clients, syncStandbyRttMs, dataGiB: referenceDataBytes() / GIB };
  if (cls === 'gp3') {
    const g = s.storageClasses.gp3;
    return { kind: 'emulated-ebs', iops: g.iops, throughputMiBps: g.throughputMiBps, ...host, label: 'gp3 (reference, modelled)' };
  }
  return { kind: 'nvme', ...host, label: 'NVMe instance store (reference, modelled)' };
}

/**
 * A source's demands carried to the reference's scale. What changes with the scale and is not a property of the
 * device: the background writes. A source here wrote back what its small shared_buffers could not hold; at the
 * reference, a 300 s window of the same script dirties pages that 16 GiB of shared_buffers hold until the next
 * checkpoint (30 min in seed-full). They follow from the script (one heap page and one index leaf a transaction, as
 * referenceDemands takes) and the reference's buffers, not from the source's count.
 */
export function demandsAtReferenceScale(demands: WorkloadDemands, variant: Pick<ModelVariant, 'referenceWrites' | 'volumeCpuLeftOut'> = {}): WorkloadDemands {
  const s = REFERENCE.setup;
  // The modelled volume's server ran on this machine's cores; the reference's devices take none of its host's.
  const device = variant.volumeCpuLeftOut === false ? 0 : (demands.cpu.deviceMsPerTx ?? 0);
  const cpu = demands.cpu.machineMsPerTx !== undefined && device > 0 ? { ...demands.cpu, machineMsPerTx: Math.max(demands.cpu.msPerTx, demands.cpu.machineMsPerTx - device), leftOutMsPerTx: Math.min(device, demands.cpu.machineMsPerTx - demands.cpu.msPerTx) } : demands.cpu;
  return {
    ...demands,
    cpu,
    writes: variant.referenceWrites === false ? demands.writes : referenceWriteWindow(),
    notes: [
      ...demands.notes,
      ...(cpu !== demands.cpu ? [`CPU at the reference's scale: the machine's ${demands.cpu.machineMsPerTx!.toFixed(3)} ms a transaction less the modelled volume's server's ${device.toFixed(3)} ms (a real device's work takes no host core)`] : []),
      ...(variant.referenceWrites === false ? [] : [`background writes at the reference's scale: ${PAGES_PER_TX} pages dirtied a transaction (the script's heap page and index leaf), written back only beyond ${s.sharedBuffersGiB} GiB of shared_buffers in a ${s.durationSeconds} s window (the source's ${demands.writes.kind === 'measured' ? `${demands.writes.perTx.toFixed(3)} a transaction, written back from its own buffers,` : 'figure'} not carried)`]),
    ],
  };
}

export interface ReferenceFromRun {
  /** The run's class the demands come from. */
  source: string;
  target: ReferenceClass;
  prediction: Prediction & { interval: PredictionInterval };
  published: { tps: number; latencyMs: number };
  tpsErrorPct: number;
  /** Whether the interval holds the published TPS, and whether the prediction is within REFERENCE_FROM_RUN_GOAL_PCT. */
  held: boolean;
  withinGoal: boolean;
  /** The prediction's largest parts of a transaction's time, ms, and its busiest station: the terms a miss is in. */
  terms: string;
}

/** Why a run cannot predict the reference, or null. */
export function referenceFromRunProblem(result: Pick<ExperimentResult, 'spec'>): string | null {
  const script = result.spec.workload.script;
  if (script !== RANDOM_UPDATE_SCRIPT) return "the run's workload script is not the reference's random single-row UPDATE: its demands are another workload's";
  return null;
}

/**
 * Each reference class predicted from each class of a run on a modelled device (a class without one is left out).
 * `mutation`: the mutation tests' seam (as predictionMatrix's): its demands hook applies to what the source measured.
 */
export function referenceFromRun(result: ExperimentResult, mutation: MatrixMutation = {}): { rows: ReferenceFromRun[]; problems: string[] } {
  const problem = referenceFromRunProblem(result);
  if (problem) return { rows: [], problems: [problem] };
  const rows: ReferenceFromRun[] = [];
  const problems: string[] = [];
  for (const [name, cls] of Object.entries(result.classes)) {
    if (!cls.device) {
      problems.push(`${name}: not on a modelled device (its device's figures are this machine's)`);
      continue;
    }
    let measured: WorkloadDemands;
    try {
      const d = demandsFromClass(result, name, mutation.variant);
      measured = mutation.demands ? mutation.demands(d) : d;
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      continue;
    }
    // The residuals are the source's, found on what it measured; the writes are the reference's.
    const demands = demandsAtReferenceScale(measured, mutation.variant);
    for (const target of ['gp3', 'nvme'] as const) {
      const modelled = referenceModelledTarget(target);
      const prediction = predict(demands, mutation.target ? mutation.target(modelled, demands) : modelled, mutation.variant, measured);
      const r = REFERENCE.results[target];
      const err = errorPct(prediction.tps, r.medianTps);
      const b = prediction.breakdownMs;
      const parts = Object.entries(b)
        .filter(([, ms]) => ms > 0)
        .sort((x, y) => y[1] - x[1])
        .slice(0, 3)
        .map(([part, ms]) => `${part} ${ms.toFixed(2)} ms`);
      rows.push({
        source: name,
        target,
        prediction,
        published: { tps: r.medianTps, latencyMs: r.medianLatencyMs },
        tpsErrorPct: err,
        held: prediction.interval.low <= r.medianTps && r.medianTps <= prediction.interval.high,
        withinGoal: Math.abs(err) <= REFERENCE_FROM_RUN_GOAL_PCT,
        terms: `bound by ${prediction.bottleneck}; ${parts.join(', ')}; ${prediction.readsPerTx.toFixed(2)} reads, ${prediction.writesPerTx.toFixed(2)} page writes and ${prediction.walOpsPerTx.toFixed(2)} WAL writes a transaction`,
      });
    }
  }
  return { rows, problems };
}

/** A reference class as its report names it. */
export const referenceClassLabel = (cls: ReferenceClass) => (cls === 'nvme' ? 'NVMe' : 'gp3');

/** The rows as a table: each prediction with its interval beside the published TPS. */
export function referenceFromRunLines(rows: ReferenceFromRun[]): string[] {
  const n = (v: number) => Math.round(v).toLocaleString('en-US');
  const signed = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(1)} %`;
  const head = ['reference class', 'from', 'predicted (interval)', 'published', 'error', 'interval holds it'];
  const cells = rows.map((r) => [referenceClassLabel(r.target), r.source, `${n(r.prediction.tps)} (${n(r.prediction.interval.low)}-${n(r.prediction.interval.high)})`, n(r.published.tps), signed(r.tpsErrorPct), r.held ? 'yes' : 'no']);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd();
  return [line(head), ...cells.map(line), ...rows.map((r) => `${referenceClassLabel(r.target)} from ${r.source}: ${r.terms}`)];
}
