/**
 * The regression verdict: is a finished run's throughput different from the history of the same preset and
 * environment? Pure and deterministic (a seeded PRNG), so the same inputs always give the same verdict.
 *
 * The unit is the run: one cluster's TPS run (one host, one pgbench run) gives one statistic, the median of its
 * per-second TPS. Seconds inside a run are autocorrelated and share the run's fate (a busy machine, a checkpoint
 * schedule), so pooling them as if independent makes almost any difference "significant"; what a nightly must
 * beat is the run-to-run spread, and only whole runs measure it.
 * - The test is a prediction-interval t test on the per-run medians: t = (mean c - mean b) / (s_b * sqrt(1/m +
 *   1/n)), df n - 1 (n baseline runs, m candidate runs, s_b the baseline's standard deviation). Its one-sided
 *   false-positive rate is alpha exactly, with any n >= 2, when run-to-run noise is normal on its scale. It runs
 *   on the logs (exact when noise multiplies, as a slower machine's does) and on TPS itself (exact when it adds),
 *   and the larger p decides: on logs alone, normal noise at CV 20 % called 7 % of unchanged runs regressed; on
 *   TPS alone, log-normal noise called 7 % improved; with both, neither exceeds alpha under either, for 4-8
 *   points less power at -30 % than logs alone (bench/verdict-error-rates.ts; its figures are in docs/benchmarks.md).
 *   A rank or permutation test on runs cannot serve: with one candidate run its smallest p is 1/(n+1), so with
 *   n <= 18 baseline runs it could never reach alpha = 0.05. Its p is reported beside (`rankP`) for a reader.
 * - The effect is the ratio of the geometric means of the per-run medians, minus 1; its (1 - alpha) interval
 *   comes from a hierarchical bootstrap: resample the runs, then blocks of seconds within each drawn run (a
 *   circular block bootstrap keeps their autocorrelation). With one candidate run the interval covers the
 *   baseline's level and both sides' within-run noise, not the candidate's own run-to-run luck: that is the
 *   t test's job.
 * - A baseline run far outside the others (the same t test, each run against the rest, Bonferroni at
 *   `outlierAlpha`) is set aside and named: one disturbed run would otherwise widen the spread until nothing is
 *   detectable.
 * - A minimum effect size separates what matters from what is merely detectable.
 *
 * Verdicts: a change smaller than the minimum effect is `pass`; a larger drop is `regressed` (or a larger gain
 * `improved`) only when the one-sided t test gives p < alpha and the interval excludes no change; otherwise
 * `inconclusive`, as is a comparison with too little history. The baseline's run-to-run spread (CV and range of
 * the per-run medians) and the smallest drop it lets the verdict detect go with every verdict.
 */
import { fnv32RunTag } from '../common/core/ids';
import type { VerdictOptions } from '../common/input/regression-options';
import { VERDICT_METHOD, type ClassVerdict, type RunSpread, type SetAsideRun, type SideSummary, type Verdict, type VerdictKind } from '../common/results/verdict';
import {
  mannWhitneyLowerTail,
  mean,
  median,
  percentile,
  sampleStandardDeviation,
  seededRandom,
  studentTCdf,
  studentTQuantile,
} from '../common/core/stats';

// Held in constants: a global lookup per call is ~20x slower inside Jest's vm sandbox, where simulations run.
const { floor, log, exp } = Math;

/** One measured run of one storage class: a cluster's per-second TPS and its run-level TPS. */
export interface TpsUnit {
  runId: string;
  hostId: string;
  tps: number;
  tpsSeries: number[];
}

/** A seed from text (the run id): the run's short FNV-1a tag read as a number. */
export function seedFrom(text: string): number {
  return parseInt(fnv32RunTag(text), 36);
}

/** Block length of the circular block bootstrap: about n^(1/3), the usual rate for a median. */
export function blockLength(n: number): number {
  return Math.max(1, Math.round(Math.cbrt(n)));
}

