import type { ExperimentResult } from '../results/result';
import { demandsFromClass, targetOfClass } from './demands';
import { errorPct, predict, type ModelVariant, type Prediction, type PredictionInterval } from './predict';

/**
 * Issue 29's split of the recorded runs (test/fixtures/results) for the current model: those it was revised on, and
 * those measured after it was frozen, only checked on. Changing the model after looking at a held-out run moves that
 * run to the revision set and needs a new held-out run (docs/prediction-model.md, "Held out"); `model` says which
 * model this split is for, and bench/prediction-coverage.ts refuses to run when it is not MODEL_VERSION.
 */
export interface SplitRun {
  name: string;
  /** `matrix`: every ordered pair of its classes; `clients`: its 16- and 8-client classes from its 64. */
  kind: 'matrix' | 'clients';
}

export const PREDICTION_SPLIT: { model: string; revision: SplitRun[]; heldOut: SplitRun[] } = {
  model: '7',
  revision: [
    ...['predict-check-1', 'predict-check-2', 'predict-check-3', 'predict-matrix-1', 'predict-matrix-2', 'predict-matrix-3'].map((name) => ({ name, kind: 'matrix' as const })),
    ...['predict-holdout-1', 'predict-holdout-2', 'predict-holdout-3', 'local-quick-1', 'local-quick-2'].map((name) => ({ name, kind: 'matrix' as const })),
    { name: 'local-quick-clients-2', kind: 'clients' },
  ],
  heldOut: [
    { name: 'predict-holdout-4', kind: 'matrix' },
    { name: 'local-quick-clients-3', kind: 'clients' },
  ],
};

/** One of a clients run's fewer-client classes predicted from its 64-client class of the same device. */
export interface FewerClientsPair {
  source: string;
  target: string;
  measuredTps: number;
  prediction: Prediction & { interval: PredictionInterval };
  errorPct: number;
  /** Whether the interval holds the measured TPS. */
  held: boolean;
}

/** A run of bench/specs/local-quick-clients.json: its 16- and 8-client classes predicted from its 64-client ones. */
export function fewerClientsPairs(run: ExperimentResult, variant: ModelVariant = {}): FewerClientsPair[] {
  return ['gp3', 'nvme'].flatMap((source) =>
    [16, 8].map((clients) => {
      const target = `${source}-c${clients}`;
      const measuredTps = run.classes[target].medianTps!;
      const prediction = predict(demandsFromClass(run, source), targetOfClass(run, target), variant);
      return {
        source,
        target,
        measuredTps,
        prediction,
        errorPct: errorPct(prediction.tps, measuredTps),
        held: prediction.interval.low <= measuredTps && measuredTps <= prediction.interval.high,
      };
    }),
  );
}
