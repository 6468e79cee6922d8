/**
 * When a running step may show how long it has left: one rule for every estimate made from a step's own progress.
 * Activities apply it where the progress is measured; the CLI, the UI's current details, the progress query and
 * the heartbeat details only show what it gave. (A step of fixed length, pgbench's -T, knows its remaining time from
 * its clock and needs no estimate.)
 *
 * An ETA from a rate not yet measured is noise: the demo showed `stepEtaSeconds 191,740` at 0 % of writing the
 * backlog (the first kilobytes of WAL over the first milliseconds), then finished the step in 38 s. So a step shows
 * none until its progress has been measured over two windows of time with a share of its work done, and none while
 * the rate over the latest window and the window before it differ by more than a ratio: then the rate is not
 * steady and no single figure would be honest. Each window is a quarter of the time measured so far, so the two
 * together are the latest half: the start-up of a step weighs less the longer it runs, and a chunked measure (rows
 * committed a chunk at a time) fills windows that grow with it.
 *
 * Pure and deterministic (no clock: callers pass seconds), so workflow code may use it too.
 */

/** The rule's parameters; ETA_RULE holds the lab's. */
export interface EtaRule {
  /** No ETA before the measure spans this many seconds (two windows of at least half of it each). */
  minSeconds: number;
  /** ... nor before this share of the step's work was done since its measure began. */
  minFraction: number;
  /** Each window is this share of the seconds measured so far (at most 0.5: two windows must fit). */
  windowShare: number;
  /** The rate over the latest window and the window before it may differ by at most this factor. */
  maxRateRatio: number;
}

export const ETA_RULE: EtaRule = { minSeconds: 10, minFraction: 0.02, windowShare: 0.25, maxRateRatio: 1.5 };

/** One reading of a step's progress: `done` of `total` units (bytes, blocks, chunks), `seconds` into the step. */
export interface ProgressSample {
  seconds: number;
  done: number;
  total: number;
}

/**
 * What the rule concluded from a series: the ETA in seconds and the measured rate (units a second), or why there is
 * neither. A finished step has 0 s left whatever its rate was.
 */
export type EtaVerdict =
  | { eta: number; rate: number }
  | { eta: 0; rate: undefined; why: 'done' }
  | { eta: undefined; rate: undefined; why: 'too early' | 'too little done' | 'no progress' | 'rate not steady' };

/**
 * The rule on a step's series, oldest first; the last sample is now. A sample whose done went backwards or whose
 * total changed starts a new measure (the next table of a step, a restarted scan): only the latest measure counts.
 */
export function etaVerdict(series: readonly ProgressSample[], rule: EtaRule = ETA_RULE): EtaVerdict {
  const samples = series.slice(latestMeasureStart(series));
  const now = samples.at(-1);
  const none = (why: 'too early' | 'too little done' | 'no progress' | 'rate not steady') => ({ eta: undefined, rate: undefined, why }) as const;
  if (!now) return none('too early');
  if (now.done >= now.total) return { eta: 0, rate: undefined, why: 'done' };
  const first = samples[0];
  const span = now.seconds - first.seconds;
  const window = Math.max(rule.minSeconds / 2, span * rule.windowShare);
  if (span < rule.minSeconds || span < 2 * window) return none('too early');
  if (now.done - first.done < rule.minFraction * (now.total - first.done)) return none('too little done');
  const at = (seconds: number) => doneAt(samples, seconds);
  const earlier = (at(now.seconds - window) - at(now.seconds - 2 * window)) / window;
  const latest = (now.done - at(now.seconds - window)) / window;
  if (!(earlier > 0) || !(latest > 0)) return none('no progress');
  if (Math.max(earlier, latest) > rule.maxRateRatio * Math.min(earlier, latest)) return none('rate not steady');
  const rate = (earlier + latest) / 2;
  return { eta: Math.round((now.total - now.done) / rate), rate };
}

/** Seconds left by the rule, or undefined when it shows none. */
export function etaSeconds(series: readonly ProgressSample[], rule: EtaRule = ETA_RULE): number | undefined {
  return etaVerdict(series, rule).eta;
}

/**
 * The rule fed one reading at a time, as a step measures itself. It keeps what the rule can still look at (the
 * windows reach back half the span at most) and thins it to a few hundred readings however long the step runs.
 */
export class EtaTracker {
  private samples: ProgressSample[] = [];

  constructor(private readonly rule: EtaRule = ETA_RULE) {}

  /** Records a reading and returns the rule's verdict on the series so far. */
  observe(seconds: number, done: number, total: number): EtaVerdict {
    const sample = { seconds, done, total };
    const last = this.samples.at(-1);
    if (last && startsNewMeasure(last, sample)) this.samples = [];
    const beforeLast = this.samples.at(-2);
    const first = this.samples[0];
    // The newest reading is always kept; it replaces the one before while that one is closer than the spacing.
    if (beforeLast && first && sample.seconds - beforeLast.seconds < (sample.seconds - first.seconds) / MAX_KEPT) this.samples[this.samples.length - 1] = sample;
    else this.samples.push(sample);
    const verdict = etaVerdict(this.samples, this.rule);
    this.forget();
    return verdict;
  }

  /** How many readings it keeps now. */
  get readings(): number {
    return this.samples.length;
  }

  /** Drops readings older than the windows can reach again (one is kept before that point to interpolate from). */
  private forget(): void {
    const first = this.samples[0];
    const now = this.samples.at(-1);
    if (!first || !now) return;
    const reach = now.seconds - 2 * Math.max(this.rule.minSeconds / 2, (now.seconds - first.seconds) * this.rule.windowShare);
    // The span shrinks as old readings go, so the reach is taken from the measure's start, which is kept.
    let drop = 1;
    while (drop + 1 < this.samples.length && this.samples[drop + 1].seconds <= reach) drop++;
    if (drop > 1) this.samples.splice(1, drop - 1);
  }
}

/** Readings kept between the measure's start and now, about: the spacing is the span over this. */
const MAX_KEPT = 256;

function startsNewMeasure(before: ProgressSample, after: ProgressSample): boolean {
  return after.done < before.done || after.total !== before.total || after.seconds < before.seconds;
}

function latestMeasureStart(series: readonly ProgressSample[]): number {
  for (let i = series.length - 1; i > 0; i--) if (startsNewMeasure(series[i - 1], series[i])) return i;
  return 0;
}

/** Work done at a moment, interpolated between the readings around it (the first reading before the series). */
function doneAt(samples: readonly ProgressSample[], seconds: number): number {
  if (seconds <= samples[0].seconds) return samples[0].done;
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1];
    const b = samples[i];
    if (seconds <= b.seconds) return b.seconds === a.seconds ? b.done : a.done + ((b.done - a.done) * (seconds - a.seconds)) / (b.seconds - a.seconds);
  }
  return samples[samples.length - 1].done;
}
