/**
 * Predictions a run's report shows: every class predicted from the calibration class's measured demands
 * (spec.prediction, the predict-check preset), and every class predicted from the previous run of the same spec.
 * Each beside what the run measured, with the error in per cent. Pure and workflow-safe.
 */
import { baselines, compareWithBaselines, BASELINE_NAMES, type BaselineComparison, type BaselineName } from './baselines';
import { demandsFromClass, targetOfClass } from './demands';
import { describeTarget, errorPct, predict, sourceCheck, type SourceCheck, type WorkloadDemands } from './predict';
import type { ExperimentResult } from '../results/result';
import type { PredictionMatrix } from './matrix';

/** The predict-check preset's goal: every class's TPS predicted within this (per cent). */
export const PREDICTION_GOAL_PCT = 15;

export interface PredictionRow {
  className: string;
  target: string;
  predicted: { tps: number; meanMs: number; p95Ms: number | null; bottleneck: string } | null;
  measured: { tps: number; meanMs: number; p95Ms: number } | null;
  errorPct: { tps: number | null; mean: number | null; p95: number | null };
  /** The baselines the model must beat, on the same pair (absent in results computed before they existed). */
  baselines?: Record<BaselineName, { tps: number | null; errorPct: number | null; detail: string }>;
  /** Why a class could not be predicted or compared. */
  problem?: string;
}

export interface PredictionSet {
  /** Where the demands come from, and the model's check on them. */
  from: string;
  sourceCheck: SourceCheck | null;
  rows: PredictionRow[];
  /** The model's median error beside the baselines' on the rows where all three give a figure (null: no such row). */
  comparison?: BaselineComparison | null;
  notes: string[];
}

/** What result.json keeps under `predictions`. */
export interface RunPredictions {
  /** When the model computed them (storage-lab report computes them again with the model it has). */
  computedAt: string;
  /** The model's version that computed them (MODEL_VERSION; absent in results computed before it was recorded). */
  modelVersion?: string;
  /** Every class predicted from every other (the predict-matrix preset). */
  matrix?: PredictionMatrix;
  calibration?: PredictionSet;
  /** Why there are none when computing them failed. */
  problem?: string;
  /** The previous completed run of the same preset and environment; one set per class it shares with this run. */
  previousRun?: { runId: string; sets: PredictionSet[] };
}

/** Predicts each named class of `result` from `demands`, beside what the class measured. */
export function predictClasses(demands: WorkloadDemands, result: ExperimentResult, classNames: string[]): PredictionRow[] {
  return classNames.map((className) => {
    const cls = result.classes[className];
    const measured = cls?.medianTps != null && cls.latencyMs ? { tps: cls.medianTps, meanMs: cls.latencyMs.mean, p95Ms: cls.latencyMs.p95 } : null;
    const target = targetOfClass(result, className);
    try {
      const p = predict(demands, target);
      const predicted = { tps: p.tps, meanMs: p.latencyMs.mean, p95Ms: p.latencyMs.p95, bottleneck: p.bottleneck };
      const b = baselines(demands, target);
      const withError = (name: BaselineName) => ({ ...b[name], errorPct: measured && b[name].tps !== null ? errorPct(b[name].tps!, measured.tps) : null });
      return {
        className,
        target: describeTarget({ ...target, label: undefined }),
        predicted,
        measured,
        errorPct: {
          tps: measured ? errorPct(predicted.tps, measured.tps) : null,
          mean: measured ? errorPct(predicted.meanMs, measured.meanMs) : null,
          p95: measured && predicted.p95Ms !== null ? errorPct(predicted.p95Ms, measured.p95Ms) : null,
        },
        baselines: { capDivision: withError('capDivision'), clientScaling: withError('clientScaling') },
        ...(measured ? {} : { problem: 'the class measured no TPS' }),
      };
    } catch (err) {
      return { className, target: describeTarget(target), predicted: null, measured, errorPct: { tps: null, mean: null, p95: null }, problem: (err as Error).message };
    }
  });
}

/** A prediction set from one source class, or its problem when the class yields no demands. */
function predictionSet(source: () => WorkloadDemands, result: ExperimentResult, classNames: string[]): PredictionSet {
  let demands: WorkloadDemands;
  try {
    demands = source();
  } catch (err) {
    return { from: '', sourceCheck: null, rows: [], notes: [(err as Error).message] };
  }
  let check: SourceCheck | null = null;
  const notes = [...demands.notes];
  try {
    check = sourceCheck(demands);
  } catch (err) {
    notes.push(`no source consistency check: ${(err as Error).message}`);
  }
  const rows = predictClasses(demands, result, classNames);
  return { from: demands.source, sourceCheck: check, rows, comparison: rowComparison(rows), notes };
}

/** The model against the baselines on the rows of a set that were predicted and measured. */
export function rowComparison(rows: PredictionRow[]): BaselineComparison | null {
  return compareWithBaselines(
    rows
      .filter((r) => r.predicted && r.measured && r.baselines)
      .map((r) => ({
        label: r.className,
        measuredTps: r.measured!.tps,
        modelTps: r.predicted!.tps,
        baselineTps: Object.fromEntries(BASELINE_NAMES.map((n) => [n, r.baselines![n].tps])) as Record<BaselineName, number | null>,
      })),
  );
}

/** Every other class predicted from the spec's calibration class; undefined when the spec names none. */
export function calibrationPredictions(result: ExperimentResult): PredictionSet | undefined {
  const calibration = result.spec.prediction?.calibrationClass;
  if (!calibration) return undefined;
  const others = Object.keys(result.classes).filter((c) => c !== calibration);
  return predictionSet(() => demandsFromClass(result, calibration), result, others);
}

/** Every class of `result` predicted from the same class of the previous run of its spec (classes it lacked are skipped). */
export function previousRunPredictions(previous: ExperimentResult, result: ExperimentResult): RunPredictions['previousRun'] {
  const shared = Object.keys(result.classes).filter((name) => previous.classes[name]);
  return { runId: previous.runId, sets: shared.map((name) => predictionSet(() => demandsFromClass(previous, name), result, [name])) };
}
