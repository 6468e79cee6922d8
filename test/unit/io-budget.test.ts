/** The re-split rule of the shared IOPS budget (lib/io-budget.ts), on made-up demand. */
import { evenSplit, FLOOR_SHARE, limitsFor, MAX_STEP, nextSplit, smoothed, SMOOTHING, type BudgetSplit } from '../../lib/io-budget';

const B = 3000;

/** A closed loop: every transaction does `reads` reads and `writes` writes, as fast as the tighter limit lets it. */
function closedLoop(split: BudgetSplit, reads: number, writes: number): { reads: number; writes: number } {
  const tps = Math.min(reads > 0 ? split.readIops / reads : Infinity, writes > 0 ? split.writeIops / writes : Infinity);
  return { reads: tps * reads, writes: tps * writes };
}

describe('nextSplit', () => {
  it('always splits exactly the budget, never below the floor', () => {
    let split = evenSplit(B);
    for (let i = 0; i < 500; i++) {
      const used = { reads: Math.random() * 4000, writes: Math.random() * 4000 };
      split = nextSplit(B, split, used);
      expect(split.readIops + split.writeIops).toBeCloseTo(B, 6);
      expect(Math.min(split.readIops, split.writeIops)).toBeGreaterThanOrEqual(FLOOR_SHARE * B - 1e-9);
    }
  });

  it('gives a direction that left its share unused what it used plus headroom, and the rest to the other, a step a period', () => {
    const settle = (used: { reads: number; writes: number }) => {
      let split = evenSplit(B);
      const steps = [];
      for (let i = 0; i < 10; i++) steps.push((split = nextSplit(B, split, used)));
      return steps;
    };
    const readsPress = settle({ reads: 1500, writes: 400 });
    expect(readsPress[0]).toEqual({ readIops: 1500 + MAX_STEP * B, writeIops: 1500 - MAX_STEP * B });
    // Demand that does not grow: once reads no longer press on their share, the slack is shared.
    expect(readsPress.at(-1)).toEqual({ readIops: 1500 + (B - 1900) / 2, writeIops: 400 + (B - 1900) / 2 });
    expect(settle({ reads: 200, writes: 1490 }).at(-1)).toEqual({ readIops: 200 + (B - 1690) / 2, writeIops: 1490 + (B - 1690) / 2 });
    // One period with reads pressing and writes idle: the target is writes' use plus headroom, the rest to reads.
    expect(nextSplit(B, { readIops: 2400, writeIops: 600 }, { reads: 2350, writes: 400 })).toEqual({ readIops: 2500, writeIops: 500 });
  });

  it('keeps the split when both directions are held at their limits', () => {
    expect(nextSplit(B, { readIops: 2000, writeIops: 1000 }, { reads: 1990, writes: 995 })).toEqual({ readIops: 2000, writeIops: 1000 });
  });

  it('shares the slack when neither direction is held', () => {
    expect(nextSplit(B, evenSplit(B), { reads: 600, writes: 400 })).toEqual({ readIops: 1600, writeIops: 1400 });
  });

  it('smooths the rates it is given, so one bursty period moves the split a little', () => {
    expect(smoothed(null, { reads: 100, writes: 50 })).toEqual({ reads: 100, writes: 50 });
    expect(smoothed({ reads: 1000, writes: 100 }, { reads: 1000, writes: 1100 })).toEqual({ reads: 1000, writes: 100 + SMOOTHING * 1000 });
  });
});

describe('nextSplit in a closed loop', () => {
  it.each([
    [1.5, 1],
    [1.7, 0.2],
    [0.5, 1],
    [1, 0],
  ])('in a closed loop of %d reads and %d writes per transaction, settles at the mix and uses the budget', (reads, writes) => {
    let split = evenSplit(B);
    let used = closedLoop(split, reads, writes);
    for (let i = 0; i < 30; i++) {
      split = nextSplit(B, split, used);
      used = closedLoop(split, reads, writes);
    }
    // The separate limits the kernel has alone would leave the mix's smaller side idle: 1,500 + 1,000 at 1.5:1.
    expect(used.reads + used.writes).toBeGreaterThan(0.9 * B);
    expect(used.reads + used.writes).toBeLessThanOrEqual(B + 1e-9);
    if (writes > 0) expect(used.reads / used.writes).toBeCloseTo(reads / writes, 6);
  });
});

describe('limitsFor', () => {
  it('divides the bandwidth in the IOPS shares', () => {
    expect(limitsFor({ readIops: 2400, writeIops: 600 }, 3000, 125 * 2 ** 20)).toEqual({
      readIops: 2400,
      writeIops: 600,
      readBytesPerSecond: 100 * 2 ** 20,
      writeBytesPerSecond: 25 * 2 ** 20,
    });
  });
});
