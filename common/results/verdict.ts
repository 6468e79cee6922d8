/**
 * A regression verdict as result.json and the nightly workflow keep it: per class and overall, with the numbers
 * behind it. Types only; analysis/regression-verdict.ts decides it.
 */
import type { VerdictOptions } from '../input/regression-options';

export const VERDICTS = ['pass', 'regressed', 'improved', 'inconclusive'] as const;
export type VerdictKind = (typeof VERDICTS)[number];

/** The method of verdicts this code writes; verdicts without it (older result.json) pooled seconds. */
export const VERDICT_METHOD = 'per-run-t';

/** How far a side's runs spread: the per-run medians' coefficient of variation (null below 2 runs) and range. */
export interface RunSpread {
  cv: number | null;
  min: number;
  max: number;
}

export interface SideSummary {
  /** Runs (clusters) and per-second samples on this side, of the runs the verdict used. */
  runs: number;
  samples: number;
  /** Median per-second TPS of each run, and the median of those. */
  runMedians: number[];
  medianTps: number | null;
  /** Geometric mean of the run medians: the level the effect and the test compare. */
  geometricMeanTps: number | null;
  /** Run-to-run spread of the run medians; null without runs. */
  spread: RunSpread | null;
}

/** A run left out of the comparison, and why. */
export interface SetAsideRun {
  runId: string;
  hostId: string;
  medianTps: number | null;
  why: string;
}

export interface ClassVerdict {
  className: string;
  verdict: VerdictKind;
  /** Why, in words, with the numbers. */
  reason: string;
  baseline: SideSummary;
  candidate: SideSummary;
  /** Candidate over baseline minus 1 (-0.5: half the throughput), from the geometric means of run medians. */
  effect: number | null;
  /** (1 - alpha) hierarchical bootstrap interval of the effect. */
  ci: [number, number] | null;
  /** Mann-Whitney U of the candidate's run medians over the baseline's (pairs where the candidate is faster). */
  u: number | null;
  /** Unused since the run became the unit (it was the z of a U test over seconds); kept for older readers. */
  z: number | null;
  /** One-sided p of the t test over runs, in the direction of the effect: the larger of the log and TPS scales'. */
  pValue: number | null;
  /** The t statistic on the logs of the run medians, on the run medians themselves, and their degrees of freedom. */
  t: number | null;
  tLinear: number | null;
  df: number | null;
  /** One-sided exact p of the U test over runs, in the direction of the effect (never below 1/(n+1) with one run). */
  rankP: number | null;
  /** The smallest drop this baseline lets the verdict call regressed: its t threshold or the minimum effect. */
  detectableDrop: number | null;
  /** Runs of either side left out: too short, no throughput, or a baseline outlier. */
  setAside: SetAsideRun[];
}

export interface Verdict {
  verdict: VerdictKind;
  /** How it was decided (VERDICT_METHOD); absent in verdicts written before the run was the unit. */
  method: typeof VERDICT_METHOD;
  classes: ClassVerdict[];
  /** Runs compared against, and whether they were pinned. */
  baselineRunIds: string[];
  pinned: boolean;
  options: VerdictOptions;
  /** One line per class with the numbers: what the failure message and the report show. */
  summary: string;
}
