/**
 * The load's progress bar: its steps (rows, primary keys, VACUUM ANALYZE) cover 0-100 % in order, without overlap or
 * overrun. A VACUUM ANALYZE that started at 170 % (the index step's end added to the rows') was seen in a run's watch.
 */
import { LOAD_STEP_SPANS } from '../../activities/host/load';

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
