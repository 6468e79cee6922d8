/**
 * The regression verdict: is a finished run's throughput different from the history of the same preset and
 * environment? Pure and deterministic (a seeded PRNG), so the same inputs always give the same verdict.
 *
 * The unit of measurement is one cluster's TPS run (one host, one pgbench run). Per-second samples inside a run
 * drift (checkpoints, the cache), and whole runs differ too (a busy machine):
 * - the statistic is a two-level median: the median over runs of each run's median per-second TPS, so one
 *   disturbed run or a few slow seconds do not move it;
 * - its uncertainty comes from a stratified block bootstrap: every run is kept and its seconds are resampled in
 *   blocks (a circular block bootstrap keeps their autocorrelation); resampling the runs themselves is useless
 *   with the 3-10 runs a nightly history holds (with 3, one disturbed run becomes the median in a quarter of
 *   the resamples);
 * - the effect is the candidate's relative change of that median, with a percentile confidence interval;
 * - a Mann-Whitney U test of the per-second samples is a second, rank-based opinion; both must agree;
 * - a minimum effect size, larger than the run-to-run spread of the machine, separates what matters from what
 *   is merely detectable (that spread is reported with every verdict: the baseline runs' own range).
 *
 * Verdicts: a change smaller than the minimum effect is `pass`; a larger drop is `regressed` (or a larger gain
 * `improved`) only when the interval excludes no change and p < alpha; otherwise `inconclusive`, as is a
 * comparison with too little history.
 */
import { runTag } from '../../common/ids';
import type { VerdictOptions } from '../../common/regression';
import { median } from './aggregate';

/** One measured run of one storage class: a cluster's per-second TPS and its run-level TPS. */
export interface TpsUnit {
  runId: string;
  hostId: string;
  tps: number;
  tpsSeries: number[];
}

export const VERDICTS = ['pass', 'regressed', 'improved', 'inconclusive'] as const;
export type VerdictKind = (typeof VERDICTS)[number];

export interface SideSummary {
  /** Runs (clusters) and per-second samples on this side. */
  runs: number;
  samples: number;
  /** Median per-second TPS of each run, and the median of those. */
  runMedians: number[];
  medianTps: number | null;
}

export interface ClassVerdict {
  className: string;
  verdict: VerdictKind;
  /** Why, in words, with the numbers. */
  reason: string;
  baseline: SideSummary;
  candidate: SideSummary;
  /** Candidate over baseline minus 1 (-0.5: half the throughput). */
  effect: number | null;
  /** (1 - alpha) bootstrap interval of the effect. */
  ci: [number, number] | null;
  /** Mann-Whitney U of candidate seconds over baseline seconds, its z and two-sided p. */
  u: number | null;
  z: number | null;
  pValue: number | null;
}

export interface Verdict {
  verdict: VerdictKind;
  classes: ClassVerdict[];
  /** Runs compared against, and whether they were pinned. */
  baselineRunIds: string[];
  pinned: boolean;
  options: VerdictOptions;
  /** One line per class with the numbers: what the failure message and the report show. */
  summary: string;
}

/** A small, fast PRNG (mulberry32): the same seed gives the same resamples, so verdicts are reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed from text (the run id): the run's short FNV-1a tag read as a number. */
export function seedFrom(text: string): number {
  return parseInt(runTag(text), 36);
}

/** Block length of the circular block bootstrap: about n^(1/3), the usual rate for a median. */
export function blockLength(n: number): number {
  return Math.max(1, Math.round(Math.cbrt(n)));
}

/** One circular block bootstrap resample of a series (same length). */
export function blockResample(series: number[], random: () => number): number[] {
  const n = series.length;
  const length = blockLength(n);
  const out: number[] = [];
  while (out.length < n) {
    const start = Math.floor(random() * n);
    for (let i = 0; i < length && out.length < n; i++) out.push(series[(start + i) % n]);
  }
  return out;
}

/** Median over runs of each run's median: robust to one disturbed run and to a slow second or two. */
export function twoLevelMedian(runs: number[][]): number | null {
  return median(runs.map((r) => median(r)).filter((m): m is number => m !== null));
}

/** One stratified bootstrap replicate of the two-level median: every run kept, its seconds resampled in blocks. */
export function bootstrapReplicate(runs: number[][], random: () => number): number {
  return median(runs.map((run) => median(blockResample(run, random)) as number)) as number;
}

/** Percentile of sorted values (linear interpolation). */
export function percentile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** (1 - alpha) percentile interval of the relative change of the two-level median, by stratified block bootstrap. */
export function bootstrapEffectInterval(
  baseline: number[][],
  candidate: number[][],
  options: { resamples: number; alpha: number },
  random: () => number,
): [number, number] {
  const effects: number[] = [];
  for (let i = 0; i < options.resamples; i++) {
    const b = bootstrapReplicate(baseline, random);
    const c = bootstrapReplicate(candidate, random);
    if (b > 0) effects.push(c / b - 1);
  }
  effects.sort((x, y) => x - y);
  return [percentile(effects, options.alpha / 2), percentile(effects, 1 - options.alpha / 2)];
}

/** Standard normal CDF (Abramowitz-Stegun 7.1.26 erf, error < 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/**
 * Mann-Whitney U of `a` over `b` (U counts pairs where a > b, ties half), with the normal approximation,
 * tie correction and continuity correction; two-sided p.
 */
