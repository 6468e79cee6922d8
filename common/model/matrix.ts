/**
 * The validation matrix (issue 22): every measured class of a run predicted from every other (leave-one-out: the
 * target's own measurement never enters its prediction, only what its spec says it ran on), beside both baselines,
 * with each prediction's interval and whether the measured value fell in it. The predict-matrix preset measures one
 * data set at points that move different terms of the model; `storage-lab predict --matrix RUN` prints this table.
 * Pure and workflow-safe.
 */
import { baselines, BASELINE_LABELS, BASELINE_NAMES, median, TIE_PCT_POINTS, type BaselineName } from './baselines';
import { demandsFromClass, medianCluster, targetOfClass } from './demands';
import { errorPct, MODEL_VERSION, predictWithInterval, type ModelVariant, type PredictTarget, type WorkloadDemands } from './predict';
import type { ExperimentResult } from '../results/result';

/**
 * A target whose measured I/O used at least this share of its IOPS cap was bound by that cap: the emulated shared
 * budget delivers 80-88 % of itself to a workload it holds (its controller re-splits it every 100 ms).
 */
export const CAP_BOUND_USE = 0.75;

export interface MatrixPair {
  source: string;
  target: string;
  measuredTps: number;
  predicted: { tps: number; low: number; high: number; bottleneck: string } | null;
  errorPct: number | null;
  /** Whether the interval held the measured TPS. */
  held: boolean | null;
  baselines: Record<BaselineName, { tps: number | null; errorPct: number | null }>;
  /** Whether one cap bound the target (its measured I/O at CAP_BOUND_USE of the cap or more), and how much it used. */
  capBound: boolean;
  capUse: number | null;
  problem?: string;
}

export interface MatrixSummary {
  pairs: number;
  notCapBound: number;
  medianAbsErrorPct: number;
  maxAbsErrorPct: number;
  /** Each baseline against the model on the pairs where the baseline gives a figure. */
  baselines: Record<BaselineName, { pairs: number; medianAbsErrorPct: number; modelMedianAbsErrorPct: number; modelAhead: boolean }>;
  /** Pairs whose interval held the measured TPS, in per cent. */
  coveragePct: number;
}

export interface PredictionMatrix {
  runId: string;
  modelVersion: string;
  classes: string[];
  pairs: MatrixPair[];
  summary: MatrixSummary | null;
  /** Classes that could not serve as a source, and why. */
  problems: string[];
}

/**
 * The share of its IOPS cap a class's measured I/O used: the host's cgroup reads (plus writes with a shared budget)
 * per second ÷ the cap; null for a class without a cap or without the cgroup's counts.
 */
export function capUse(result: ExperimentResult, className: string): number | null {
  const cls = result.classes[className];
  const io = cls ? medianCluster(cls)?.diagnostics?.cgroupIo : null;
  const iops = cls?.limits.iops;
  if (!cls || !io || !iops || (cls.kind !== 'emulated-ebs' && cls.kind !== 'ebs')) return null;
  const shared = cls.kind === 'ebs' || cls.limits.iopsBudget === 'shared';
  return shared ? (io.readIops + io.writeIops) / iops : Math.max(io.readIops, io.writeIops) / iops;
}

/**
 * A change to the model's inputs or parts (test/unit/predict-mutations.test.ts: the matrix must catch each); every
 * caller outside the tests passes none.
 */
export interface MatrixMutation {
  demands?: (d: WorkloadDemands) => WorkloadDemands;
  target?: (t: PredictTarget, d: WorkloadDemands) => PredictTarget;
  variant?: ModelVariant;
}

