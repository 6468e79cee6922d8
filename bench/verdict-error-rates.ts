/**
 * The regression verdict's error rates on synthetic histories: n baseline runs and one candidate run of 30 s each,
 * per-second TPS an AR(1) series around the run's level, run levels drawn with a run-to-run CV (10 % and 20 %),
 * the candidate's level unchanged or 30 % lower. Every comparison is the real decideVerdict with the default
 * options; prints, per case, the share of verdicts of each kind with a 95 % interval, and the targets: under no
 * change at most alpha `regressed`, under a 30 % drop at least 90 %. Seeded: a rerun prints the same.
 *   node dist/bench/verdict-error-rates.js [--comparisons 1000] [--seed 1]
 */
import { parseArgs } from 'node:util';
import { decideVerdict, type TpsUnit } from '../analysis/regression-verdict';
import type { Verdict, VerdictKind } from '../common/results/verdict';
import { DEFAULT_VERDICT_OPTIONS, type VerdictOptions } from '../common/input/regression-options';
import { normalCdf, seededRandom, studentTQuantile } from '../common/core/stats';
import { printTable } from '../client/table';

/** How run levels scatter around their mean: log-normal (what the t test assumes) or normal (skewed in logs). */
export type RunNoise = 'lognormal' | 'normal';

export interface SimulationCase {
  baselineRuns: number;
  candidateRuns: number;
  /** Run-to-run coefficient of variation of the run levels. */
  runCv: number;
  runNoise: RunNoise;
  /** The candidate's true relative change (-0.3: 30 % slower). */
  trueEffect: number;
  seconds: number;
  /** Per-second noise around the run's level: its CV and lag-1 autocorrelation. */
  secondCv: number;
  secondPhi: number;
  comparisons: number;
}

/** Per-second structure of a short nightly run on this machine (pgbench -P 1, checkpoints inside): CV 8 %, lag-1 0.6. */
export const SECOND_NOISE = { seconds: 30, secondCv: 0.08, secondPhi: 0.6 };

/** Mean TPS of the synthetic baseline (only ratios matter). */
const LEVEL = 5000;

// Held in constants: a global lookup per call is ~20x slower inside Jest's vm sandbox, where the unit test runs this.
const { sqrt, log, cos, exp, max, round, PI } = Math;

/** A standard normal draw (Box-Muller). */
function normal(random: () => number): number {
  return sqrt(-2 * log(1 - random())) * cos(2 * PI * random());
}

/** A run level with the given CV around `mean`: log-normal, or normal held above 5 % of the mean. */
function runLevel(mean: number, c: SimulationCase, random: () => number): number {
  if (c.runNoise === 'normal') return max(0.05 * mean, mean * (1 + c.runCv * normal(random)));
  const sigma = sqrt(log(1 + c.runCv ** 2));
  return mean * exp(sigma * normal(random) - sigma ** 2 / 2);
}

/** One run's per-second TPS: a stationary AR(1) relative deviation around its level, never negative. */
function runSeries(level: number, c: SimulationCase, random: () => number): number[] {
  const innovation = c.secondCv * sqrt(1 - c.secondPhi ** 2);
  let e = c.secondCv * normal(random);
  const series: number[] = [];
  for (let i = 0; i < c.seconds; i++) {
    series.push(max(0, round(level * (1 + e))));
    e = c.secondPhi * e + innovation * normal(random);
  }
  return series;
}

function units(runId: string, count: number, mean: number, c: SimulationCase, random: () => number): TpsUnit[] {
  return Array.from({ length: count }, (_, i) => {
    const tpsSeries = runSeries(runLevel(mean, c, random), c, random);
    return { runId, hostId: `${runId}-gp3-${i}`, tps: tpsSeries.reduce((a, b) => a + b, 0) / tpsSeries.length, tpsSeries };
  });
}

/** The verdict under test: the real one unless a test passes a broken one to prove the rates can fail. */
export type Decide = typeof decideVerdict;

/** Counts of each verdict over `comparisons` fresh synthetic histories of one case (seeded). */
export function simulateVerdicts(
  c: SimulationCase,
  seed: number,
  options: VerdictOptions = DEFAULT_VERDICT_OPTIONS,
  decide: Decide = decideVerdict,
): Record<VerdictKind, number> {
  const random = seededRandom(seed);
  const counts: Record<VerdictKind, number> = { pass: 0, regressed: 0, improved: 0, inconclusive: 0 };
  for (let k = 0; k < c.comparisons; k++) {
    const baseline = Array.from({ length: c.baselineRuns }, (_, i) => ({
      runId: `b${i}`,
      classes: { gp3: { kind: 'emulated-ebs', units: units(`b${i}`, 1, LEVEL, c, random) } },
    }));
    const candidate = { gp3: { kind: 'emulated-ebs', units: units('c', c.candidateRuns, LEVEL * (1 + c.trueEffect), c, random) } };
    const verdict: Verdict = decide({ candidate, baseline, pinned: false, options, seed: Math.floor(random() * 2 ** 32) });
    counts[verdict.verdict]++;
  }
  return counts;
}

