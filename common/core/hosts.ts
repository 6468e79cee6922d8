/**
 * What a host is, as the workflows, the providers, the tools and the host agents see it: what a run asks for, what a
 * provider made, what an agent knows of its own host. Types only; the providers implement infra/providers/host-provider.ts.
 */
import type { AwsSpec, StorageClassSpec, StorageKind } from '../input/spec';

/** Where hosts come from: this machine, or EC2. */
export type ProviderName = 'local' | 'aws';

/** What the workflow asks for: one host of one storage class for one run. */
export interface HostRequest {
  runId: string;
  hostId: string;
  experiment: string;
  className: string;
  storageClass: StorageClassSpec;
  memoryLimitMiB: number;
  instanceType: string;
  /** Bytes the volume must hold (data, indexes, WAL, bloat); the provider adds its own headroom. */
  volumeBytes: number;
  expiresAt: string;
  postgresVersion?: number;
  /** The run's aws section (names of secrets, never their values); set when the spec's provider is aws. */
  aws?: AwsSpec;
  /**
   * Hosts asked for with the same scope share one generated database password (a drill's primary and standbys
   * replicate with it); without one each host gets its own. The password itself never leaves the hosts.
   */
  passwordScope?: string;
  /** The run's backups go to S3: a local host's agent gets the control worker's S3 keys (EC2 hosts use their role). */
  s3Backups?: boolean;
}

/** I/O and memory limits as enforced on the host (null: none enforced). */
export interface HostLimits {
  iops: number | null;
  throughputMiBps: number | null;
  memoryLimitMiB: number | null;
  /** How the IOPS are enforced: one budget for reads and writes together, or each its own; absent before the choice existed. */
  iopsBudget?: 'shared' | 'separate' | null;
}

/** A provisioned host as the workflows see it. Never holds a secret: passwords stay on the host. */
export interface HostRecord {
  hostId: string;
  runId: string;
  provider: 'local' | 'aws';
  className: string;
  kind: StorageKind;
  taskQueue: string;
  /** Whether the class's I/O limits are really enforced; false means "not emulated" in the report. */
  emulated: boolean;
  emulationNote?: string;
  limits: HostLimits;
  /** Where Postgres listens, as other hosts reach it (replication, drills). */
  postgres: { host: string; port: number };
  instanceId?: string;
}

/**
 * What a host agent knows about its own host; written next to the host (locally: host.json in the host folder;
 * on AWS: by user-data). Holds paths to secrets, never their values.
 */
export interface HostConfig extends HostRecord {
  /** The host's own folder; everything the agent writes lives below it. */
  hostDir: string;
  /** Where PGDATA lives: on the storage device under test. */
  dataDir: string;
  /** Unix socket directory of this host's Postgres. */
  socketDir: string;
  /** Block device (as named in /proc/diskstats) that holds dataDir. */
  device: string | null;
  /** OS user that owns and runs Postgres (root cannot run it). */
  osUser: string | null;
  /** File holding the generated database password (mode 0600). */
  passwordFile: string;
  /** Folder with the PostgreSQL server binaries (pg_ctl, initdb, ...). */
  pgBinDir: string;
  /**
   * Folder with the client tools (pgbench, psql, pg_recvlogical, pg_amcheck) when pgBinDir has none (embedded
   * server binaries, driven by Debian's client tools); absent: pgBinDir has them.
   */
  pgClientBinDir?: string;
  /** Cgroup directories whose counters the agent reads (cpu accounting), if any. */
  cgroup: { kind: 'v1' | 'v2'; cpuDir: string | null; memoryDir: string | null; ioDir: string | null } | null;
}

/** What a provider can tell about a host that stopped answering, or whose attempt failed. */
export interface HostInspection {
  /** Processes the kernel killed for memory in the host's memory cgroup since it was made; null where unknown. */
  oomKills: number | null;
  /** In words, for the failure message: what runs and what is gone, memory limit and peak, instance state, log tail. */
  text: string;
}

/** A resource the provider manages, as the sweeper sees it. */
export interface ManagedHost {
  hostId: string;
  runId: string;
  expiresAt: string | null;
  /** Provider-specific identifiers (instance id, volume ids, loop device, cgroup). */
  resources: string[];
  /** Made by another lab (another Temporal namespace): its run cannot be checked here, so only expiry removes it. */
  foreign?: boolean;
}
