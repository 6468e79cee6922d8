/**
 * The one owner of a host's modelled I/O cap (the device model of its modelled volume, docs/storage-emulation.md):
 * the volume's server starts with its model on; the host agent applies it again when it starts (an agent that died
 * mid-preparation left the model off) and lifts it for preparation that nothing measures (the load, what a phase
 * prepares before its timed part), applying it again before the measured part. Lifting switches the model off
 * (I/O served at once, counted apart); applying switches it on, its budgets starting afresh.
 *
 * A host without a modelled volume makes this a no-op that says why (`liftable` false, `note`): a local disk has no
 * cap, and a real gp3 volume's cap cannot be lifted, so on AWS preparation runs at the real cap.
 */
import type { HostConfig } from '../common/core/hosts';
import { NestedLift } from './nested-lift';
import { VolumeControl } from './volume';

/** What IoCap reads of a host's config. */
export type IoCapHost = Pick<HostConfig, 'kind' | 'emulated' | 'volume'>;

/** A modelled cap as the host's config states it, or why there is none to lift. Pure. */
export type IoCapPlan = { liftable: true; socket: string; model: string } | { liftable: false; note: string };

export function ioCapPlan(host: IoCapHost): IoCapPlan {
  if (host.kind === 'ebs') return { liftable: false, note: "a real EBS volume's cap cannot be lifted: preparation runs at the real cap" };
  if (host.kind === 'instance-store') return { liftable: false, note: 'no cap on this instance-store host: nothing to lift' };
  if (host.kind === 'local-disk') return { liftable: false, note: 'no modelled cap on this local-disk host: nothing to lift' };
  if (!host.emulated || !host.volume) return { liftable: false, note: 'the class is not modelled on this host (no modelled volume): nothing to lift' };
  return { liftable: true, socket: host.volume.socket, model: host.volume.model };
}

/** Switches a modelled volume's model on or off, and counts the I/O its model admitted (a seam for unit tests). */
export interface ModelSwitch {
  setModel(on: boolean): Promise<void>;
  /** Reads and writes the volume's model admitted (arrived while it was on) since the server started. */
  modelledIos(): Promise<number>;
}

/** A preparation's value, and whether the volume served all of it with the model off (measured, not assumed). */
export interface Prepared<T> {
  value: T;
  /** True only on a liftable host whose volume's model admitted no read or write between the lift and the apply. */
  preparedWithoutCap: boolean;
  /** Reads and writes the model admitted meanwhile (0 when lifted throughout; absent where nothing was lifted). An
   * older volume server without the count gives NaN, which is not 0: such a preparation is not claimed uncapped. */
  modelledIos?: number;
}

export class IoCap {
  readonly plan: IoCapPlan;
  private lifted = false;
  /** The model comes back when the last of nested preparations ends, not when an inner one does. */
  private readonly nested = new NestedLift(
    () => this.lift(),
    () => this.apply(),
  );
  private readonly control: ModelSwitch | null;

  constructor(host: IoCapHost, control?: ModelSwitch) {
    this.plan = ioCapPlan(host);
    this.control = this.plan.liftable ? (control ?? new VolumeControl(this.plan.socket)) : null;
  }

  /** Whether this host has a modelled cap that lift() removes; false: lift() and apply() do nothing. */
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

  /** Switches the device model off: I/O is served at once. */
  async lift(): Promise<void> {
    if (!this.control) return;
    this.lifted = true; // First: a lift cut short half-way still counts as lifted, so apply() puts the model back.
    await this.control.setModel(false);
  }

  /** Switches the device model on (again); idempotent. */
  async apply(): Promise<void> {
    if (!this.control) return;
    await this.control.setModel(true);
    this.lifted = false;
  }

  /**
   * Runs preparation with the cap lifted, and applies it again whatever happens (a failure, a cancellation). Nested
   * calls keep it lifted until the outermost ends: configurePostgres lifts it around initdb, and a restore or a publish
   * that restarts the server inside its own preparation ran the rest of it on the model (gp3 restores' checks read at
   * 125 MiB/s, 30 s where nvme's took 9, while their results said "prepared without the cap").
   */
  withoutCap<T>(prepare: () => Promise<T>): Promise<T> {
    return this.nested.during(prepare);
  }

  /**
   * withoutCap, and the volume's own count of the I/O its model admitted meanwhile: a preparation counts as
   * uncapped only when that count did not move, so a result cannot claim an uncapped preparation the volume did not see.
   * Where nothing is liftable the preparation runs as it is, and is not claimed uncapped.
   */
  async prepare<T>(prepare: () => Promise<T>): Promise<Prepared<T>> {
    if (!this.control) return { value: await prepare(), preparedWithoutCap: false };
    const control = this.control;
    let modelledIos = 0;
    const value = await this.withoutCap(async () => {
      const before = await control.modelledIos();
      const value = await prepare();
      modelledIos = (await control.modelledIos()) - before;
      return value;
    });
    return { value, preparedWithoutCap: modelledIos === 0, modelledIos };
  }
}
