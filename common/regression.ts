/**
 * Options of the regression verdict (see activities/control/verdict.ts), with defaults and checks. Pure, so the
 * nightly workflow rejects bad options before it runs anything.
 */
import type { SpecProblem } from './errors';

/** The preset a nightly regression run uses unless its input names another. */
export const NIGHTLY_PRESET = 'nightly';

export interface VerdictOptions {
  /** Smallest relative change of median TPS that counts as a change (0.15 = 15 %). */
  minEffect: number;
  /** Significance level: the interval is a (1 - alpha) interval and the U test must give p < alpha. */
  alpha: number;
  /** Bootstrap resamples. */
  resamples: number;
  /** Fewest baseline runs (clusters of the class) for any verdict but inconclusive. */
  minBaselineRuns: number;
  /** Fewest per-second samples on each side. */
  minSamples: number;
  /** The most recent baseline runs compared against (a pinned baseline is used whole). */
  maxBaselineRuns: number;
}

/**
 * Defaults for one machine shared with other work: run-to-run spread of emulated gp3 was about 10 % between
 * undisturbed runs here, so a change must be at least 15 % to count.
 */
export const DEFAULT_VERDICT_OPTIONS: VerdictOptions = {
  minEffect: 0.15,
  alpha: 0.05,
  resamples: 4000,
  minBaselineRuns: 3,
  minSamples: 5,
  maxBaselineRuns: 10,
};

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
    else if (key !== 'minEffect' && key !== 'alpha' && (!Number.isInteger(value) || value < 1 || value > 100_000))
      problems.push({ path, message: 'must be a whole number from 1 to 100000' });
  }
  return problems;
}

/** Options with defaults filled in; the caller has checked them with verdictOptionProblems. */
export function verdictOptions(partial: Partial<VerdictOptions> = {}): VerdictOptions {
  return { ...DEFAULT_VERDICT_OPTIONS, ...partial };
}
