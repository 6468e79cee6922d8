/**
 * Two baselines the prediction model (predict.ts) must beat on the same pairs, each one division with none of the
 * model's queues, group commit, residuals or cache in it (issue 22: validation so far could not tell the model from
 * one division):
 *
 * - cap ÷ I/O: the target's tightest cap divided by what the source did per transaction of the I/O that cap counts;
 * - clients × TPS: the source's throughput scaled by the target's clients over the source's, its latency held
 *   constant (Little's law: TPS = clients / latency).
 *
 * Pure and workflow-safe: the CLI, the report and the tests share them.
 */
import { backgroundWritesPerTx, errorPct, targetCaps, type PredictTarget, type WorkloadDemands } from './predict';

export const BASELINE_NAMES = ['capDivision', 'clientScaling'] as const;
export type BaselineName = (typeof BASELINE_NAMES)[number];

/** How each baseline is named in the CLI, the report and the docs. */
export const BASELINE_LABELS: Record<BaselineName, string> = {
  capDivision: 'cap ÷ I/O',
  clientScaling: 'clients × TPS',
};

export interface BaselinePrediction {
  /** Predicted TPS; null when the baseline has nothing to divide (a target without caps, a source without I/O). */
  tps: number | null;
  /** The division, in words. */
  detail: string;
}

const n = (v: number, digits = 0) => v.toLocaleString('en-US', { maximumFractionDigits: digits });

/**
 * The tightest of the target's caps ÷ the source's I/O per transaction that the cap counts: reads, background writes
 * (those a cgroup v1 throttle sees, where the source measured them, on the emulation) and WAL flushes (pg_stat_wal's
 * wal_sync per transaction; not counted where the source did not measure them), in operations and in MiB.
 */
export function capDivisionBaseline(demands: WorkloadDemands, target: PredictTarget): BaselinePrediction {
  const caps = targetCaps(target);
  if (caps.iops === null && caps.mibps === null) return { tps: null, detail: `${target.kind} without an iops or throughputMiBps cap: nothing to divide` };
  const w = demands.writes;
  // Background writes as the source did them: measured, or the source's window at its own measured throughput.
  const allWrites = w.kind === 'measured' ? w.perTx : backgroundWritesPerTx(w, demands.measured.tps);
  const writes = caps.throttleSeesWriteback ? allWrites : w.kind === 'measured' && w.throttledPerTx !== null ? w.throttledPerTx : 0;
  const flushes = demands.wal.flushesPerTx ?? 0;
  const readOps = demands.reads.perTx;
  const writeOps = writes + flushes;
  const readMiB = (readOps * demands.reads.kib) / 1024;
  const writeMiB = (writes * w.kib) / 1024 + demands.wal.bytesPerTx / 2 ** 20;
  const divisions: [string, number | null, number, string][] = caps.sharedBudget
    ? [
        ['IOPS', caps.iops, readOps + writeOps, 'I/O operations'],
        ['MiB/s', caps.mibps, readMiB + writeMiB, 'MiB'],
      ]
    : [
        ['read IOPS', caps.iops, readOps, 'reads'],
        ['write IOPS', caps.iops, writeOps, 'writes'],
        ['read MiB/s', caps.mibps, readMiB, 'MiB read'],
        ['write MiB/s', caps.mibps, writeMiB, 'MiB written'],
      ];
  let best: BaselinePrediction | null = null;
  for (const [name, cap, perTx, unit] of divisions) {
    if (cap === null || !(perTx > 0)) continue;
    const tps = cap / perTx;
    if (best === null || tps < best.tps!) best = { tps, detail: `${name} cap ${n(cap)} ÷ ${n(perTx, 3)} ${unit} per transaction at the source` };
  }
  const unmeasured = demands.wal.flushesPerTx === undefined ? '; WAL flushes not measured at the source, not counted' : '';
  if (!best) return { tps: null, detail: 'the source did no I/O the caps count' };
  return { tps: best.tps, detail: best.detail + unmeasured };
}

/** The source's TPS × the target's clients / the source's, at the source's latency. */
export function clientScalingBaseline(demands: WorkloadDemands, target: PredictTarget): BaselinePrediction {
  const clients = target.clients ?? demands.clients;
  if (!(demands.clients > 0)) return { tps: null, detail: 'the source\'s clients are unknown' };
  return {
    tps: (demands.measured.tps * clients) / demands.clients,
    detail: `${n(demands.measured.tps)} TPS × ${clients} / ${demands.clients} clients, at the source's ${n(demands.measured.latencyMs.mean, 2)} ms`,
  };
}

