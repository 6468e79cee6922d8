/**
 * Options of the regression verdict (see analysis/regression-verdict.ts), with defaults and checks. Pure, so the
 * nightly workflow rejects bad options before it runs anything.
 */
import type { SpecProblem } from '../core/errors';

/** The preset a nightly regression run uses unless its input names another. */
export const NIGHTLY_PRESET = 'nightly';

export interface VerdictOptions {
  /** Smallest relative change of TPS that counts as a change (0.15 = 15 %). */
  minEffect: number;
  /**
   * Significance level of each direction: the one-sided t test over runs must give p < alpha, so under no change
   * at most alpha of runs are called regressed (and at most alpha improved); the interval is a (1 - alpha) interval.
   */
  alpha: number;
  /** Hierarchical bootstrap resamples of the interval. */
  resamples: number;
  /** Fewest baseline runs (clusters of the class, outliers left out) for any verdict but inconclusive; at least 2. */
  minBaselineRuns: number;
  /** Fewest per-second samples a run needs to count (its statistic is their median). */
  minSamples: number;
  /** The most recent baseline runs compared against (a pinned baseline is used whole). */
  maxBaselineRuns: number;
  /** Family-wise level at which a baseline run far outside the others is set aside (0 keeps every run). */
  outlierAlpha: number;
}

/**
 * Defaults for one machine shared with other work, where undisturbed runs of emulated gp3 spread by about 10 %
 * (CV of per-run TPS): a change must be at least 15 % to count. At least 5 baseline runs: the t test's threshold
 * grows fast below that (df <= 3), so on synthetic histories at CV 10 % a 30 % drop was caught in 52 % of runs
 * with 3 baseline runs, 70 % with 5, 85 % with 8 and 86 % with 10; 5 gives a new environment verdicts after five
 * runs, and the baseline then grows to maxBaselineRuns.
 */
export const DEFAULT_VERDICT_OPTIONS: VerdictOptions = {
  minEffect: 0.15,
  alpha: 0.05,
  resamples: 4000,
  minBaselineRuns: 5,
  minSamples: 5,
  maxBaselineRuns: 10,
  outlierAlpha: 0.01,
};

/** Options that are fractions, checked above; the rest are counts. */
const FRACTIONS = ['minEffect', 'alpha', 'outlierAlpha'];

/** Every problem with verdict options, as `regression.<field>` paths. */
export function verdictOptionProblems(partial: unknown): SpecProblem[] {
  if (partial === undefined || partial === null) return [];
  if (typeof partial !== 'object' || Array.isArray(partial))
    return [{ path: 'regression', message: 'must be an object, for example {"minEffect":0.15}' }];
  const problems: SpecProblem[] = [];
  const known = Object.keys(DEFAULT_VERDICT_OPTIONS);
  for (const [key, value] of Object.entries(partial)) {
    const path = `regression.${key}`;
    if (!known.includes(key)) problems.push({ path, message: `unknown field; use one of: ${known.join(', ')}` });
    else if (typeof value !== 'number' || !Number.isFinite(value)) problems.push({ path, message: 'must be a number' });
    else if (key === 'minEffect' && !(value > 0 && value < 1)) problems.push({ path, message: 'must be between 0 and 1 (0.15 = 15 %)' });
    else if (key === 'alpha' && !(value > 0 && value < 0.5)) problems.push({ path, message: 'must be between 0 and 0.5 (0.05 is usual)' });
    else if (key === 'outlierAlpha' && !(value >= 0 && value < 0.5))
      problems.push({ path, message: 'must be from 0 (keep every run) to below 0.5 (0.01 is the default)' });
    else if (key === 'minBaselineRuns' && (!Number.isInteger(value) || value < 2 || value > 100_000))
      problems.push({ path, message: 'must be a whole number from 2 (a run-to-run spread needs two runs) to 100000' });
    else if (FRACTIONS.includes(key)) continue;
    else if (!Number.isInteger(value) || value < 1 || value > 100_000)
      problems.push({ path, message: 'must be a whole number from 1 to 100000' });
  }
  return problems;
}

/** Options with defaults filled in; the caller has checked them with verdictOptionProblems. */
export function verdictOptions(partial: Partial<VerdictOptions> = {}): VerdictOptions {
  return { ...DEFAULT_VERDICT_OPTIONS, ...partial };
}