/** One circular block bootstrap resample of a series (same length), written into `out`. */
export function blockResample(series: number[], random: () => number, out: Float64Array = new Float64Array(series.length)): Float64Array {
  const n = series.length;
  const length = blockLength(n);
  let filled = 0;
  while (filled < n) {
    const start = floor(random() * n);
    for (let i = 0; i < length && filled < n; i++) out[filled++] = series[(start + i) % n];
  }
  return out;
}

/** Median of the first n values of a scratch array (sorts them in place). */
function medianInPlace(values: Float64Array, n: number): number {
  const part = values.subarray(0, n).sort();
  const mid = n >> 1;
  return n % 2 ? part[mid] : (part[mid - 1] + part[mid]) / 2;
}

/**
 * Block-bootstrap medians of one run, drawn once: a hierarchical replicate then draws one of them for each run it
 * draws. The runs carry most of the variance; 256 draws describe one run's within-run spread well enough and keep
 * a verdict to milliseconds (drawing afresh cost 4,000 x n medians).
 */
const WITHIN_RUN_DRAWS = 256;

function withinRunLogMedians(series: number[], random: () => number, scratch: Float64Array): Float64Array {
  const logs = new Float64Array(WITHIN_RUN_DRAWS);
  for (let i = 0; i < WITHIN_RUN_DRAWS; i++) logs[i] = log(medianInPlace(blockResample(series, random, scratch), series.length));
  return logs;
}

/** One hierarchical replicate of a side's level (mean log of run medians): runs drawn with replacement, then a within-run draw of each. */
function replicateLogLevel(runs: Float64Array[], random: () => number): number {
  let sum = 0;
  for (let k = 0; k < runs.length; k++) sum += runs[floor(random() * runs.length)][floor(random() * WITHIN_RUN_DRAWS)];
  return sum / runs.length;
}

/**
 * (1 - alpha) percentile interval of the relative change of the geometric mean of run medians, by hierarchical
 * bootstrap: resample the runs, then blocks of seconds within each drawn run.
 */
export function bootstrapEffectInterval(
  baseline: number[][],
  candidate: number[][],
  options: { resamples: number; alpha: number },
  random: () => number,
): [number, number] {
  const scratch = new Float64Array(Math.max(...baseline.map((r) => r.length), ...candidate.map((r) => r.length)));
  const basePools = baseline.map((run) => withinRunLogMedians(run, random, scratch));
  const candPools = candidate.map((run) => withinRunLogMedians(run, random, scratch));
  const effects = new Float64Array(options.resamples);
  for (let i = 0; i < options.resamples; i++) {
    const b = replicateLogLevel(basePools, random);
    effects[i] = exp(replicateLogLevel(candPools, random) - b) - 1;
  }
  effects.sort();
  return [percentile(effects, options.alpha / 2), percentile(effects, 1 - options.alpha / 2)];
}

/**
 * The prediction-interval t test of candidate runs' statistics against baseline runs', on the scale given (logs or
 * TPS): t, its df (n - 1), the standard error and both one-sided p values. Needs at least 2 baseline values.
 */
export function predictionTTest(candidate: number[], baseline: number[]): { t: number; df: number; pLower: number; pUpper: number; se: number } {
  const n = baseline.length;
  const m = candidate.length;
  const diff = mean(candidate) - mean(baseline);
  const se = sampleStandardDeviation(baseline) * Math.sqrt(1 / m + 1 / n);
  // Identical baseline runs: any difference at all is infinitely many of their (zero) spreads.
  const t = se > 0 ? diff / se : diff === 0 ? 0 : diff * Infinity;
  const df = n - 1;
  const pLower = studentTCdf(t, df);
  return { t, df, pLower, pUpper: 1 - pLower, se };
}

