/**
 * The load's progress bar: its steps (rows, primary keys, VACUUM ANALYZE) cover 0-100 % in order, without overlap or
 * overrun. A VACUUM ANALYZE that started at 170 % (the index step's end added to the rows') was seen in a run's watch.
 * And its ETA for the steps after the rows: a ratio taken from one recorded run's loads, checked on the others.
 */
import { AFTER_ROWS_PER_ROWS_SECOND, LOAD_STEP_SPANS, afterRowsSeconds } from '../../activities/host/load';
import { recordedRun } from '../helpers/predict-fixtures';

describe('load progress spans', () => {
  it('run from 0 to 1, each step starting where the one before ended', () => {
    const spans = Object.values(LOAD_STEP_SPANS);
    expect(spans[0][0]).toBe(0);
    expect(spans[spans.length - 1][1]).toBe(1);
    spans.forEach(([from, to], i) => {
      expect(to).toBeGreaterThan(from);
      if (i > 0) expect(from).toBe(spans[i - 1][1]);
    });
  });
});

/** Every recorded load of the runs: its rows' seconds and the seconds of the primary key and VACUUM ANALYZE after them. */
function recordedLoads(runs: string[]): { name: string; rows: number; after: number }[] {
  return runs.flatMap((run) =>
    Object.entries(recordedRun(run).classes).flatMap(([className, c]) =>
      c.clusters.flatMap((cl) => (cl.load?.indexSeconds !== undefined ? [{ name: `${run} ${className}`, rows: cl.load.loadSeconds, after: cl.load.indexSeconds + cl.load.vacuumSeconds }] : [])),
    ),
  );
}

/** Loads whose estimate of the steps after the rows (ratio x the rows' seconds) is off by more than a factor of 2. */
function offByMoreThanTwice(loads: { name: string; rows: number; after: number }[], ratio: number): string[] {
  return loads.flatMap((l) => {
    const estimate = ratio * l.rows;
    return estimate > 2 * l.after || estimate < l.after / 2 ? [`${l.name}: ${estimate.toFixed(1)} s for ${l.after.toFixed(1)} s`] : [];
  });
}

describe('the load ETA for the steps after the rows', () => {
  const fitted = recordedLoads(['predict-matrix-1']);
  const heldOut = recordedLoads(['predict-matrix-2', 'predict-check-1', 'predict-check-2', 'predict-check-3']);

  it('is the median of one recorded run’s loads', () => {
    expect(fitted).toHaveLength(8);
    const ratios = fitted.map((l) => l.after / l.rows).sort((a, b) => a - b);
    expect(AFTER_ROWS_PER_ROWS_SECOND).toBeCloseTo((ratios[3] + ratios[4]) / 2, 2);
  });

  it('comes within a factor of 2 on every load it was not taken from, where the rule before it did not', () => {
    expect(heldOut).toHaveLength(23);
    expect(offByMoreThanTwice(heldOut, AFTER_ROWS_PER_ROWS_SECOND)).toEqual([]);
    // The rule before: 4.2 heap passes at the rows' write rate, which is 4.2 times the rows' seconds.
    expect(offByMoreThanTwice(heldOut, 4.2)).toHaveLength(23);
  });

  it('is that ratio of the rows’ seconds at the measured rate, and none before a rate is measured', () => {
    // 50 chunks at 0.5 a second: 100 s of rows.
    expect(afterRowsSeconds(0.5, 50)).toBeCloseTo(100 * AFTER_ROWS_PER_ROWS_SECOND, 6);
    expect(afterRowsSeconds(undefined, 50)).toBeUndefined();
    expect(afterRowsSeconds(0, 50)).toBeUndefined();
  });
});
