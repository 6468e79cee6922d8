import {
  blockResample,
  bootstrapEffectInterval,
  compareClass,
  decideVerdict,
  mannWhitneyU,
  normalCdf,
  overallVerdict,
  seedFrom,
  seededRandom,
  twoLevelMedian,
  type TpsUnit,
} from '../../activities/control/verdict';
import { DEFAULT_VERDICT_OPTIONS, verdictOptionProblems } from '../../common/regression';

/** A deterministic "measured" series: a level with a wobble and a slow drift, as pgbench -P 1 shows. */
function series(level: number, seconds: number, wobble: number, phase = 0): number[] {
  return Array.from({ length: seconds }, (_, i) => Math.round(level * (1 + wobble * Math.sin(i * 1.7 + phase) - 0.02 * (i / seconds))));
}

function unit(runId: string, s: number[]): TpsUnit {
  return { runId, hostId: `${runId}-gp3-0`, tps: s.reduce((a, b) => a + b, 0) / s.length, tpsSeries: s };
}

const options = DEFAULT_VERDICT_OPTIONS;
const baseline = [
  unit('b1', series(5000, 8, 0.08, 0)),
  unit('b2', series(5300, 8, 0.1, 1)),
  unit('b3', series(4800, 8, 0.06, 2)),
  unit('b4', series(5100, 8, 0.09, 3)),
];

describe('statistics', () => {
  it('seeded random numbers repeat for the same seed and differ for another', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const xs = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(xs);
    expect(c()).not.toBe(xs[0]);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(seedFrom('run-1')).toBe(seedFrom('run-1'));
    expect(seedFrom('run-1')).not.toBe(seedFrom('run-2'));
  });

  it('computes the normal CDF', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 6);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 5);
    expect(normalCdf(-1.959964)).toBeCloseTo(0.025, 5);
  });

  it('computes Mann-Whitney U as in the textbook (normal approximation, continuity correction)', () => {
    const r = mannWhitneyU([19, 22, 16, 29, 24], [20, 11, 17, 12]);
    expect(r.u).toBe(17);
    expect(r.z).toBeCloseTo(1.5922, 3);
    expect(r.p).toBeCloseTo(0.1113, 3);
    // U of one side plus U of the other is n1 * n2; ties count half.
    const tied = mannWhitneyU([1, 2, 2, 3], [2, 3, 4]);
    expect(tied.u + mannWhitneyU([2, 3, 4], [1, 2, 2, 3]).u).toBe(12);
    // Fully separated samples of 10: U = 0, p = 1.8e-4.
    const apart = mannWhitneyU([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(apart.u).toBe(0);
    expect(apart.p).toBeCloseTo(1.83e-4, 5);
  });

  it('resamples blocks of a series: same length, values from the series', () => {
    const s = [1, 2, 3, 4, 5, 6, 7, 8];
    const r = blockResample(s, seededRandom(1));
    expect(r).toHaveLength(8);
    expect(r.every((v) => s.includes(v))).toBe(true);
  });

  it('takes the two-level median: one disturbed run does not move it', () => {
    expect(twoLevelMedian([[100, 110, 120], [200, 210, 220], [1, 2, 3]])).toBe(110);
    expect(twoLevelMedian([])).toBeNull();
  });

  it('gives the same interval for the same seed', () => {
    const b = baseline.map((u) => u.tpsSeries);
    const c = [series(2500, 8, 0.05)];
    const one = bootstrapEffectInterval(b, c, { resamples: 500, alpha: 0.05 }, seededRandom(7));
    const two = bootstrapEffectInterval(b, c, { resamples: 500, alpha: 0.05 }, seededRandom(7));
    expect(one).toEqual(two);
    expect(one[0]).toBeLessThan(one[1]);
    expect(one[1]).toBeLessThan(0);
  });
});

