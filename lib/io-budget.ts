/**
 * One IOPS budget for reads and writes together, as an EBS volume has (gp3: 3,000 IOPS and 125 MiB/s for both), on
 * kernels whose throttles keep separate read and write limits (cgroup v1 blkio.throttle.*, v2 io.max; no
 * device-mapper here for a combined one). Every period the controller reads what the host's cgroup did on the device
 * and re-splits the budget: a direction that left its share unused (below SATURATED of it) keeps what it used plus
 * HEADROOM, and the rest goes to the other one. In a closed loop (each backend reads, then writes, then reads) the
 * split settles where the workload's own read/write mix puts it; reads + writes never exceed the budget, because
 * the two limits always add up to it.
 *
 * The period is the kernel's throttle slice (100 ms): v1 and v2 restart the slice whenever a limit is written and
 * allow one slice's worth of I/O at once, so writing more often than once a slice would let more than the budget
 * through. A limit is written only when it moved (MIN_CHANGE), for the same reason.
 */
import { ioCounters, setIoLimitSplit, type HostCgroup, type IoLimitSplit } from './cgroups';
import type { CgroupIoCounters } from './parsers/cgroup';

/** The throttle slice of blk-throttle (HZ / 10): the shortest period at which limits may be re-written. */
export const BUDGET_PERIOD_MS = 100;
/** A direction that used this share of its limit may have wanted more (the throttle held it). */
const SATURATED = 0.9;
/** An unsaturated direction keeps its use times this, so it can grow before the next period. */
const HEADROOM = 1.25;
/** Neither direction is ever held below this share of the budget (a commit's WAL write must get through in a slice). */
export const FLOOR_SHARE = 0.05;
/** Limits are re-written only when the read share moves by more than this share of the budget. */
const MIN_CHANGE = 0.02;
/** The most the split moves in one period: counts over 100 ms are noisy (a WAL flush is a burst), so it steps, it does not jump. */
export const MAX_STEP = 0.1;
/** Weight of the newest period in the smoothed rates (about 300 ms of memory at 100 ms periods). */
export const SMOOTHING = 0.3;

/** How a budget of `iops` is split between reads and writes now. */
export interface BudgetSplit {
  readIops: number;
  writeIops: number;
}

/** The even split a volume starts with. */
export function evenSplit(iops: number): BudgetSplit {
  return { readIops: iops / 2, writeIops: iops / 2 };
}

/**
 * The next split of a budget of `iops`, from the current one and the reads and writes per second done under it.
 * Pure: the rule the controller applies every period (unit-tested on made-up demand).
 */
export function nextSplit(iops: number, current: BudgetSplit, used: { reads: number; writes: number }): BudgetSplit {
  const floor = FLOOR_SHARE * iops;
  const clamp = (v: number) => Math.min(iops - floor, Math.max(floor, v));
  const readsHeld = used.reads >= SATURATED * current.readIops;
  const writesHeld = used.writes >= SATURATED * current.writeIops;
  let target: number;
  if (readsHeld && writesHeld) return current; // both want more: the workload's mix found the split
  if (readsHeld) target = iops - clamp(used.writes * HEADROOM);
  else if (writesHeld) target = clamp(used.reads * HEADROOM);
  else target = clamp(used.reads + (iops - used.reads - used.writes) / 2); // neither: each gets half the slack
  const step = MAX_STEP * iops;
  const readIops = clamp(Math.min(current.readIops + step, Math.max(current.readIops - step, target)));
  return { readIops, writeIops: iops - readIops };
}

/** Rates smoothed over a few periods (an exponentially weighted mean), so one burst does not swing the split. */
export function smoothed(previous: { reads: number; writes: number } | null, latest: { reads: number; writes: number }) {
  if (!previous) return latest;
  return { reads: previous.reads + SMOOTHING * (latest.reads - previous.reads), writes: previous.writes + SMOOTHING * (latest.writes - previous.writes) };
}

/** The limits for a split: bandwidth divided in the same shares as the IOPS. */
export function limitsFor(split: BudgetSplit, iops: number, bytesPerSecond: number): IoLimitSplit {
  return {
    readIops: split.readIops,
    writeIops: split.writeIops,
    readBytesPerSecond: (bytesPerSecond * split.readIops) / iops,
    writeBytesPerSecond: (bytesPerSecond * split.writeIops) / iops,
  };
}

/** One device's budget, shared by reads and writes, held by a timer in the process that owns the host (its agent). */
export class SharedIoBudget {
  private timer: NodeJS.Timeout | null = null;
  private last: { at: number; counters: CgroupIoCounters } | null = null;
  private current: BudgetSplit;
  private rates: { reads: number; writes: number } | null = null;
  /** Re-splits done, for progress and tests. */
  resplits = 0;

  constructor(
    private readonly cg: Pick<HostCgroup, 'kind' | 'ioDir'>,
    private readonly majMin: string,
    private readonly iops: number,
    private readonly bytesPerSecond: number,
  ) {
    this.current = evenSplit(iops);
  }

  get split(): BudgetSplit {
    return { ...this.current };
  }

  /** Applies the even split and starts re-splitting every period. */
  start(): void {
    this.stop();
    this.current = evenSplit(this.iops);
    this.rates = null;
    this.write();
    this.last = this.read();
    this.timer = setInterval(() => this.tick(), BUDGET_PERIOD_MS);
    // The host's agent must be able to exit with the timer running.
    this.timer.unref();
  }

  /** Stops re-splitting; the limits stay as last written (they still add up to the budget). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private read(): { at: number; counters: CgroupIoCounters } | null {
    const counters = ioCounters(this.cg, this.majMin);
    return counters ? { at: Date.now(), counters } : null;
  }

  private tick(): void {
    const now = this.read();
    const before = this.last;
    this.last = now;
    if (!now || !before) return;
    const seconds = (now.at - before.at) / 1000;
    // A late timer (a busy machine) still measures rates over what really elapsed; a clock step back is skipped.
    if (seconds <= 0) return;
    // Every write counts as demand, v1's background writeback included: the part charged to the host takes the write
    // limit's allowance, and left out (a version did) the WAL's own writes queued behind it (docs/storage-emulation.md).
    const latest = { reads: (now.counters.reads - before.counters.reads) / seconds, writes: (now.counters.writes - before.counters.writes) / seconds };
    this.rates = smoothed(this.rates, latest);
    const next = nextSplit(this.iops, this.current, this.rates);
    if (Math.abs(next.readIops - this.current.readIops) < MIN_CHANGE * this.iops) return;
    this.current = next;
    this.write();
    this.resplits += 1;
  }

  private write(): void {
    setIoLimitSplit(this.cg, this.majMin, limitsFor(this.current, this.iops, this.bytesPerSecond));
  }
}

