/**
 * The validation matrix (common/model/matrix.ts) on the recorded predict-matrix runs: every class predicted from
 * every other, beside both baselines, each prediction with its interval. The run held to the goals is
 * predict-matrix-2, measured after the model's last change (predict-matrix-1 is the run the model was revised on).
 * Every goal is met or listed in MATRIX_SHORTFALLS with how far and why; the test fails when a listed shortfall
 * starts to meet its goal or a goal not listed fails, so the README's and docs' claims follow the table.
 */
import { matrixGoals, matrixLines, predictionMatrix } from '../../common/model/matrix';
import { MODEL_VERSION } from '../../common/model/predict';
import { predictionsMarkdown } from '../../analysis/report/predictions-markdown';
import { runPredictions } from '../../analysis/predictions';
import type { ResultsStore } from '../../lib/results-store';
import { recordedRun, unlistedGoalChanges, type GoalShortfall } from '../helpers/predict-fixtures';

/** The goals the recorded matrix does not meet, each with its reason (docs/prediction-model.md gives the detail). */
export const MATRIX_SHORTFALLS: GoalShortfall[] = [
  {
    goal: /^largest \|TPS error\|/,
    reason:
      'gp3-3000 from local-c64-mem1536 is +47.6 % and gp3-3000 from local-c32 +25.8 %. Predicting the 768 MiB volume from the 1,536 MiB disk, the uniform-access cache model expects reads per transaction to rise from 0.97 to 1.29; they rose to 1.51 (the index pages stay cached at either size); and every gp3 target is over-predicted (below)',
  },
  {
    goal: /^the interval holds the measured TPS/,
    reason:
      '70 % of the 37 pairs (26). 8 of the 11 misses are the emulated 3,000-IOPS volumes predicted from a local disk, 16-48 % over: the budget controller delivered 81-86 % of the 3,000 IOPS where the model takes 88 % (its integration test), and the host\'s cgroup counted 0.45 page writes per transaction on the volume against 0.15-0.49 on the local disk (fewer the more clients), which the model carries; the other 3 are 8 clients predicted from 16 or 64, 11-21 % under',
  },
];

describe('the validation matrix of predict-matrix-2', () => {
  const run = recordedRun('predict-matrix-2');
  const matrix = predictionMatrix(run);

  test('prints its table: every ordered pair, with the model version', () => {
    console.log(matrixLines(matrix).join('\n'));
    expect(matrix.modelVersion).toBe(MODEL_VERSION);
    const classes = Object.keys(run.classes).length;
    expect(matrix.pairs).toHaveLength(classes * (classes - 1));
  });

  test('has at least 20 predicted pairs, at least 8 of them not bound by a single cap', () => {
    expect(matrix.summary!.pairs).toBeGreaterThanOrEqual(20);
    expect(matrix.summary!.notCapBound).toBeGreaterThanOrEqual(8);
  });

  test('meets every goal, or the goal is a listed shortfall', () => {
    const { unlisted, nowMet } = unlistedGoalChanges(matrixGoals(matrix.summary!), MATRIX_SHORTFALLS);
    expect(unlisted).toEqual([]);
    expect(nowMet).toEqual([]);
  });

  test("a predict-matrix run's report shows the matrix, computed by the model version it records", async () => {
    const noHistory = { get: async () => null, list: async () => [] } as unknown as ResultsStore;
    const predictions = (await runPredictions(noHistory, run))!;
    expect(predictions.modelVersion).toBe(MODEL_VERSION);
    expect(predictions.matrix?.summary?.pairs).toBe(matrix.summary!.pairs);
    const md = predictionsMarkdown(predictions).join('\n');
    expect(md).toContain('## Prediction matrix');
    expect(md).toMatch(/^local-c16 +local-c64 +8,485 +8,318 \([\d,]+-[\d,]+\) +-2\.0 %/m);
    expect(md).toMatch(/^met: median \|TPS error\| at most 10 % \(7\.9 %\)$/m);
    // Any other preset's run gets no matrix.
    expect((await runPredictions(noHistory, { ...run, preset: 'local-quick' }))?.matrix).toBeUndefined();
  });
});
