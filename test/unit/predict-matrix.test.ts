/**
 * The validation matrix (common/model/matrix.ts) on the recorded predict-matrix runs: every class predicted from
 * every other, beside both baselines, each prediction with its interval. The run held to the goals is
 * predict-matrix-2, measured after the model's last change (predict-matrix-1 is the run the model was revised on).
 * Every goal is met or listed in MATRIX_SHORTFALLS with how far and why; the test fails when a listed shortfall
 * starts to meet its goal or a goal not listed fails, so the README's and docs' claims follow the table.
 * predict-matrix-3 (2026-12-05) is the same matrix on the modelled devices (m6id's NVMe where the machine's disk was),
 * under model 6, which was not revised on it; its shortfalls are MATRIX_3_SHORTFALLS.
 */
import { matrixGoals, matrixLines, predictionMatrix } from '../../common/model/matrix';
import { MODEL_VERSION } from '../../common/model/predict';
import { predictionsMarkdown } from '../../analysis/report/predictions-markdown';
import { runPredictions } from '../../analysis/predictions';
import type { ResultsStore } from '../../lib/results-store';
import { recordedMatrixTests, recordedRun, unlistedGoalChanges, type GoalShortfall } from '../helpers/predict-fixtures';

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

/**
 * predict-matrix-3's shortfalls, by the term that misses (docs/prediction-model.md, "The matrix on the modelled
 * devices"); none is the device model's budget, latency or queue.
 */
export const MATRIX_3_SHORTFALLS: GoalShortfall[] = [
  {
    goal: /^median \|TPS error\|/,
    reason: '15.8 % over 56 pairs, pulled up by the terms below; the 8 pairs none of them touches (a capped target from an uncapped source, or one client count, at one memory size) are 5.6-13.9 % off',
  },
  {
    goal: /^largest \|TPS error\|/,
    reason:
      "50.8 %: nvme-c64-mem1536 from gp3-3000. Every uncapped target from a capped gp3 source is under, by 11-51 % (9 of 12 beyond their interval): bound by the cores, the capped source's CPU a transaction carried, the host's 0.30-0.36 ms and the volume server's 0.14-0.19 ms at 891-1,262 TPS, against 0.20 and 0.07 ms at nvme-c64's 5,812: work that does not follow the TPS (the lab's services, the server's wake-ups for I/Os at the budget's pace)",
  },
  {
    goal: /^the interval holds the measured TPS/,
    reason:
      '45 % (25 of 56). The 31 misses: 9 uncapped targets from capped sources (above); 6 fewer clients predicted from more, 13-46 % under (the 64-client sources\' waits for a core carried, as on predict-holdout: nvme-c8 from nvme-c64 -35.4 %, from gp3-30000 -46.4 %); 4 more clients predicted from fewer (nvme-c32 and -c64 from nvme-c8, -18.0 and -20.8 %; gp3-30000 from nvme-c16 and -c32, +13.4 and +16.5 %); 10 across the two memory sizes, 12-39 % off (the uniform cache model: reads a transaction fell from 1.65 to 1.04 at 1,536 MiB on NVMe, and the CPU a transaction with them, 0.306 to 0.257 ms); 2 gp3-3000 from nvme-c16 and -c32, +13.9 %',
  },
];

describe('the validation matrix of predict-matrix-3, on the modelled devices', () => {
  recordedMatrixTests('predict-matrix-3', MATRIX_3_SHORTFALLS);
});

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
    expect(md).toMatch(/^local-c16 +local-c64 +8,485 +9,032 \([\d,]+-[\d,]+\) +\+6\.4 %/m);
    expect(md).toMatch(/^met: median \|TPS error\| at most 10 % \(7\.4 %\)$/m);
    // Any other preset's run gets no matrix.
    expect((await runPredictions(noHistory, { ...run, preset: 'local-quick' }))?.matrix).toBeUndefined();
  });
});
