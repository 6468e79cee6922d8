/**
 * Where hosts come from. A host is where one Postgres lives: a folder, a storage device, a memory limit, a Postgres
 * and a host agent. Workflows never know which provider made a host: they route host activities to
 * `host:<hostId>` and call the provider through this interface (local folders and cgroups, or EC2). What a host is
 * (its request, record, configuration) is common/core/hosts.ts.
 */
import type { HostActor, HostInspection, HostRecord, HostRequest, ManagedHost, NetworkCutRecord, NetworkCutRequest, NetworkHealRecord, ProviderName } from '../../common/core/hosts';
import type { VolumeStats } from '../../lib/volume';
import type { FailoverDrillSpec, RestoreDrillSpec } from '../../common/input/drill-spec';
import type { ExperimentSpec } from '../../common/input/spec';

/** What a power cut did (cutPower): the device's counters at the cut and after, and what it dropped. */
export interface PowerCutReport {
  hostId: string;
  /** Writes the device had not made durable, dropped at the cut. */
  droppedPages: number;
  droppedBytes: number;
  /** The device's counters just before the cut and once it serves again. */
  before: VolumeStats;
  after: VolumeStats;
  /** Seconds from the cut until the volume was mounted again (ext4 replayed its journal). */
  seconds: number;
  /** When the cut was asked for, and when the volume served again. */
  cutAt: string;
  backAt: string;
}

export interface HostProvider {
  readonly name: ProviderName;
  /**
   * Claims the host for the request's owner before it touches anything, then creates it, or returns it when it
   * already exists and is that owner's (a retried activity never provisions twice). Another run's host is refused
   * (OwnedByAnotherRunError, naming both runs).
   */
  provision(req: HostRequest): Promise<HostRecord>;
  /**
   * Removes the host and everything it used; idempotent; resolves when it is gone. A host another run owns is left
   * alone (its owner's teardown removes it): the message says so; a sweeper's removal of a host whose record names
   * another run than it judged is refused.
   */
  teardown(hostId: string, actor?: HostActor): Promise<string>;
  /** Crashes the host without warning: every process on it dies (failover drills, fault tests). Its owner's only. */
  kill(hostId: string, actor?: HostActor): Promise<void>;
  /**
   * Cuts the network between two groups of its hosts (the partition drill), replacing a cut made around the same
   * host; its teardown removes the cut too. Providers that cannot cut leave it out.
   */
  cutNetwork?(cut: NetworkCutRequest): Promise<NetworkCutRecord>;
  /**
   * Cuts the power of a host on a modelled volume (the power-cut drill): the device drops what it had not made
   * durable, every process of the host dies, the volume comes back on what was durable. Its owner's only. Providers
   * without a device that can drop writes leave it out.
   */
  cutPower?(hostId: string, actor?: HostActor): Promise<PowerCutReport>;
  /** Removes the cut made around a host; idempotent (no cut there is fine). */
  healNetwork?(hostId: string): Promise<NetworkHealRecord>;
  /** Every host this provider manages, for the sweeper (with the cuts made around them among its resources). */
  list(): Promise<ManagedHost[]>;
  /**
   * What a person needs when the host stopped answering or never showed up (processes, OOM kills, console, log); of
   * another run's host, only whose it is.
   */
  inspect(hostId: string, actor?: HostActor): Promise<HostInspection>;
  /** Checks a spec against the provider's account (subnet, image, instance type) before anything is created. */
  preflight?(spec: ExperimentSpec): Promise<{ problems: string[]; warnings: string[] }>;
  /** The same for a drill: the account's subnet, image and instance type, and the drill's cost ceiling. */
  preflightDrill?(kind: 'restore' | 'failover', spec: RestoreDrillSpec | FailoverDrillSpec): Promise<{ problems: string[]; warnings: string[] }>;
}
