/**
 * Where hosts come from. A host is where one Postgres lives: a folder, a storage device, a memory limit, a Postgres
 * and a host agent. Workflows never know which provider made a host: they route host activities to
 * `host:<hostId>` and call the provider through this interface (local folders and cgroups, or EC2). What a host is
 * (its request, record, configuration) is common/core/hosts.ts.
 */
import type { HostInspection, HostRecord, HostRequest, ManagedHost, ProviderName } from '../../common/core/hosts';
import type { FailoverDrillSpec, RestoreDrillSpec } from '../../common/input/drill-spec';
import type { ExperimentSpec } from '../../common/input/spec';

export interface HostProvider {
  readonly name: ProviderName;
  /** Creates the host, or returns it when it already exists (a retried activity never provisions twice). */
  provision(req: HostRequest): Promise<HostRecord>;
  /** Removes the host and everything it used; idempotent; resolves when it is gone. */
  teardown(hostId: string): Promise<void>;
  /** Crashes the host without warning: every process on it dies (failover drills, fault tests). */
  kill(hostId: string): Promise<void>;
  /** Every host this provider manages, for the sweeper. */
  list(): Promise<ManagedHost[]>;
  /** What a person needs when the host stopped answering or never showed up (processes, OOM kills, console, log). */
  inspect(hostId: string): Promise<HostInspection>;
  /** Checks a spec against the provider's account (subnet, image, instance type) before anything is created. */
  preflight?(spec: ExperimentSpec): Promise<{ problems: string[]; warnings: string[] }>;
  /** The same for a drill: the account's subnet, image and instance type, and the drill's cost ceiling. */
  preflightDrill?(kind: 'restore' | 'failover', spec: RestoreDrillSpec | FailoverDrillSpec): Promise<{ problems: string[]; warnings: string[] }>;
}
