/**
 * Issue 29's split (common/model/split.ts) and what bench/prediction-coverage.ts scores with it: every recorded run in
 * exactly one set, the split made for the current model, and the scores right on pairs made to break them.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { MODEL_VERSION } from '../../common/model/predict';
import { PREDICTION_SPLIT } from '../../common/model/split';
import { scoredPairs, scoreOf } from '../../bench/prediction-coverage';
import { recordedRun } from '../helpers/predict-fixtures';
import { PROJECT_ROOT } from '../../lib/lab-paths';

describe("issue 29's split of the recorded runs", () => {
  it('is made for the current model', () => {
    expect(PREDICTION_SPLIT.model).toBe(MODEL_VERSION);
  });

  it('puts every recorded run in exactly one set, and names no run that is not recorded', () => {
    const recorded = readdirSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'results'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace(/\.json$/, ''))
      .sort();
    const named = [...PREDICTION_SPLIT.revision, ...PREDICTION_SPLIT.heldOut].map((r) => r.name);
    expect(new Set(named).size).toBe(named.length);
    expect([...named].sort()).toEqual(recorded);
  });

  it('scores the held-out runs as the tests hold them: predict-holdout-4 61 % covered, local-quick-clients-3 2 of 4', () => {
    const matrix = scoreOf(scoredPairs({ name: 'predict-holdout-4', kind: 'matrix' }, recordedRun('predict-holdout-4')));
    expect(matrix.pairs).toBe(56);
    expect(matrix.coverage).toBeCloseTo(34 / 56, 6);
    expect(matrix.largestAbsPct).toBeCloseTo(61.4, 1);
    const clients = scoreOf(scoredPairs({ name: 'local-quick-clients-3', kind: 'clients' }, recordedRun('local-quick-clients-3')));
    expect(clients.pairs).toBe(4);
    expect(clients.coverage).toBe(0.5);
  });
});

describe('scoreOf', () => {
  it('takes the median and the largest of the absolute errors, and the share held', () => {
    const s = scoreOf([
      { errorPct: -30, held: false },
      { errorPct: 5, held: true },
      { errorPct: -10, held: true },
      { errorPct: 20, held: false },
    ]);
    expect(s).toEqual({ pairs: 4, medianAbsPct: 15, largestAbsPct: 30, coverage: 0.5 });
    // An odd count takes the middle one; a sign does not hide a large error.
    expect(scoreOf([{ errorPct: -40, held: false }, { errorPct: 1, held: true }, { errorPct: 2, held: true }]).medianAbsPct).toBe(2);
    expect(scoreOf([{ errorPct: -40, held: false }]).largestAbsPct).toBe(40);
  });
});