/** Both baselines for one target. */
export function baselines(demands: WorkloadDemands, target: PredictTarget): Record<BaselineName, BaselinePrediction> {
  return { capDivision: capDivisionBaseline(demands, target), clientScaling: clientScalingBaseline(demands, target) };
}

/** One line of both baselines: "baselines: cap ÷ I/O 1,967 TPS (...); clients × TPS 12,629 TPS (...)". */
export function baselinesLine(b: Record<BaselineName, BaselinePrediction>, measuredTps?: number): string {
  const one = (name: BaselineName) => {
    const p = b[name];
    if (p.tps === null) return `${BASELINE_LABELS[name]}: none (${p.detail})`;
    const err = measuredTps === undefined ? '' : `, ${signedPct(errorPct(p.tps, measuredTps))}`;
    return `${BASELINE_LABELS[name]} ${n(p.tps)} TPS${err} (${p.detail})`;
  };
  return `baselines: ${BASELINE_NAMES.map(one).join('; ')}`;
}

/** One pair of a comparison: what was measured, the model's TPS, and each baseline's (null: none). */
export interface ComparedPair {
  label: string;
  measuredTps: number;
  modelTps: number;
  baselineTps: Record<BaselineName, number | null>;
}

export interface BaselineComparison {
  /** Pairs where the model and both baselines give a figure (the same pairs for all three). */
  pairs: number;
  /** Median absolute TPS error in per cent, of the model and of each baseline, on those pairs. */
  medianAbsErrorPct: { model: number; capDivision: number; clientScaling: number };
  /** Whether the model's median error is below both baselines' by at least TIE_PCT_POINTS (a tie does not beat). */
  modelBeatsBoth: boolean;
  /** The predictors by median error, best first. */
  ranking: string[];
}

/** Median absolute TPS errors of the model and the baselines on the pairs where all three give a figure; null with none. */
export function compareWithBaselines(pairs: ComparedPair[]): BaselineComparison | null {
  const same = pairs.filter((p) => p.measuredTps > 0 && BASELINE_NAMES.every((b) => p.baselineTps[b] !== null));
  if (!same.length) return null;
  const medianOf = (f: (p: ComparedPair) => number) => median(same.map((p) => Math.abs(errorPct(f(p), p.measuredTps))));
  const m = { model: medianOf((p) => p.modelTps), capDivision: medianOf((p) => p.baselineTps.capDivision!), clientScaling: medianOf((p) => p.baselineTps.clientScaling!) };
  const ranking = (['model', ...BASELINE_NAMES] as const)
    .map((k) => [k === 'model' ? 'model' : BASELINE_LABELS[k], m[k]] as const)
    .sort((a, b) => a[1] - b[1])
    .map(([k]) => k);
  const beats = (baseline: number) => baseline - m.model >= TIE_PCT_POINTS;
  return { pairs: same.length, medianAbsErrorPct: m, modelBeatsBoth: beats(m.capDivision) && beats(m.clientScaling), ranking };
}

/**
 * Median errors closer than this (percentage points) are a tie: the precision every comparison prints (one decimal),
 * so the model does not "beat" a baseline it equals on paper but for floating-point noise.
 */
export const TIE_PCT_POINTS = 0.1;

/** The comparison in one sentence, saying plainly when the model does not beat both. */
export function comparisonLine(c: BaselineComparison): string {
  const f = (v: number) => `${v.toFixed(1)} %`;
  const head = `median |TPS error| on ${c.pairs} pairs: model ${f(c.medianAbsErrorPct.model)}, ${BASELINE_LABELS.capDivision} ${f(c.medianAbsErrorPct.capDivision)}, ${BASELINE_LABELS.clientScaling} ${f(c.medianAbsErrorPct.clientScaling)}`;
  const tied = BASELINE_NAMES.filter((b) => Math.abs(c.medianAbsErrorPct[b] - c.medianAbsErrorPct.model) < TIE_PCT_POINTS).map((b) => BASELINE_LABELS[b]);
  const verdict = c.modelBeatsBoth ? 'the model beats both baselines' : `the model does not beat both baselines${tied.length ? ` (it ties ${tied.join(' and ')})` : ''}`;
  return `${head}: ${verdict}`;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const signedPct = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(1)} %`;
