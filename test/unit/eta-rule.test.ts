/**
 * The ETA rule (common/results/eta.ts) held on a recorded progress series: every heartbeat of the real load, VACUUM
 * and backlog phases at the demo's sizes (test/fixtures/progress/README.md says how it was recorded). The series
 * holds the demo's case: at 0 % of writing the backlog the old rule (remaining work at the average rate since the
 * step began) gave 59,408 s for a step that took 21 s; the demo printed 191,740 s for one that took 38 s.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ActivityProgress, StepMeasure } from '../../common/core/messages';
import { ETA_RULE, EtaTracker, etaSeconds, etaVerdict, type EtaRule, type ProgressSample } from '../../common/results/eta';
import { PROJECT_ROOT } from '../../lib/lab-paths';

interface ProgressFixture {
  phases: { phase: string; result: Record<string, number> }[];
  heartbeats: ActivityProgress[];
}

const fixture = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test/fixtures/progress/local-quick.json'), 'utf8')) as ProgressFixture;

/** Where each step's own duration is in its phase's result: a step's readings may stop a little before it ends. */
const STEP_SECONDS: Record<string, [phase: string, field: string]> = {
  rows: ['load', 'loadSeconds'],
  'primary keys': ['load', 'indexSeconds'],
  'vacuum analyze': ['load', 'vacuumSeconds'],
  'making dead tuples': ['vacuum', 'bloatSeconds'],
  'VACUUM (VERBOSE): heap blocks scanned': ['vacuum', 'vacuumSeconds'],
  'writing backlog': ['backlog', 'fillSeconds'],
  draining: ['backlog', 'drainSeconds'],
};

interface RecordedStep {
  step: string;
  readings: StepMeasure[];
  /** How long the step really took, in seconds. */
  seconds: number;
}

/** The recorded steps, each with its readings in order and its real duration. */
function recordedSteps(f: ProgressFixture): RecordedStep[] {
  const byStep = new Map<string, StepMeasure[]>();
  for (const beat of f.heartbeats) if (beat.measure) byStep.set(beat.measure.step, [...(byStep.get(beat.measure.step) ?? []), beat.measure]);
  return [...byStep].map(([step, readings]) => {
    const [phase, field] = STEP_SECONDS[step];
    const result = f.phases.find((p) => p.phase === phase)?.result[field];
    if (result === undefined) throw new Error(`no ${phase}.${field} for the step ${step}`);
    return { step, readings, seconds: Math.max(result, readings.at(-1)!.seconds) };
  });
}

/** An ETA rule as a step applies it: one reading at a time, an ETA (or none) after each. */
type AppliedRule = (readings: readonly ProgressSample[]) => (number | undefined)[];

/** The lab's rule, through the tracker the activities use. */
const trackerRule =
  (rule: EtaRule = ETA_RULE): AppliedRule =>
  (readings) => {
    const tracker = new EtaTracker(rule);
    return readings.map((r) => tracker.observe(r.seconds, r.done, r.total).eta);
  };

/** The lab's rule as the pure function over the whole series so far. */
const seriesRule: AppliedRule = (readings) => readings.map((_, i) => etaSeconds(readings.slice(0, i + 1)));

/** The rule the demo ran: the work left at the average rate since the step began, from the first reading on. */
const oldRule: AppliedRule = (readings) =>
  readings.map((r) => (r.done > 0 && r.seconds > 0 ? Math.max(0, Math.round(((r.total - r.done) * r.seconds) / r.done)) : undefined));

/** Readings where a rule showed an ETA above ten times the step's real duration. */
function overlong(steps: RecordedStep[], rule: AppliedRule): string[] {
  return steps.flatMap(({ step, readings, seconds }) =>
    rule(readings).flatMap((eta, i) => (eta !== undefined && eta > 10 * seconds ? [`${step} at ${readings[i].seconds} s: ETA ${eta} s, took ${seconds} s`] : [])),
  );
}