describe('verdict', () => {
  it('flags half the throughput as regressed, with the numbers', () => {
    const v = compareClass('gp3', baseline, [unit('c', series(2500, 8, 0.05))], options, seededRandom(1));
    expect(v.verdict).toBe('regressed');
    expect(v.effect).toBeLessThan(-0.4);
    expect(v.ci![1]).toBeLessThan(0);
    expect(v.pValue).toBeLessThan(0.05);
    expect(v.baseline).toMatchObject({ runs: 4, samples: 32 });
    expect(v.candidate).toMatchObject({ runs: 1, samples: 8 });
    expect(v.reason).toMatch(/effect -\d+\.\d %/);
  });

  it('passes a rerun within the minimum effect', () => {
    const v = compareClass('gp3', baseline, [unit('c', series(5150, 8, 0.08, 4))], options, seededRandom(1));
    expect(v.verdict).toBe('pass');
    expect(Math.abs(v.effect!)).toBeLessThan(options.minEffect);
  });

  it('flags a significant gain as improved', () => {
    const v = compareClass('gp3', baseline, [unit('c', series(7000, 8, 0.05))], options, seededRandom(1));
    expect(v.verdict).toBe('improved');
  });

  it('is inconclusive when a large drop is within the noise of the seconds', () => {
    const noisy = [
      unit('n1', series(5000, 6, 0.6, 0)),
      unit('n2', series(5000, 6, 0.6, 2)),
      unit('n3', series(5000, 6, 0.6, 4)),
    ];
    const v = compareClass('gp3', noisy, [unit('c', series(3700, 6, 0.6, 1))], options, seededRandom(1));
    expect(v.effect).toBeLessThan(-options.minEffect);
    expect(v.verdict).toBe('inconclusive');
    expect(v.reason).toMatch(/not significant/);
  });

  it('keeps one disturbed baseline run from moving the baseline median, and doubts a run no slower than it', () => {
    const disturbed = [unit('d1', series(5000, 8, 0.05)), unit('d2', series(2000, 8, 0.05)), unit('d3', series(5200, 8, 0.05))];
    expect(compareClass('gp3', disturbed, [unit('c', series(5100, 8, 0.05, 1))], options, seededRandom(1)).verdict).toBe('pass');
    const slower = compareClass('gp3', disturbed, [unit('c', series(1200, 8, 0.05, 1))], options, seededRandom(1));
    expect(slower.verdict).toBe('regressed');
    expect(slower.reason).toMatch(/baseline runs 1,9\d\d-5,\d+/);
    // As slow as the disturbed baseline run: the seconds overlap, so the U test does not confirm the drop.
    const likeTheDisturbedRun = compareClass('gp3', disturbed, [unit('c', series(2500, 8, 0.05, 1))], options, seededRandom(1));
    expect(likeTheDisturbedRun.verdict).toBe('inconclusive');
    expect(likeTheDisturbedRun.pValue).toBeGreaterThan(options.alpha);
  });

  it('is inconclusive with too little history or too few samples', () => {
    const few = compareClass('gp3', baseline.slice(0, 2), [unit('c', series(2500, 8, 0.05))], options, seededRandom(1));
    expect(few.verdict).toBe('inconclusive');
    expect(few.reason).toMatch(/2 baseline runs .* at least 3/);
    const short = compareClass('gp3', baseline, [unit('c', [2500, 2400])], options, seededRandom(1));
    expect(short.verdict).toBe('inconclusive');
    expect(short.reason).toMatch(/too few per-second samples/);
  });

  it('compares each class with the same class of the same kind, and takes the worst verdict', () => {
    const run = (id: string, gp3: number, disk: number) => ({
      runId: id,
      classes: {
        gp3: { kind: 'emulated-ebs', units: [unit(id, series(gp3, 8, 0.05))] },
        'local-disk': { kind: 'local-disk', units: [unit(id, series(disk, 8, 0.05, 1))] },
      },
    });
    const history = [run('b1', 5000, 9000), run('b2', 5100, 9100), run('b3', 4900, 8900)];
    const v = decideVerdict({
      candidate: run('c', 2500, 9000).classes,
      baseline: history,
      pinned: false,
      options,
      seed: seedFrom('c'),
    });
    expect(v.classes.map((c) => [c.className, c.verdict])).toEqual([
      ['gp3', 'regressed'],
      ['local-disk', 'pass'],
    ]);
    expect(v.verdict).toBe('regressed');
    expect(v.baselineRunIds).toEqual(['b1', 'b2', 'b3']);
    expect(v.summary).toMatch(/^gp3: regressed: /);
    // A class of another kind under the same name is not comparable.
    const renamed = decideVerdict({
      candidate: { gp3: { kind: 'local-disk', units: [unit('c', series(2500, 8, 0.05))] } },
      baseline: history,
      pinned: false,
      options,
      seed: 1,
    });
    expect(renamed.verdict).toBe('inconclusive');
    expect(overallVerdict([])).toBe('inconclusive');
  });

  it('checks verdict options, naming the field', () => {
    expect(verdictOptionProblems(undefined)).toEqual([]);
    expect(verdictOptionProblems({ minEffect: 0.2, alpha: 0.01 })).toEqual([]);
    const problems = verdictOptionProblems({ minEffect: 2, alpha: 'x', resamples: 0.5, typo: 1 });
    expect(problems.map((p) => p.path).sort()).toEqual([
      'regression.alpha',
      'regression.minEffect',
      'regression.resamples',
      'regression.typo',
    ]);
    expect(verdictOptionProblems('fast')[0].path).toBe('regression');
  });
});
