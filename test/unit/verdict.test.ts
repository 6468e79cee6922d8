import {
  blockResample,
  bootstrapEffectInterval,
  compareClass,
  decideVerdict,
  mannWhitneyOverRuns,
  outlierScreen,
  overallVerdict,
  predictionTTest,
  runSpread,
  seedFrom,
  type TpsUnit,
} from '../../analysis/regression-verdict';
import { VERDICT_METHOD, type Verdict } from '../../common/results/verdict';
import { verdictMarkdown } from '../../analysis/report/verdict-markdown';
import { powerCeiling, SECOND_NOISE, simulateVerdicts, targetMet, wilsonInterval, type Decide, type SimulationCase } from '../../bench/verdict-error-rates';
import { DEFAULT_VERDICT_OPTIONS, verdictOptionProblems, verdictOptions } from '../../common/input/regression-options';
import {
  logGamma,
  mannWhitneyLowerTail,
  median,
  normalCdf,
  regularizedIncompleteBeta,
  seededRandom,
  studentTCdf,
  studentTQuantile,
} from '../../common/core/stats';

/** A deterministic "measured" series: a level with a wobble and a slow drift, as pgbench -P 1 shows. */
function series(level: number, seconds: number, wobble: number, phase = 0): number[] {
  return Array.from({ length: seconds }, (_, i) => Math.round(level * (1 + wobble * Math.sin(i * 1.7 + phase) - 0.02 * (i / seconds))));
}

function unit(runId: string, s: number[]): TpsUnit {
  return { runId, hostId: `${runId}-gp3-0`, tps: s.reduce((a, b) => a + b, 0) / s.length, tpsSeries: s };
}

/** Baseline runs at the given levels (one cluster each), 20 s of wobbling seconds. */
function runsAt(levels: number[]): TpsUnit[] {
  return levels.map((level, i) => unit(`b${i}`, series(level, 20, 0.05, i)));
}

const options = DEFAULT_VERDICT_OPTIONS;
/** Six runs spread like undisturbed runs of this machine: CV about 4 %. */
const baseline = runsAt([5000, 5300, 4800, 5100, 4900, 5200]);

describe('distributions', () => {
  it('seeded random numbers repeat for the same seed and differ for another', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const xs = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(xs);
    expect(seededRandom(43)()).not.toBe(xs[0]);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(seedFrom('run-1')).toBe(seedFrom('run-1'));
    expect(seedFrom('run-1')).not.toBe(seedFrom('run-2'));
  });

  it('computes log-gamma and the incomplete beta function', () => {
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 12);
    // I_0.5(2, 3) = sum_{j=2..4} C(4, j) / 16 = 11/16.
    expect(regularizedIncompleteBeta(0.5, 2, 3)).toBeCloseTo(0.6875, 12);
    expect(regularizedIncompleteBeta(0.9, 2, 3)).toBeCloseTo(1 - regularizedIncompleteBeta(0.1, 3, 2), 12);
  });

  it('computes the normal CDF', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1.644854)).toBeCloseTo(0.05, 6);
  });

  it("computes Student's t CDF against closed forms and tables", () => {
    expect(studentTCdf(1, 1)).toBeCloseTo(0.75, 10); // Cauchy: 1/2 + atan(t)/pi
    expect(studentTCdf(-3, 2)).toBeCloseTo(0.5 - 3 / (2 * Math.sqrt(11)), 10); // 1/2 + t / (2 sqrt(2 + t^2))
    expect(studentTCdf(2, 5)).toBeCloseTo(0.9490303, 6);
    expect(studentTCdf(2.0422725, 30)).toBeCloseTo(0.975, 6);
    expect(studentTCdf(1.959964, 1e7)).toBeCloseTo(0.975, 5);
    expect(studentTCdf(0, 3)).toBe(0.5);
    expect(studentTCdf(-Infinity, 3)).toBe(0);
    expect(studentTCdf(-1.3, 7) + studentTCdf(1.3, 7)).toBeCloseTo(1, 12);
  });

  it("inverts Student's t CDF (the tables' critical values)", () => {
    expect(studentTQuantile(0.975, 1)).toBeCloseTo(12.7062047, 5);
    expect(studentTQuantile(0.975, 4)).toBeCloseTo(2.7764451, 6);
    expect(studentTQuantile(0.95, 9)).toBeCloseTo(1.8331129, 6);
    expect(studentTQuantile(0.05, 4)).toBeCloseTo(-2.1318468, 6);
  });

  it('gives the exact null distribution of Mann-Whitney U', () => {
    // One candidate among five: each rank has probability 1/6.
    expect(mannWhitneyLowerTail(0, 1, 5)).toBeCloseTo(1 / 6, 12);
    expect(mannWhitneyLowerTail(2, 1, 5)).toBeCloseTo(3 / 6, 12);
    // m = 2, n = 3: the 10 arrangements give U = 0..6 with counts 1, 1, 2, 2, 2, 1, 1.
    expect(mannWhitneyLowerTail(1, 2, 3)).toBeCloseTo(0.2, 12);
    expect(mannWhitneyLowerTail(2.5, 2, 3)).toBeCloseTo(0.4, 12);
    expect(mannWhitneyLowerTail(6, 2, 3)).toBe(1);
    const r = mannWhitneyOverRuns([1], [2, 3, 4, 5, 6]);
    expect(r).toEqual({ u: 0, pLower: 1 / 6, pUpper: 1 });
  });
});