/** Readings where a shown ETA is not within a factor of 2 of the time the step really had left (give or take 2 s). */
function unreasonable(step: RecordedStep, rule: AppliedRule): string[] {
  return rule(step.readings).flatMap((eta, i) => {
    const left = step.seconds - step.readings[i].seconds;
    return eta !== undefined && (eta > 2 * left + 2 || eta < left / 2 - 2) ? [`at ${step.readings[i].seconds} s: ETA ${eta} s, ${left.toFixed(1)} s left`] : [];
  });
}

const steps = recordedSteps(fixture);
const step = (name: string) => steps.find((s) => s.step === name)!;

describe('the ETA rule on the recorded progress of the demo-sized phases', () => {
  it('holds the demo case: the old rule showed 59,408 s at 0 % of writing the backlog, a step of 21 s', () => {
    const backlog = step('writing backlog');
    const [first] = backlog.readings;
    expect(first).toEqual({ step: 'writing backlog', unit: 'bytes', seconds: 0.027, done: 488, total: 2 ** 30 });
    expect(oldRule([first])[0]).toBe(59_408);
    expect(backlog.seconds).toBeCloseTo(21.04, 2);
    expect(overlong(steps, oldRule)).toEqual(expect.arrayContaining([`writing backlog at 0.027 s: ETA 59408 s, took ${backlog.seconds} s`]));
  });

  it('never shows an ETA above 10 times the step’s real duration, over every recorded step', () => {
    expect(steps.map((s) => s.step).sort()).toEqual(Object.keys(STEP_SECONDS).sort());
    expect(overlong(steps, trackerRule())).toEqual([]);
    expect(overlong(steps, seriesRule)).toEqual([]);
  });

  it('fails that check on the old rule, and on the rule without its windows', () => {
    expect(overlong(steps, oldRule)).toEqual([
      expect.stringMatching(/^writing backlog at 0\.027 s: ETA 59408 s/),
      expect.stringMatching(/^writing backlog at 0\.23 s: ETA 33960 s/),
    ]);
    const noWindow = overlong(steps, trackerRule({ ...ETA_RULE, minSeconds: 0, minFraction: 0 }));
    expect(noWindow).toEqual([expect.stringMatching(/^writing backlog at 0\.23 s: ETA \d{5} s/)]);
  });

  it('shows an ETA once the rate is steady, within a factor of 2 of the time the step had left', () => {
    for (const name of ['writing backlog', 'rows', 'making dead tuples']) {
      const s = step(name);
      const etas = trackerRule()(s.readings);
      // Shown from the first reading 10 s into the measure on: these steps' rates were steady (one is a chunked measure).
      const firstShown = etas.findIndex((e) => e !== undefined);
      expect({ name, at: s.readings[firstShown]?.seconds }).toEqual({ name, at: expect.any(Number) });
      expect(s.readings[firstShown].seconds - s.readings[0].seconds).toBeLessThan(ETA_RULE.minSeconds + 1);
      // From then on mostly: the dead tuples' rate wavered twice, and their re-measurement (done went back) starts a
      // new measure that shows none for its few last seconds.
      const after = etas.slice(firstShown);
      expect(after.filter((e) => e !== undefined).length).toBeGreaterThanOrEqual(0.7 * after.length);
      expect({ name, off: unreasonable(s, trackerRule()) }).toEqual({ name, off: [] });
    }
    // The old rule failed this too: its first three ETAs of writing the backlog (59,408 s, 33,960 s, 48 s) were off.
    expect(unreasonable(step('writing backlog'), oldRule)).toHaveLength(3);
  });

  it('shows none on steps too short to measure a rate (the drain, the VACUUM scan, VACUUM ANALYZE)', () => {
    for (const name of ['draining', 'VACUUM (VERBOSE): heap blocks scanned', 'vacuum analyze', 'primary keys'])
      expect({ name, etas: trackerRule()(step(name).readings).filter((e) => e !== undefined && e > 0) }).toEqual({ name, etas: [] });
  });

  it('gives the same ETAs through the tracker (which keeps few readings) as over the whole series', () => {
    for (const s of steps) expect(trackerRule()(s.readings)).toEqual(seriesRule(s.readings));
  });
});