export function mannWhitneyU(a: number[], b: number[]): { u: number; z: number; p: number } {
  const n1 = a.length;
  const n2 = b.length;
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  const ranks = new Array<number>(all.length);
  let tieTerm = 0;
  for (let i = 0; i < all.length; ) {
    let j = i;
    while (j + 1 < all.length && all[j + 1].v === all[i].v) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) ranks[k] = rank;
    const t = j - i + 1;
    tieTerm += t ** 3 - t;
    i = j + 1;
  }
  const rankSumA = all.reduce((s, x, i) => (x.g === 0 ? s + ranks[i] : s), 0);
  const u = rankSumA - (n1 * (n1 + 1)) / 2;
  const mean = (n1 * n2) / 2;
  const n = n1 + n2;
  const variance = ((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1)));
  if (variance <= 0) return { u, z: 0, p: 1 };
  const diff = u - mean;
  const z = (diff - Math.sign(diff) * 0.5) / Math.sqrt(variance);
  return { u, z, p: Math.min(1, 2 * (1 - normalCdf(Math.abs(z)))) };
}

function side(units: TpsUnit[]): SideSummary {
  const series = units.map((u) => u.tpsSeries);
  return {
    runs: units.length,
    samples: series.reduce((s, r) => s + r.length, 0),
    runMedians: series.map((r) => round(median(r) ?? 0, 1)),
    medianTps: nullableRound(twoLevelMedian(series)),
  };
}

/** The verdict for one storage class: candidate runs against baseline runs. */
export function compareClass(
  className: string,
  baselineUnits: TpsUnit[],
  candidateUnits: TpsUnit[],
  options: VerdictOptions,
  random: () => number,
): ClassVerdict {
  const baseUnits = baselineUnits.filter((u) => u.tpsSeries.length > 0);
  const candUnits = candidateUnits.filter((u) => u.tpsSeries.length > 0);
  const baseline = side(baseUnits);
  const candidate = side(candUnits);
  const none = { effect: null, ci: null, u: null, z: null, pValue: null };
  const inconclusive = (reason: string): ClassVerdict => ({ className, verdict: 'inconclusive', reason, baseline, candidate, ...none });
  if (baseline.runs < options.minBaselineRuns)
    return inconclusive(
      `${baseline.runs} baseline run${baseline.runs === 1 ? '' : 's'} of this preset and environment; a verdict needs at least ${options.minBaselineRuns}`,
    );
  if (candidate.runs === 0) return inconclusive('the run measured no TPS for this class');
  if (baseline.samples < options.minSamples || candidate.samples < options.minSamples)
    return inconclusive(
      `too few per-second samples (baseline ${baseline.samples}, this run ${candidate.samples}; at least ${options.minSamples} each)`,
    );

  const baseSeries = baseUnits.map((u) => u.tpsSeries);
  const candSeries = candUnits.map((u) => u.tpsSeries);
  const baseMedian = twoLevelMedian(baseSeries) as number;
  const candMedian = twoLevelMedian(candSeries) as number;
  if (baseMedian <= 0) return inconclusive('the baseline median TPS is 0');
  const effect = candMedian / baseMedian - 1;
  const ci = bootstrapEffectInterval(baseSeries, candSeries, options, random);
  const mw = mannWhitneyU(candSeries.flat(), baseSeries.flat());
  const numbers = `median TPS ${fmt(candMedian)} vs ${fmt(baseMedian)} (effect ${pct(effect)}, ${pct1(1 - options.alpha)} CI [${pct(ci[0])}, ${pct(ci[1])}], Mann-Whitney p = ${pValueText(mw.p)}, n = ${candidate.runs} run/${candidate.samples} s vs ${baseline.runs} runs/${baseline.samples} s; baseline runs ${fmt(Math.min(...baseline.runMedians))}-${fmt(Math.max(...baseline.runMedians))})`;
  const significantDrop = ci[1] < 0 && mw.p < options.alpha;
  const significantGain = ci[0] > 0 && mw.p < options.alpha;
  let verdict: VerdictKind;
  let why: string;
  if (Math.abs(effect) < options.minEffect) {
    verdict = 'pass';
    why = `change within the minimum effect of ${pct1(options.minEffect)}`;
  } else if (effect < 0) {
    verdict = significantDrop ? 'regressed' : 'inconclusive';
    why = significantDrop
      ? `a drop of at least ${pct1(options.minEffect)}, significant`
      : `a drop of at least ${pct1(options.minEffect)}, but not significant at alpha ${options.alpha} (the noise is as large)`;
  } else {
    verdict = significantGain ? 'improved' : 'inconclusive';
    why = significantGain
      ? `a gain of at least ${pct1(options.minEffect)}, significant`
      : `a gain of at least ${pct1(options.minEffect)}, but not significant at alpha ${options.alpha}`;
  }
  return {
    className,
    verdict,
    reason: `${why}: ${numbers}`,
    baseline,
    candidate,
    effect: round(effect, 4),
    ci: [round(ci[0], 4), round(ci[1], 4)],
    u: mw.u,
    z: round(mw.z, 3),
    pValue: mw.p,
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
    classes,
    baselineRunIds: input.baseline.map((b) => b.runId),
    pinned: input.pinned,
    options: input.options,
    summary: summary || 'no storage class to compare',
  };
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

function pValueText(p: number): string {
  return p < 0.0001 ? p.toExponential(1) : p.toFixed(4);
}