describe('run-level statistics', () => {
  it('computes the prediction t test by hand', () => {
    // Baseline 1, 2, 3 (mean 2, s 1), candidate 0: t = -2 / sqrt(1 + 1/3), df 2.
    const r = predictionTTest([0], [1, 2, 3]);
    expect(r.t).toBeCloseTo(-2 / Math.sqrt(4 / 3), 12);
    expect(r.df).toBe(2);
    expect(r.pLower).toBeCloseTo(0.5 + r.t / (2 * Math.sqrt(2 + r.t * r.t)), 10);
    expect(r.pLower + r.pUpper).toBeCloseTo(1, 12);
    // Two candidate runs: the standard error shrinks with 1/m.
    expect(predictionTTest([0, 0], [1, 2, 3]).t).toBeCloseTo(-2 / Math.sqrt(1 / 2 + 1 / 3), 12);
  });

  it('reports the run-to-run spread', () => {
    expect(runSpread([90, 100, 110])).toEqual({ cv: 0.1, min: 90, max: 110 });
    expect(runSpread([100])).toEqual({ cv: null, min: 100, max: 100 });
    expect(runSpread([])).toBeNull();
  });

  it('sets aside a run far outside the others, and only such a run', () => {
    const logs = [5000, 5100, 4950, 5050, 2000, 5020].map(Math.log);
    expect(outlierScreen(logs, 0.01)).toMatchObject({ kept: [0, 1, 2, 3, 5], dropped: [{ index: 4 }] });
    expect(outlierScreen(logs, 0).kept).toHaveLength(6);
    expect(outlierScreen([4000, 5000, 6000, 4500, 5500].map(Math.log), 0.01).dropped).toEqual([]);
    // Three runs cannot judge one another.
    expect(outlierScreen([5000, 5100, 100].map(Math.log), 0.01).dropped).toEqual([]);
    // A quiet machine's baseline (CV 0.3 %, seen in the e2e test): the run 3 % off is far in p but not in effect.
    const quiet = [5210.2, 5188, 5198.1, 5218.4, 5038].map(Math.log);
    expect(outlierScreen(quiet, 0.01).dropped).toEqual([expect.objectContaining({ index: 4 })]);
    expect(outlierScreen(quiet, 0.01, 0.075).dropped).toEqual([]);
    expect(outlierScreen(logs, 0.01, 0.075)).toMatchObject({ kept: [0, 1, 2, 3, 5], dropped: [{ index: 4 }] });
  });

  it('resamples blocks of a series: same length, values from the series', () => {
    const s = [1, 2, 3, 4, 5, 6, 7, 8];
    const r = blockResample(s, seededRandom(1));
    expect(r).toHaveLength(8);
    expect([...r].every((v) => s.includes(v))).toBe(true);
  });

  it('resamples runs, not only seconds: flat runs at different levels still give an interval', () => {
    const flat = (level: number) => Array.from({ length: 10 }, () => level);
    const spreadRuns = [flat(4000), flat(5000), flat(6000), flat(5000)];
    const one = bootstrapEffectInterval(spreadRuns, [flat(5000)], { resamples: 2000, alpha: 0.05 }, seededRandom(7));
    // Seconds alone carry no noise here: a bootstrap of seconds within fixed runs would give a zero-width interval.
    expect(one[1] - one[0]).toBeGreaterThan(0.1);
    expect(one[0]).toBeLessThan(0);
    expect(one[1]).toBeGreaterThan(0);
    expect(bootstrapEffectInterval(spreadRuns, [flat(5000)], { resamples: 2000, alpha: 0.05 }, seededRandom(7))).toEqual(one);
    const same = [flat(5000), flat(5000), flat(5000)];
    const none = bootstrapEffectInterval(same, [flat(4000)], { resamples: 500, alpha: 0.05 }, seededRandom(7));
    expect(none[0]).toBeCloseTo(-0.2, 12);
    expect(none[1]).toBeCloseTo(-0.2, 12);
  });
});