/** Mann-Whitney U of `a` over `b` (pairs where a > b, ties half) and the exact one-sided p in each direction. */
export function mannWhitneyOverRuns(a: number[], b: number[]): { u: number; pLower: number; pUpper: number } {
  let u = 0;
  for (const x of a) for (const y of b) u += x > y ? 1 : x === y ? 0.5 : 0;
  const size = a.length * b.length;
  return {
    u,
    pLower: mannWhitneyLowerTail(u, a.length, b.length),
    pUpper: mannWhitneyLowerTail(size - u, a.length, b.length),
  };
}

/**
 * Indices of baseline values kept after setting aside outliers: repeatedly, the value whose leave-one-out
 * prediction t test against the rest is most extreme goes when its two-sided p is below alpha / (values left)
 * (Bonferroni) and it lies at least `minDeviation` (a fraction) from the rest's geometric mean. The second condition
 * matters on a quiet machine: with a run-to-run spread of 0.3 %, a run 3 % off is statistically far, yet it cannot
 * hide a change of the size that counts, and dropping it may leave too few runs for any verdict.
 * Needs 3 others to judge one, so it never goes below 3 values; alpha 0 keeps everything.
 */
export function outlierScreen(logs: number[], alpha: number, minDeviation = 0): { kept: number[]; dropped: { index: number; p: number }[] } {
  const kept = logs.map((_, i) => i);
  const dropped: { index: number; p: number }[] = [];
  const floor = Math.log(1 + minDeviation);
  while (alpha > 0 && kept.length >= 4) {
    let worst = { index: -1, p: 1 };
    for (const i of kept) {
      const others = kept.filter((j) => j !== i).map((j) => logs[j]);
      if (Math.abs(logs[i] - mean(others)) < floor) continue;
      const test = predictionTTest([logs[i]], others);
      const p = Math.min(1, 2 * Math.min(test.pLower, test.pUpper));
      if (p < worst.p) worst = { index: i, p };
    }
    if (worst.index < 0 || worst.p >= alpha / kept.length) break;
    kept.splice(kept.indexOf(worst.index), 1);
    dropped.push(worst);
  }
  return { kept, dropped };
}

/** The run-to-run spread of per-run statistics. */
export function runSpread(values: number[]): RunSpread | null {
  if (values.length === 0) return null;
  const m = mean(values);
  return {
    cv: values.length >= 2 && m > 0 ? round(sampleStandardDeviation(values) / m, 4) : null,
    min: round(Math.min(...values), 1),
    max: round(Math.max(...values), 1),
  };
}

interface MeasuredRun {
  unit: TpsUnit;
  median: number;
}

function side(runs: MeasuredRun[]): SideSummary {
  const medians = runs.map((r) => r.median);
  return {
    runs: runs.length,
    samples: runs.reduce((s, r) => s + r.unit.tpsSeries.length, 0),
    runMedians: medians.map((m) => round(m, 1)),
    medianTps: nullableRound(median(medians)),
    geometricMeanTps: runs.length ? round(Math.exp(mean(medians.map(Math.log))), 1) : null,
    spread: runSpread(medians),
  };
}

/** Runs with enough seconds to count (and, for a baseline, some throughput), and the ones set aside. */
function measuredRuns(units: TpsUnit[], options: VerdictOptions, label: string, needsThroughput: boolean) {
  const kept: MeasuredRun[] = [];
  const setAside: SetAsideRun[] = [];
  for (const unit of units) {
    const m = median(unit.tpsSeries);
    const base = { runId: unit.runId, hostId: unit.hostId, medianTps: m === null ? null : round(m, 1) };
    if (unit.tpsSeries.length < options.minSamples)
      setAside.push({ ...base, why: `${label} run has ${unit.tpsSeries.length} per-second samples; a run needs at least ${options.minSamples}` });
    else if (needsThroughput && (m as number) <= 0) setAside.push({ ...base, why: `${label} run measured no throughput` });
    else kept.push({ unit, median: m as number });
  }
  return { kept, setAside };
}

