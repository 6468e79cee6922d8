/**
 * What a host is, as the workflows, the providers, the tools and the host agents see it: what a run asks for, what a
 * provider made, what an agent knows of its own host. Types only; the providers implement infra/providers/host-provider.ts.
 */
import type { StorageClassSpec, StorageKind } from '../input/storage';
import type { ProviderName, ProviderSections } from '../providers/registry';
import type { Claimant, OwnerRecord } from './claims';
import type { DeviceModelName, VolumeServerParams } from '../model/devices';

/** Where hosts come from: a registered provider's name (common/providers/registry.ts). */
export type { ProviderName } from '../providers/registry';

/**
 * What the workflow asks for: one host of one storage class for one run, with the run's section of its provider
 * under the provider's name (names of secrets, never their values), where the spec has one.
 */
export interface HostRequest extends ProviderSections {
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
  /**
   * Hosts asked for with the same scope share one generated database password (a drill's primary and standbys
   * replicate with it); without one each host gets its own. The password itself never leaves the hosts.
   */
  passwordScope?: string;
  /** The run's backups go to S3: a local host's agent gets the control worker's S3 keys (EC2 hosts use their role). */
  s3Backups?: boolean;
  /**
   * The host's volume keeps what a power cut drops (a modelled volume's undo log): the power-cut drill's hosts. False:
   * writes are durable as they land, the cheaper volume, and a cut is refused. Absent (a request scheduled before
   * it): kept.
   */
  powerCuts?: boolean;
  /**
   * The workflow that asks (workflowInfo(), never input): the host's owner record names it, and every later activity
   * on the host must come from it. Absent only in requests scheduled before claims existed.
   */
  owner?: Claimant;
}

/**
 * Who asks a provider to act on a host: its owner (the workflow that made it), or the sweeper for the run it judged
 * closed, unknown or expired (the host's record must still name that run). Undefined: a request scheduled before
 * claims existed, allowed only on a host without an owner record.
 */
export type HostActor = { owner: Claimant } | { sweptRun: string };

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
  provider: ProviderName;
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
  /**
   * Cgroup directories whose counters the agent reads (cpu accounting), if any, and the host's v2 cgroup that names its
   * sockets for a packet filter (absent on hosts made before it existed; null: no v2 tree on the machine).
   */
  cgroup: { kind: 'v1' | 'v2'; cpuDir: string | null; memoryDir: string | null; ioDir: string | null; netDir?: string | null } | null;
  /** The host's owner record: the agent runs only the activities of this workflow. Absent on hosts made before claims. */
  owner?: OwnerRecord;
  /** The modelled volume under dataDir (lib/volume.ts), for a local host of a modelled class. */
  volume?: ModelledVolume;
}

/**
 * A local host's modelled volume (infra/volume, docs/storage-emulation.md): a server outside the host's cgroups serves
 * the volume's image on a FUSE mount, a direct-I/O loop device over the image carries ext4 and the host's data.
 */
export interface ModelledVolume {
  model: DeviceModelName;
  params: VolumeServerParams;
  /** The FUSE mount holding the image, the image, the control socket, the server's pid file and log. */
  fuseDir: string;
  image: string;
  socket: string;
  pidFile: string;
  log: string;
  /** Where the volume's bytes live: RAM (the default where they fit), or a file on the machine's disk. */
  backing: 'ram' | 'file';
  sizeBytes: number;
}

/** A cut of the network between two groups of a run's hosts (the partition drill), as the workflow asks for it. */
export interface NetworkCutRequest {
  /** The host the cut is made around (one of `isolated`): the cut is kept with it, and removed with it. */
  hostId: string;
  /** The hosts on one side of the cut... */
  isolated: string[];
  /** ...and on the other: no connection between a host of one and a host of the other gets through. */
  others: string[];
}

/** A cut as the provider made it. */
export interface NetworkCutRecord {
  /** Where its rules are (nftables: `inet <table>`). */
  table: string;
  /** How the rules tell the hosts' connections apart, in words. */
  mechanism: string;
  rules: number;
  /** When the provider asked the packet filter for the rules: the earliest moment they can have taken effect. */
  requestedAt: string;
  /** When the rules were in place (the provider's clock, after the packet filter answered). */
  appliedAt: string;
  /** How long loading the rules took. */
  applySeconds: number;
}

/** A cut removed (or found gone). */
export interface NetworkHealRecord {
  /** False when there was no cut around the host (healed before, or never cut). */
  removed: boolean;
  /** Packets the cut's rules dropped while they were in place; null when there was no cut. */
  droppedPackets: number | null;
  healedAt: string;
  removeSeconds: number;
}

/** A modelled device's counters around a power cut: what it was asked to write and flush, what it held unflushed. */
export interface DeviceCounters {
  writes: number;
  writeBytes: number;
  flushes: number;
  /** Bytes written to the device and not yet made durable by a flush: what a cut drops. */
  volatileBytes: number;
  /** Pages dropped by every cut so far. */
  cutPages: number;
  /** I/O the device failed (after the cut, until it was powered on). */
  errors: number;
}

/** A power cut as the provider made it (the power-cut drill). */
export interface PowerCutRecord {
  hostId: string;
  /** When the cut was asked for and when the volume served again, mounted on what was durable. */
  cutAt: string;
  backAt: string;
  /** Writes the device had not made durable, dropped at the cut. */
  droppedPages: number;
  droppedBytes: number;
  /** The device's counters just before the cut and once it served again. */
  before: DeviceCounters;
  after: DeviceCounters;
  /** Seconds from the cut until the volume was mounted again (ext4 replayed its journal). */
  seconds: number;
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
  /**
   * Set when the host has no owner record (runId ''): when its folder was made. The sweeper removes it only when no
   * run still open could have made it.
   */
  madeAt?: string;
}
