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