/** The verdict for one storage class: candidate runs against baseline runs. */
export function compareClass(
  className: string,
  baselineUnits: TpsUnit[],
  candidateUnits: TpsUnit[],
  options: VerdictOptions,
  random: () => number,
): ClassVerdict {
  const base = measuredRuns(baselineUnits, options, 'baseline', true);
  const cand = measuredRuns(candidateUnits, options, 'this', false);
  const setAside = [...base.setAside, ...cand.setAside];
  // A run closer to the others than half the smallest effect that counts is kept, however tight the spread.
  const screen = outlierScreen(base.kept.map((r) => Math.log(r.median)), options.outlierAlpha, options.minEffect / 2);
  for (const { index, p } of screen.dropped) {
    const r = base.kept[index];
    setAside.push({
      runId: r.unit.runId,
      hostId: r.unit.hostId,
      medianTps: round(r.median, 1),
      why: `baseline outlier: ${fmt(r.median)} TPS is beyond the other runs' spread (p = ${pValueText(p)})`,
    });
  }
  const baseRuns = screen.kept.map((i) => base.kept[i]);
  const baseline = side(baseRuns);
  const candidate = side(cand.kept);
  const none = { effect: null, ci: null, u: null, z: null, pValue: null, t: null, tLinear: null, df: null, rankP: null, detectableDrop: null };
  const inconclusive = (reason: string): ClassVerdict => ({
    className,
    verdict: 'inconclusive',
    reason: `${reason}${setAsideText(setAside)}`,
    baseline,
    candidate,
    ...none,
    setAside,
  });
  if (candidateUnits.length === 0) return inconclusive('the run measured no TPS for this class');
  if (candidate.runs === 0) return inconclusive(`no run of this class has at least ${options.minSamples} per-second samples`);
  // A spread needs two runs, whatever the options say.
  const needed = Math.max(2, options.minBaselineRuns);
  if (baseline.runs < needed)
    return inconclusive(
      `${baseline.runs} usable baseline run${baseline.runs === 1 ? '' : 's'} of this preset and environment; a verdict needs at least ${needed}`,
    );

  const baseMedians = baseRuns.map((r) => r.median);
  const candMedians = cand.kept.map((r) => r.median);
  const baseLogs = baseMedians.map(Math.log);
  const candLogs = candMedians.map(Math.log);
  const logTest = predictionTTest(candLogs, baseLogs);
  const linearTest = predictionTTest(candMedians, baseMedians);
  const effect = Math.exp(mean(candLogs) - mean(baseLogs)) - 1;
  const ci = bootstrapEffectInterval(
    baseRuns.map((r) => r.unit.tpsSeries),
    cand.kept.map((r) => r.unit.tpsSeries),
    options,
    random,
  );
  const rank = mannWhitneyOverRuns(candMedians, baseMedians);
  const drop = effect < 0;
  const pValue = drop ? Math.max(logTest.pLower, linearTest.pLower) : Math.max(logTest.pUpper, linearTest.pUpper);
  const rankP = drop ? rank.pLower : rank.pUpper;
  // Where both tests start to call a drop, relative to the baseline's geometric mean (as the effect is); at most all of it.
  const tCritical = studentTQuantile(options.alpha, logTest.df);
  const detectableDrop = Math.min(
    1,
    Math.max(
      options.minEffect,
      1 - Math.exp(tCritical * logTest.se),
      1 - (mean(baseMedians) + tCritical * linearTest.se) / (baseline.geometricMeanTps as number),
    ),
  );
  const spread = baseline.spread as RunSpread;
  const numbers =
    `TPS ${fmt(candidate.geometricMeanTps as number)} vs ${fmt(baseline.geometricMeanTps as number)} (effect ${pct(effect)}, ` +
    `${pct1(1 - options.alpha)} CI [${pct(ci[0])}, ${pct(ci[1])}]; t = ${tText(logTest.t)} on logs, ${tText(linearTest.t)} on TPS, ` +
    `df ${logTest.df}, p = ${pValueText(pValue)}; rank p = ${pValueText(rankP)}; baseline ${baseline.runs} runs, ` +
    `run-to-run CV ${spread.cv === null ? '–' : pct1(spread.cv)}, range ${fmt(spread.min)}-${fmt(spread.max)}; ` +
    `a drop of ${pct1(detectableDrop)} or more would count)`;
  const significant = pValue < options.alpha;
  const excludesNone = drop ? ci[1] < 0 : ci[0] > 0;
  let verdict: VerdictKind;
  let why: string;
  const change = drop ? 'drop' : 'gain';
  if (Math.abs(effect) < options.minEffect) {
    verdict = 'pass';
    why = `change within the minimum effect of ${pct1(options.minEffect)}`;
  } else if (significant && excludesNone) {
    verdict = drop ? 'regressed' : 'improved';
    why = `a ${change} of at least ${pct1(options.minEffect)}, beyond the baseline's run-to-run noise`;
  } else {
    verdict = 'inconclusive';
    why = significant
      ? `a ${change} of at least ${pct1(options.minEffect)}, but the interval includes no change`
      : `a ${change} of at least ${pct1(options.minEffect)}, but within the baseline's run-to-run noise at alpha ${options.alpha}`;
  }
  return {
    className,
    verdict,
    reason: `${why}: ${numbers}${setAsideText(setAside)}`,
    baseline,
    candidate,
    effect: round(effect, 4),
    ci: [round(ci[0], 4), round(ci[1], 4)],
    u: rank.u,
    z: null,
    pValue,
    t: round(logTest.t, 3),
    tLinear: round(linearTest.t, 3),
    df: logTest.df,
    rankP,
    detectableDrop: round(detectableDrop, 4),
    setAside,
  };
}