/** 95 % Wilson interval of a proportion. */
export function wilsonInterval(successes: number, n: number): [number, number] {
  const z = 1.959964;
  const p = successes / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/**
 * The most any level-alpha test can catch of a true change when run noise is log-normal: the one-sided z test on
 * the log of the candidate's mean level (uniformly most powerful there), with the noise known exactly, infinitely
 * many baseline runs and no within-run noise, all of which only flatter it.
 */
export function powerCeiling(c: Pick<SimulationCase, 'runCv' | 'candidateRuns' | 'trueEffect'>, alpha: number): number {
  const sigma = sqrt(log(1 + c.runCv ** 2)) / sqrt(c.candidateRuns);
  // Student's t with 1e9 degrees of freedom is the normal distribution to 6 digits.
  return normalCdf(Math.abs(log(1 + c.trueEffect)) / sigma + studentTQuantile(alpha, 1e9));
}

/** Whether a measured share meets its target: yes, no, or "within noise" when its 95 % interval reaches the target. */
export function targetMet(successes: number, n: number, target: { atMost?: number; atLeast?: number }): 'yes' | 'no' | 'within noise' {
  const rate = successes / n;
  const [lo, hi] = wilsonInterval(successes, n);
  if (target.atMost !== undefined) return rate <= target.atMost ? 'yes' : lo <= target.atMost ? 'within noise' : 'no';
  return rate >= (target.atLeast as number) ? 'yes' : hi >= (target.atLeast as number) ? 'within noise' : 'no';
}

function main(): void {
  const { values } = parseArgs({ options: { comparisons: { type: 'string', default: '1000' }, seed: { type: 'string', default: '1' } } });
  const comparisons = Number(values.comparisons);
  const seed = Number(values.seed);
  const options = DEFAULT_VERDICT_OPTIONS;
  const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
  console.log(
    `verdict error rates: ${comparisons} comparisons per case, ${SECOND_NOISE.seconds} s runs (per-second CV ${pct(SECOND_NOISE.secondCv)}, AR(1) lag-1 ${SECOND_NOISE.secondPhi}), default options (alpha ${options.alpha}, minEffect ${options.minEffect}, minBaselineRuns ${options.minBaselineRuns}, ${options.resamples} resamples), seed ${seed}`,
  );
  // The cases of the issue (1 candidate run; the default minimum and 10 baseline runs), then what a second
  // candidate cluster (clustersPerClass 2) buys.
  const cases: Omit<SimulationCase, 'trueEffect' | 'comparisons' | 'seconds' | 'secondCv' | 'secondPhi'>[] = [];
  for (const runNoise of ['lognormal', 'normal'] as const)
    for (const runCv of [0.1, 0.2])
      for (const baselineRuns of [...new Set([options.minBaselineRuns, 10])]) cases.push({ runNoise, runCv, baselineRuns, candidateRuns: 1 });
  for (const runCv of [0.1, 0.2]) cases.push({ runNoise: 'lognormal', runCv, baselineRuns: 10, candidateRuns: 2 });
  const rows: string[][] = [];
  const falseAlarms: { rate: number; met: string }[] = [];
  const power: { rate: number; met: string; ceiling: number | null; candidateRuns: number }[] = [];
  let caseSeed = seed;
  const started = Date.now();
  for (const base of cases)
    for (const trueEffect of [0, -0.3]) {
      const c: SimulationCase = { ...base, trueEffect, comparisons, ...SECOND_NOISE };
      const counts = simulateVerdicts(c, caseSeed++ * 7919, options);
      const rate = (k: VerdictKind) => pct(counts[k] / comparisons);
      const [lo, hi] = wilsonInterval(counts.regressed, comparisons);
      const noChange = trueEffect === 0;
      const met = targetMet(counts.regressed, comparisons, noChange ? { atMost: options.alpha } : { atLeast: 0.9 });
      // The ceiling is exact for log-normal noise only (a pure shift in logs).
      const ceiling = !noChange && c.runNoise === 'lognormal' ? powerCeiling(c, options.alpha) : null;
      if (noChange) falseAlarms.push({ rate: counts.regressed / comparisons, met });
      else power.push({ rate: counts.regressed / comparisons, met, ceiling, candidateRuns: c.candidateRuns });
      rows.push([
        c.runNoise,
        pct(c.runCv),
        String(c.baselineRuns),
        String(c.candidateRuns),
        noChange ? 'none' : '-30 %',
        `${rate('regressed')} [${pct(lo)}, ${pct(hi)}]`,
        rate('improved'),
        rate('pass'),
        rate('inconclusive'),
        noChange ? `<= ${pct(options.alpha)}` : '>= 90.0 %',
        met,
        ceiling === null ? '–' : pct(ceiling),
      ]);
    }
  printTable(
    ['run noise', 'run CV', 'baseline runs', 'candidate runs', 'true change', 'regressed (95 % CI)', 'improved', 'pass', 'inconclusive', 'target', 'met', 'best any test can do'],
    rows,
  );
  // The time goes to stderr: stdout stays the same from run to run.
  console.error(`(${((Date.now() - started) / 1000).toFixed(0)} s)`);
  const range = (values: number[]) => `${pct(Math.min(...values))}-${pct(Math.max(...values))}`;
  const held = falseAlarms.filter((f) => f.met !== 'no').length;
  const caught = power.filter((p) => p.met !== 'no').length;
  const beyondReach = power.filter((p) => p.met === 'no' && p.ceiling !== null && p.ceiling < 0.9).length;
  console.log(
    `summary: regressed under no change ${range(falseAlarms.map((f) => f.rate))} (target <= ${pct(options.alpha)}: ${held} of ${falseAlarms.length} cases met or within noise); ` +
      `regressed under a 30 % drop ${range(power.filter((p) => p.candidateRuns === 1).map((p) => p.rate))} with 1 candidate run, ` +
      `${range(power.filter((p) => p.candidateRuns > 1).map((p) => p.rate))} with 2 (target >= 90.0 %: ${caught} of ${power.length} met or within noise; ` +
      `${beyondReach} of the misses beyond what any test can do)`,
  );
}

if (require.main === module) main();
