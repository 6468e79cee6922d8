/**
 * The predictions section of a run's result: from its calibration class (common/model/run-predictions.ts), and from the
 * previous completed run of the same preset and environment, found through the history index in the results store.
 */
import type { ExperimentResult } from '../common/results/result';
import { calibrationPredictions, previousRunPredictions, type RunPredictions } from '../common/model/run-predictions';
import { historyEntry, RunHistory } from './history';
import { MODEL_VERSION } from '../common/model/predict';
import { predictionMatrix } from '../common/model/matrix';
import type { ResultsStore } from '../lib/results-store';

/** The predictions a run's report shows, or undefined when there is neither a calibration class nor a previous run. */
export async function runPredictions(store: ResultsStore, result: ExperimentResult, now = new Date()): Promise<RunPredictions | undefined> {
  const predictions: RunPredictions = { computedAt: now.toISOString(), modelVersion: MODEL_VERSION };
  // Predictions are derived: whatever goes wrong with them must not keep the measured result from being written.
  try {
    const calibration = calibrationPredictions(result);
    if (calibration) predictions.calibration = calibration;
    // The validation matrix, and the held-out points it is checked on (docs/prediction-model.md).
    if (result.preset === 'predict-matrix' || result.preset === 'predict-holdout') predictions.matrix = predictionMatrix(result);
    const previous = await previousRun(store, result);
    if (previous) predictions.previousRun = previousRunPredictions(previous, result);
  } catch (err) {
    predictions.problem = `predictions could not be computed: ${(err as Error).message}`;
  }
  return predictions.calibration || predictions.matrix || predictions.previousRun || predictions.problem ? predictions : undefined;
}

/** The latest completed run of the same preset and environment that finished before this one started. */
async function previousRun(store: ResultsStore, result: ExperimentResult): Promise<ExperimentResult | null> {
  const me = historyEntry(result);
  const earlier = (await new RunHistory(store).entries(me.preset)).filter(
    (e) => e.envKey === me.envKey && e.runId !== result.runId && e.status === 'completed' && e.finishedAt <= result.startedAt,
  );
  for (const entry of earlier.reverse()) {
    const text = await store.get(entry.runId, 'result.json');
    if (text) return JSON.parse(text) as ExperimentResult;
  }
  return null;
}