/** The run's verdict: the worst of its classes (regressed, then inconclusive, then improved, then pass). */
export function overallVerdict(classes: ClassVerdict[]): VerdictKind {
  if (classes.length === 0) return 'inconclusive';
  for (const kind of ['regressed', 'inconclusive', 'improved'] as const)
    if (classes.some((c) => c.verdict === kind)) return kind;
  return 'pass';
}

/** Compares every class the candidate measured with the same class (same kind) in the baseline runs. */
export function decideVerdict(input: {
  candidate: Record<string, { kind: string; units: TpsUnit[] }>;
  baseline: { runId: string; classes: Record<string, { kind: string; units: TpsUnit[] }> }[];
  pinned: boolean;
  options: VerdictOptions;
  seed: number;
}): Verdict {
  const random = seededRandom(input.seed);
  const classes = Object.entries(input.candidate)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, cls]) => {
      const units = input.baseline.flatMap((run) => (run.classes[name]?.kind === cls.kind ? run.classes[name].units : []));
      return compareClass(name, units, cls.units, input.options, random);
    });
  const verdict = overallVerdict(classes);
  const summary = classes.map((c) => `${c.className}: ${c.verdict}: ${c.reason}`).join('\n');
  return {
    verdict,
    method: VERDICT_METHOD,
    classes,
    baselineRunIds: input.baseline.map((b) => b.runId),
    pinned: input.pinned,
    options: input.options,
    summary: summary || 'no storage class to compare',
  };
}

function setAsideText(runs: SetAsideRun[]): string {
  return runs.length ? `; set aside: ${runs.map((r) => `${r.hostId} (${r.why})`).join('; ')}` : '';
}

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

function nullableRound(v: number | null): number | null {
  return v === null ? null : round(v, 1);
}

function fmt(v: number): string {
  return v.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

function pct(v: number): string {
  return `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)} %`;
}

function pct1(v: number): string {
  return `${round(v * 100, 1)} %`;
}

/**
 * A t statistic as the reason prints it. Identical baseline runs (a modelled device held at its budget gives them)
 * leave no spread to divide by: any difference is then an infinite t, printed as one, not as "-Infinity".
 */
export function tText(t: number): string {
  return Number.isFinite(t) ? t.toFixed(2) : t < 0 ? '-∞' : '∞';
}

function pValueText(p: number): string {
  return p < 0.0001 ? p.toExponential(1) : p.toFixed(4);
}