describe('the ETA rule on made-up series', () => {
  /** Readings every `every` seconds from `from` to `to` at `rate` units a second, continuing `before`. */
  function readings(before: ProgressSample[], to: number, rate: number, total: number, every = 0.5): ProgressSample[] {
    const out = [...before];
    let last = out.at(-1) ?? { seconds: 0, done: 0, total };
    while (last.seconds + every <= to + 1e-9) {
      last = { seconds: Math.round((last.seconds + every) * 1000) / 1000, done: last.done + rate * every, total };
      out.push(last);
    }
    return out;
  }

  it('waits for the windows and for a share of the work', () => {
    const steady = readings([{ seconds: 0, done: 0, total: 1000 }], 30, 10, 1000);
    expect(etaVerdict(steady.filter((r) => r.seconds <= 9.5))).toMatchObject({ eta: undefined, why: 'too early' });
    expect(etaVerdict(steady.filter((r) => r.seconds <= 10))).toEqual({ eta: 90, rate: 10 });
    const slow = readings([{ seconds: 0, done: 0, total: 100_000 }], 20, 10, 100_000);
    expect(etaVerdict(slow)).toMatchObject({ eta: undefined, why: 'too little done' });
  });

  it('shows none while the rate changes, and again once the new rate has held over both windows', () => {
    const fast = readings([{ seconds: 0, done: 0, total: 10_000 }], 20, 100, 10_000);
    expect(etaVerdict(fast)).toEqual({ eta: 80, rate: 100 });
    const slowed = readings(fast, 60, 20, 10_000);
    const verdicts = slowed.map((_, i) => etaVerdict(slowed.slice(0, i + 1)));
    const at = (seconds: number) => verdicts[slowed.findIndex((r) => r.seconds === seconds)];
    // The latest window is a quarter of the time so far: from a few seconds after the change on, it sees it.
    expect(at(25)).toMatchObject({ eta: undefined, why: 'rate not steady' });
    expect(at(35)).toMatchObject({ eta: undefined, why: 'rate not steady' });
    // 40 s in, both windows (20-30 s, 30-40 s) ran at the new rate: 7,600 units left at 20 a second.
    expect(at(40)).toEqual({ eta: 380, rate: expect.closeTo(20, 6) });
    expect(at(60)).toEqual({ eta: 360, rate: expect.closeTo(20, 6) });
  });

  it('shows none on a stall, 0 when done, and starts a new measure when the total changes or done goes back', () => {
    const running = readings([{ seconds: 0, done: 0, total: 1000 }], 20, 10, 1000);
    expect(etaVerdict(readings(running, 24, 0, 1000))).toMatchObject({ eta: undefined, why: 'rate not steady' });
    expect(etaVerdict(readings(running, 30, 0, 1000))).toMatchObject({ eta: undefined, why: 'no progress' });
    expect(etaVerdict([{ seconds: 1, done: 5, total: 5 }])).toMatchObject({ eta: 0, why: 'done' });
    const first = readings([{ seconds: 0, done: 0, total: 1000 }], 20, 10, 1000);
    expect(etaVerdict([...first, { seconds: 20.5, done: 5, total: 5000 }])).toMatchObject({ eta: undefined, why: 'too early' });
    expect(etaVerdict([...first, { seconds: 20.5, done: 100, total: 1000 }])).toMatchObject({ eta: undefined, why: 'too early' });
  });

  it('keeps a few hundred readings however long the step', () => {
    const tracker = new EtaTracker();
    let last;
    for (let i = 1; i <= 50_000; i++) last = tracker.observe(i / 5, i, 100_000);
    expect(last).toEqual({ eta: 10_000, rate: expect.closeTo(5, 6) });
    expect(tracker.readings).toBeLessThan(300);
  });
});
