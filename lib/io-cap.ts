/**
 * The one owner of a host's emulated I/O cap (a loop device under cgroup limits, docs/storage-emulation.md): the
 * provider sets it at provisioning; the host agent lifts it for preparation that nothing measures (the load, what a
 * phase prepares before its timed part) and applies it again before the measured part. Every cgroup write goes
 * through lib/cgroups.ts.
 *
 * An emulated EBS class's IOPS are one budget for reads and writes (`iopsBudget: shared`, lib/io-budget.ts): where
 * IoCap runs the controller (`holdBudget`, the host agent, for the host's life) apply() starts it and lift() stops it;
 * elsewhere (the provider, once at provisioning) apply() sets the even split, which the agent takes over.
 *
 * A host without an emulated cap makes this a no-op that says why (`liftable` false, `note`): a local disk has no cap,
 * and a real gp3 volume's cap cannot be lifted, so on AWS preparation runs at the real cap.
 */
import { deviceMajMin } from './block-devices';
import type { HostConfig } from '../common/core/hosts';
import { evenSplit, limitsFor, SharedIoBudget } from './io-budget';
import { removeIoLimits, setIoLimits, setIoLimitSplit, type HostCgroup } from './cgroups';

/** What IoCap reads of a host's config. */
export type IoCapHost = Pick<HostConfig, 'kind' | 'emulated' | 'limits' | 'device' | 'cgroup'>;

/** An emulated cap as the host's config states it, or why there is none to lift. Pure (majMin is given). */
export type IoCapPlan =
  | { liftable: true; cgroup: Pick<HostCgroup, 'kind' | 'ioDir'>; majMin: string; iops: number; bytesPerSecond: number; budget: 'shared' | 'separate' }
  | { liftable: false; note: string };

export function ioCapPlan(host: IoCapHost, majMin: string | null): IoCapPlan {
  if (host.kind === 'ebs') return { liftable: false, note: "a real EBS volume's cap cannot be lifted: preparation runs at the real cap" };
  if (host.kind !== 'emulated-ebs') return { liftable: false, note: `no emulated cap on this ${host.kind} host: nothing to lift` };
  const { iops, throughputMiBps } = host.limits;
  if (!host.emulated || iops === null || throughputMiBps === null)
    return { liftable: false, note: 'the class is not emulated on this host (no I/O limits): nothing to lift' };
  if (!host.cgroup?.ioDir) return { liftable: false, note: 'the host has no I/O cgroup: nothing to lift' };
  if (!majMin) return { liftable: false, note: `the host's device ${host.device ?? '(none)'} is unknown here: nothing to lift` };
  return {
    liftable: true,
    cgroup: { kind: host.cgroup.kind, ioDir: host.cgroup.ioDir },
    majMin,
    iops,
    bytesPerSecond: throughputMiBps * 2 ** 20,
    // A host made before the choice existed had the kernel's separate limits.
    budget: host.limits.iopsBudget ?? 'separate',
  };
}

export class IoCap {
  readonly plan: IoCapPlan;
  private lifted = false;
  private readonly budget: SharedIoBudget | null;

  /** `holdBudget`: this process runs a shared budget's controller (the host agent); otherwise apply() sets its even split. */
  constructor(host: IoCapHost, majMin: string | null = deviceMajMin(host.device), opts: { holdBudget?: boolean } = {}) {
    this.plan = ioCapPlan(host, majMin);
    const p = this.plan;
    this.budget = p.liftable && p.budget === 'shared' && opts.holdBudget ? new SharedIoBudget(p.cgroup, p.majMin, p.iops, p.bytesPerSecond) : null;
  }

  /** The shared budget's controller this cap runs, if any (its split and re-splits, for progress and tests). */
  get sharedBudget(): SharedIoBudget | null {
    return this.budget;
  }

  /** Whether this host has an emulated cap that lift() removes; false: lift() and apply() do nothing. */
  get liftable(): boolean {
    return this.plan.liftable;
  }

  /** Why lift() does nothing here (absent where it lifts). */
  get note(): string | undefined {
    return this.plan.liftable ? undefined : this.plan.note;
  }

  /** False only between a lift() and the apply() after it. */
  get capped(): boolean {
    return !this.lifted;
  }

  /** Removes the cap's throttle rules from the device. */
  lift(): void {
    if (!this.plan.liftable) return;
    this.lifted = true; // First: a lift cut short half-way still counts as lifted, so apply() puts everything back.
    this.budget?.stop();
    removeIoLimits(this.plan.cgroup, this.plan.majMin);
  }

  /** Sets the class's cap on the device (again); idempotent. */
  apply(): void {
    if (!this.plan.liftable) return;
    const { cgroup, majMin, iops, bytesPerSecond, budget } = this.plan;
    if (this.budget) this.budget.start();
    else if (budget === 'shared') setIoLimitSplit(cgroup, majMin, limitsFor(evenSplit(iops), iops, bytesPerSecond));
    else setIoLimits(cgroup, majMin, iops, bytesPerSecond);
    this.lifted = false;
  }

  /** Runs preparation with the cap lifted, and applies it again whatever happens (a failure, a cancellation). */
  async withoutCap<T>(prepare: () => Promise<T>): Promise<T> {
    try {
      this.lift();
      return await prepare();
    } finally {
      this.apply();
    }
  }
}