describe('verdict', () => {
  it('flags half the throughput as regressed, with the numbers and the baseline spread', () => {
    const v = compareClass('gp3', baseline, [unit('c', series(2500, 20, 0.05))], options, seededRandom(1));
    expect(v.verdict).toBe('regressed');
    expect(v.effect).toBeLessThan(-0.4);
    expect(v.ci![1]).toBeLessThan(0);
    expect(v.pValue).toBeLessThan(0.001);
    expect(v.t).toBeLessThan(-5);
    expect(v.df).toBe(5);
    // Below all six baseline runs: the rank p is at its floor, 1/7, far from alpha; the t test is not.
    expect(v.rankP).toBeCloseTo(1 / 7, 12);
    expect(v.baseline).toMatchObject({ runs: 6, samples: 120 });
    expect(v.baseline.spread!.cv).toBeGreaterThan(0.03);
    expect(v.baseline.spread!.cv).toBeLessThan(0.05);
    expect(v.baseline.spread!.min).toBeLessThan(v.baseline.spread!.max);
    expect(v.candidate).toMatchObject({ runs: 1, samples: 20 });
    expect(v.detectableDrop).toBeGreaterThanOrEqual(options.minEffect);
    expect(v.reason).toMatch(/effect -\d+\.\d %, 95 % CI \[-\d+\.\d %, -\d+\.\d %\]; t = -\d+\.\d\d on logs, -\d+\.\d\d on TPS, df 5, p = /);
    expect(v.reason).toMatch(/run-to-run CV \d\.\d+ %, range 4,\d{3}-5,\d{3}/);
  });

  it('flags a drop from identical baseline runs (a device held at its budget) with an infinite t, printed as one', () => {
    const held = Array.from({ length: 5 }, (_, i) => unit(`h${i}`, Array.from({ length: 8 }, () => 20)));
    const v = compareClass('gp3', held, [unit('c', Array.from({ length: 8 }, () => 10))], options, seededRandom(1));
    expect(v.verdict).toBe('regressed');
    expect(v.baseline.spread!.cv).toBe(0);
    expect(v.t).toBe(-Infinity);
    expect(v.reason).toMatch(/TPS 10 vs 20 \(effect -50\.0 %, .*; t = -∞ on logs, -∞ on TPS, df 4, p = 0\.0e\+0;/);
    // The same runs again: no difference, no verdict against them.
    const same = compareClass('gp3', held, [unit('c', Array.from({ length: 8 }, () => 20))], options, seededRandom(1));
    expect(same.verdict).toBe('pass');
    expect(same.reason).toMatch(/; t = 0\.00 on logs, 0\.00 on TPS,/);
  });

  it('passes a rerun within the minimum effect, and flags a significant gain as improved', () => {
    const same = compareClass('gp3', baseline, [unit('c', series(5150, 20, 0.05, 4))], options, seededRandom(1));
    expect(same.verdict).toBe('pass');
    expect(Math.abs(same.effect!)).toBeLessThan(options.minEffect);
    expect(compareClass('gp3', baseline, [unit('c', series(7000, 20, 0.05))], options, seededRandom(1)).verdict).toBe('improved');
  });

  it('is inconclusive when a large drop is within the run-to-run spread of the baseline', () => {
    // Runs spread by about 25 %: a single run 30 % below their middle happens by chance.
    const noisy = runsAt([5000, 3400, 6300, 4100, 5600, 4500]);
    const v = compareClass('gp3', noisy, [unit('c', series(3300, 20, 0.05))], options, seededRandom(1));
    expect(v.effect).toBeLessThan(-options.minEffect);
    expect(v.pValue).toBeGreaterThan(options.alpha);
    expect(v.verdict).toBe('inconclusive');
    expect(v.reason).toMatch(/within the baseline's run-to-run noise/);
    expect(v.baseline.spread!.cv).toBeGreaterThan(0.2);
    // Runs all over the place: no drop short of all the throughput could count.
    const wild = compareClass('gp3', runsAt([600, 9000, 5000, 900, 8000]), [unit('c', series(3300, 20, 0.05))], options, seededRandom(1));
    expect(wild.detectableDrop).toBe(1);
    expect(wild.reason).toMatch(/a drop of 100 % or more would count/);
    // The same drop against the tight baseline is a regression.
    expect(compareClass('gp3', baseline, [unit('c', series(3300, 20, 0.05))], options, seededRandom(1)).verdict).toBe('regressed');
  });

  it('is inconclusive with too little history, and sets aside runs with too few seconds', () => {
    const few = compareClass('gp3', baseline.slice(0, 4), [unit('c', series(2500, 20, 0.05))], options, seededRandom(1));
    expect(few.verdict).toBe('inconclusive');
    expect(few.reason).toMatch(/^4 usable baseline runs .* at least 5/);
    expect(few.effect).toBeNull();
    const short = compareClass('gp3', baseline, [unit('c', [2500, 2400])], options, seededRandom(1));
    expect(short.verdict).toBe('inconclusive');
    expect(short.reason).toMatch(/at least 5 per-second samples/);
    // A short baseline run does not count towards the minimum.
    const withShort = compareClass('gp3', [...baseline.slice(0, 4), unit('s', [5000, 5000])], [unit('c', series(2500, 20, 0.05))], options, seededRandom(1));
    expect(withShort.verdict).toBe('inconclusive');
    expect(withShort.setAside).toEqual([expect.objectContaining({ runId: 's', why: expect.stringMatching(/2 per-second samples/) })]);
  });

  it('sets aside a disturbed baseline run, so it neither hides a regression nor lowers the bar', () => {
    const disturbed = [...baseline, unit('d', series(2000, 20, 0.05))];
    const candidate = [unit('c', series(3500, 20, 0.05))];
    const v = compareClass('gp3', disturbed, candidate, options, seededRandom(1));
    expect(v.setAside).toEqual([expect.objectContaining({ runId: 'd', why: expect.stringMatching(/^baseline outlier: 1,9\d\d TPS is beyond the other runs' spread \(p = /) })]);
    expect(v.baseline.runs).toBe(6);
    expect(v.verdict).toBe('regressed');
    expect(v.reason).toMatch(/set aside: d-gp3-0 \(baseline outlier/);
    // Kept in, the disturbed run widens the spread until the same 30 % drop is lost in it.
    const kept = compareClass('gp3', disturbed, candidate, verdictOptions({ outlierAlpha: 0 }), seededRandom(1));
    expect(kept.setAside).toEqual([]);
    expect(kept.baseline.spread!.cv).toBeGreaterThan(0.2);
    expect(kept.verdict).toBe('inconclusive');
  });

  it('calls a run that measured no throughput regressed', () => {
    const v = compareClass('gp3', baseline, [unit('c', Array.from({ length: 20 }, () => 0))], options, seededRandom(1));
    expect(v.verdict).toBe('regressed');
    expect(v.effect).toBe(-1);
    expect(v.pValue).toBeLessThan(1e-5);
  });

  it('compares each class with the same class of the same kind, takes the worst verdict, and repeats itself', () => {
    const run = (id: string, gp3: number, disk: number) => ({
      runId: id,
      classes: {
        gp3: { kind: 'emulated-ebs', units: [unit(id, series(gp3, 20, 0.05))] },
        'local-disk': { kind: 'local-disk', units: [unit(id, series(disk, 20, 0.05, 1))] },
      },
    });
    const history = [run('b1', 5000, 9000), run('b2', 5100, 9300), run('b3', 4900, 8800), run('b4', 5200, 9100), run('b5', 4950, 9200)];
    const input = { candidate: run('c', 2500, 9000).classes, baseline: history, pinned: false, options, seed: seedFrom('c') };
    const v = decideVerdict(input);
    expect(v.classes.map((c) => [c.className, c.verdict])).toEqual([
      ['gp3', 'regressed'],
      ['local-disk', 'pass'],
    ]);
    expect(v.verdict).toBe('regressed');
    expect(v.method).toBe(VERDICT_METHOD);
    expect(v.baselineRunIds).toEqual(['b1', 'b2', 'b3', 'b4', 'b5']);
    expect(v.summary).toMatch(/^gp3: regressed: /);
    expect(decideVerdict(input)).toEqual(v);
    // A class of another kind under the same name is not comparable.
    const renamed = decideVerdict({ ...input, candidate: { gp3: { kind: 'local-disk', units: [unit('c', series(2500, 20, 0.05))] } } });
    expect(renamed.verdict).toBe('inconclusive');
    expect(overallVerdict([])).toBe('inconclusive');
  });

  it('checks verdict options, naming the field', () => {
    expect(verdictOptionProblems(undefined)).toEqual([]);
    expect(verdictOptionProblems({ minEffect: 0.2, alpha: 0.01, outlierAlpha: 0, minBaselineRuns: 2 })).toEqual([]);
    const problems = verdictOptionProblems({ minEffect: 2, alpha: 'x', resamples: 0.5, typo: 1, outlierAlpha: 0.6, minBaselineRuns: 1 });
    expect(problems.map((p) => p.path).sort()).toEqual([
      'regression.alpha',
      'regression.minBaselineRuns',
      'regression.minEffect',
      'regression.outlierAlpha',
      'regression.resamples',
      'regression.typo',
    ]);
    expect(verdictOptionProblems('fast')[0].path).toBe('regression');
  });
});

describe('verdict in the report', () => {
  it('shows the baseline spread and the drop that counts', () => {
    const v = decideVerdict({
      candidate: { gp3: { kind: 'emulated-ebs', units: [unit('c', series(2500, 20, 0.05))] } },
      baseline: baseline.map((u) => ({ runId: u.runId, classes: { gp3: { kind: 'emulated-ebs', units: [u] } } })),
      pinned: true,
      options,
      seed: 1,
    });
    const text = verdictMarkdown(v).join('\n');
    expect(text).toContain('## Regression verdict: **regressed**');
    expect(text).toContain('6 pinned baseline runs');
    expect(text).toMatch(/prediction t test over runs/);
    const row = text.split('\n').find((l) => l.startsWith('| gp3 |'))!;
    const cv = `${(v.classes[0].baseline.spread!.cv! * 100).toFixed(1)} %`;
    const { min, max } = v.classes[0].baseline.spread!;
    expect([min, max].map(Math.round)).toEqual([4779, 5254]);
    expect(row).toContain(`| ${cv} | 4,779-5,254 |`);
    expect(row).toContain(`| ${(v.classes[0].detectableDrop! * 100).toFixed(1)} % |`);
  });

  it('still renders a verdict written before the run was the unit', () => {
    const old = {
      verdict: 'pass',
      classes: [
        {
          className: 'gp3',
          verdict: 'pass',
          reason: 'change within the minimum effect of 15 %',
          baseline: { runs: 3, samples: 24, runMedians: [5000, 5100, 4900], medianTps: 5000 },
          candidate: { runs: 1, samples: 8, runMedians: [5050], medianTps: 5050 },
          effect: 0.01,
          ci: [-0.02, 0.04],
          u: 40,
          z: 0.5,
          pValue: 0.6,
        },
      ],
      baselineRunIds: ['a', 'b', 'c'],
      pinned: false,
      options: { minEffect: 0.15, alpha: 0.05, resamples: 4000, minBaselineRuns: 3, minSamples: 5, maxBaselineRuns: 10 },
      summary: 'gp3: pass',
    } as unknown as Verdict;
    const text = verdictMarkdown(old).join('\n');
    expect(text).toMatch(/Method \(a verdict from before the run was the unit\)/);
    expect(text).toMatch(/\| gp3 \| pass \| 5,050 \| 5,000 \| \+1\.0 % \|/);
  });
});

describe('error rates on synthetic histories (fixed seed, a small version of bench/verdict-error-rates)', () => {
  const alpha = options.alpha;
  // 300 comparisons: the standard error of a 5 % rate is 1.3 points; 3.5 points of margin is about 2.8 of them.
  const margin = 0.035;
  const noChange: SimulationCase = {
    baselineRuns: options.minBaselineRuns,
    candidateRuns: 1,
    runCv: 0.2,
    runNoise: 'normal',
    trueEffect: 0,
    comparisons: 300,
    ...SECOND_NOISE,
  };
  const fast = verdictOptions({ resamples: 1000 });

  it('calls at most alpha (plus a margin) of unchanged runs regressed, at CV 20 % and either noise model', () => {
    for (const runNoise of ['normal', 'lognormal'] as const) {
      const counts = simulateVerdicts({ ...noChange, runNoise }, 11, fast);
      expect(counts.regressed / noChange.comparisons).toBeLessThanOrEqual(alpha + margin);
      expect(counts.improved / noChange.comparisons).toBeLessThanOrEqual(alpha + margin);
    }
  });

  it('fails a verdict that lets only the minimum effect decide (what pooling the seconds amounted to)', () => {
    const medianOf = (units: TpsUnit[]) => median(units.flatMap((u) => u.tpsSeries)) as number;
    const effectOnly: Decide = (input) => {
      const change = medianOf(input.candidate.gp3.units) / medianOf(input.baseline.flatMap((b) => b.classes.gp3.units)) - 1;
      return { verdict: change <= -input.options.minEffect ? 'regressed' : 'pass' } as Verdict;
    };
    const counts = simulateVerdicts(noChange, 11, fast, effectOnly);
    expect(counts.regressed / noChange.comparisons).toBeGreaterThan(alpha + margin);
  });

  it('still catches most 30 % drops at CV 10 % with 10 baseline runs', () => {
    const drop = { ...noChange, runNoise: 'lognormal' as const, runCv: 0.1, baselineRuns: 10, trueEffect: -0.3, comparisons: 200 };
    // The bench measures about 86 %; 75 % is 3.5 standard errors below it.
    expect(simulateVerdicts(drop, 12, fast).regressed / drop.comparisons).toBeGreaterThanOrEqual(0.75);
    // A verdict that never calls anything regressed fails here, though it would pass the false-positive check.
    const never: Decide = () => ({ verdict: 'inconclusive' }) as Verdict;
    expect(simulateVerdicts(drop, 12, fast, never).regressed / drop.comparisons).toBeLessThan(0.75);
  });

  it('knows the most any test can catch: a 30 % drop in one run at CV 20 % is out of reach of 90 %', () => {
    // sigma = sqrt(ln 1.04) = 0.19804; |ln 0.7| / sigma - 1.64485 = 0.15613; Phi(0.15613) = 0.5620.
    expect(powerCeiling({ runCv: 0.2, candidateRuns: 1, trueEffect: -0.3 }, 0.05)).toBeCloseTo(0.562, 3);
    expect(powerCeiling({ runCv: 0.1, candidateRuns: 1, trueEffect: -0.3 }, 0.05)).toBeGreaterThan(0.9);
  });

  it('judges a measured share against its target with its interval', () => {
    expect(wilsonInterval(50, 1000)[0]).toBeCloseTo(0.0382, 3);
    expect(wilsonInterval(50, 1000)[1]).toBeCloseTo(0.0653, 3);
    expect(targetMet(40, 1000, { atMost: 0.05 })).toBe('yes');
    expect(targetMet(55, 1000, { atMost: 0.05 })).toBe('within noise');
    expect(targetMet(80, 1000, { atMost: 0.05 })).toBe('no');
    expect(targetMet(870, 1000, { atLeast: 0.9 })).toBe('no');
    expect(targetMet(890, 1000, { atLeast: 0.9 })).toBe('within noise');
  });
});