/** Every ordered pair of a run's measured classes: the first predicted from the second's demands. */
export function predictionMatrix(result: ExperimentResult, mutation: MatrixMutation = {}): PredictionMatrix {
  const classes = Object.keys(result.classes).filter((name) => result.classes[name].medianTps != null);
  const problems: string[] = [];
  const sources = new Map<string, WorkloadDemands>();
  for (const name of classes) {
    try {
      const d = demandsFromClass(result, name, mutation.variant);
      sources.set(name, mutation.demands ? mutation.demands(d) : d);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
  const pairs: MatrixPair[] = [];
  for (const [source, demands] of sources)
    for (const target of classes) {
      if (target === source) continue;
      const measuredTps = result.classes[target].medianTps!;
      const t = mutation.target ? mutation.target(targetOfClass(result, target), demands) : targetOfClass(result, target);
      const use = capUse(result, target);
      const b = baselines(demands, t);
      const baselineRow = Object.fromEntries(
        BASELINE_NAMES.map((name) => [name, { tps: b[name].tps, errorPct: b[name].tps === null ? null : errorPct(b[name].tps!, measuredTps) }]),
      ) as MatrixPair['baselines'];
      const base = { source, target, measuredTps, baselines: baselineRow, capBound: use !== null && use >= CAP_BOUND_USE, capUse: use };
      try {
        const p = predictWithInterval(demands, t, mutation.variant);
        pairs.push({
          ...base,
          predicted: { tps: p.tps, low: p.interval.low, high: p.interval.high, bottleneck: p.bottleneck },
          errorPct: errorPct(p.tps, measuredTps),
          held: p.interval.low <= measuredTps && measuredTps <= p.interval.high,
        });
      } catch (err) {
        pairs.push({ ...base, predicted: null, errorPct: null, held: null, problem: (err as Error).message });
      }
    }
  return { runId: result.runId, modelVersion: MODEL_VERSION, classes, pairs, summary: matrixSummary(pairs), problems };
}

/** The matrix's figures over the pairs the model predicted; null when it predicted none. */
export function matrixSummary(pairs: MatrixPair[]): MatrixSummary | null {
  const done = pairs.filter((p) => p.errorPct !== null);
  if (!done.length) return null;
  const abs = (v: number) => Math.abs(v);
  const baselineSummary = (name: BaselineName) => {
    const same = done.filter((p) => p.baselines[name].errorPct !== null);
    const b = median(same.map((p) => abs(p.baselines[name].errorPct!)));
    const m = median(same.map((p) => abs(p.errorPct!)));
    return { pairs: same.length, medianAbsErrorPct: b, modelMedianAbsErrorPct: m, modelAhead: same.length > 0 && b - m >= TIE_PCT_POINTS };
  };
  return {
    pairs: done.length,
    notCapBound: done.filter((p) => !p.capBound).length,
    medianAbsErrorPct: median(done.map((p) => abs(p.errorPct!))),
    maxAbsErrorPct: Math.max(...done.map((p) => abs(p.errorPct!))),
    baselines: Object.fromEntries(BASELINE_NAMES.map((name) => [name, baselineSummary(name)])) as MatrixSummary['baselines'],
    coveragePct: (100 * done.filter((p) => p.held).length) / done.length,
  };
}

/** The goals the matrix is held to (issue 22), each with whether the summary meets it. */
export const MATRIX_GOALS = { pairs: 20, notCapBound: 8, medianAbsErrorPct: 10, maxAbsErrorPct: 25, coveragePct: 80 } as const;

export function matrixGoals(s: MatrixSummary): { goal: string; met: boolean }[] {
  return [
    { goal: `at least ${MATRIX_GOALS.pairs} pairs (${s.pairs})`, met: s.pairs >= MATRIX_GOALS.pairs },
    { goal: `at least ${MATRIX_GOALS.notCapBound} pairs not bound by a single cap (${s.notCapBound})`, met: s.notCapBound >= MATRIX_GOALS.notCapBound },
    { goal: `median |TPS error| at most ${MATRIX_GOALS.medianAbsErrorPct} % (${s.medianAbsErrorPct.toFixed(1)} %)`, met: s.medianAbsErrorPct <= MATRIX_GOALS.medianAbsErrorPct },
    { goal: `largest |TPS error| at most ${MATRIX_GOALS.maxAbsErrorPct} % (${s.maxAbsErrorPct.toFixed(1)} %)`, met: s.maxAbsErrorPct <= MATRIX_GOALS.maxAbsErrorPct },
    ...BASELINE_NAMES.map((name) => {
      const b = s.baselines[name];
      return {
        goal: `the model ahead of ${BASELINE_LABELS[name]} on median error (${b.modelMedianAbsErrorPct.toFixed(1)} % against ${b.medianAbsErrorPct.toFixed(1)} % on its ${b.pairs} pairs)`,
        met: b.modelAhead,
      };
    }),
    { goal: `the interval holds the measured TPS in at least ${MATRIX_GOALS.coveragePct} % of pairs (${s.coveragePct.toFixed(0)} %)`, met: s.coveragePct >= MATRIX_GOALS.coveragePct },
  ];
}

/** The matrix as text: one line per pair, then the summary and the goals. */
export function matrixLines(m: PredictionMatrix): string[] {
  const n = (v: number) => Math.round(v).toLocaleString('en-US');
  const signed = (v: number | null) => (v === null ? '–' : `${v >= 0 ? '+' : ''}${v.toFixed(1)} %`);
  const head = ['target', 'from', 'measured', 'predicted (interval)', 'error', 'held', BASELINE_LABELS.capDivision, BASELINE_LABELS.clientScaling, 'cap'];
  const rows = m.pairs.map((p) => [
    p.target,
    p.source,
    n(p.measuredTps),
    p.predicted ? `${n(p.predicted.tps)} (${n(p.predicted.low)}-${n(p.predicted.high)})` : 'none (below)',
    signed(p.errorPct),
    p.held === null ? '–' : p.held ? 'yes' : 'no',
    signed(p.baselines.capDivision.errorPct),
    signed(p.baselines.clientScaling.errorPct),
    p.capUse === null ? 'none' : `${(p.capUse * 100).toFixed(0)} % used${p.capBound ? ' (bound)' : ''}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  const out = [`Prediction matrix of run ${m.runId} (model ${m.modelVersion}): every class predicted from every other`, line(head), ...rows.map(line)];
  for (const p of m.problems) out.push(`not a source: ${p}`);
  const unpredicted = new Map<string, string[]>();
  for (const p of m.pairs) if (!p.predicted) unpredicted.set(p.problem ?? '', [...(unpredicted.get(p.problem ?? '') ?? []), `${p.target} from ${p.source}`]);
  for (const [why, pairs] of unpredicted) out.push(`not predicted (${pairs.length}): ${pairs.join(', ')}: ${why}`);
  if (m.summary) for (const g of matrixGoals(m.summary)) out.push(`${g.met ? 'met' : 'NOT MET'}: ${g.goal}`);
  return out;
}
