/**
 * The preflight activities: before any host exists, the spec is checked by the real tools (server settings,
 * workload script: spec-checks.ts) and this environment is checked against it (PostgreSQL installed, cgroups,
 * memory and disk of this machine, the provider's own checks). A failure names the field and the fix and is not
 * retried: a spec mistake fails as InvalidSpecError, an environment that cannot run it as PreflightError.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { accessSync, constants, existsSync, statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BackupToolName } from '../../common/input/backup-store';
import { drillVolumeBytes, failoverLedgerBytes, type FailoverDrillSpec, type PowerCutDrillSpec, type ReplicaDrillSpec, type RestoreDrillSpec } from '../../common/input/drill-spec';
import { FAILURE_TYPES, formatSpecProblems, SetupError } from '../../common/core/errors';
import { providerOf, type ProviderName } from '../../common/providers/registry';
import { volumeBytes, type ExperimentSpec, type StorageClassSpec } from '../../common/input/spec';
import { dataSetsOff } from '../../common/input/data-set';
import { MAX_TPS_PER_CPU, PGBENCH_LOG_BYTES_PER_TRANSACTION, pgbenchLogBytes } from '../../common/input/rules';
import { socketPathProblem, traversableByOthers } from '../../lib/lab-paths';
import { findPostgresBinDir, installedPostgresMajors } from '../../lib/postgres-binaries';
import type { HostProvider } from '../../infra/providers/host-provider';
import { modelledVolumeSupport } from '../../lib/volume';
import { deviceModelOf } from '../../common/model/devices';
import { cgroupV2Mount, detectCgroups } from '../../lib/cgroups';
import { listCutTables } from '../../lib/network-cut';
import { walgState, type WalgState } from '../../lib/walg-build';
import { backupStoreProblem } from '../../lib/backup-stores';
import { checkDrillWithTools, checkExperimentWithTools, type ToolCheckOutcome } from '../../lib/spec-checks';

export interface PreflightDeps {
  /** Folder the local provider puts hosts in (free space, reachable by the postgres user). */
  hostsDir: string;
}

/** Fails at once with every spec problem the tools found, named by field (nothing was created). */
function refuseSpecProblems(outcome: ToolCheckOutcome, subject: string): void {
  if (outcome.problems.length)
    throw ApplicationFailure.nonRetryable(formatSpecProblems(outcome.problems, subject), FAILURE_TYPES.invalidSpec, outcome.problems);
}

/** Fails with every environment problem (each "field: what and the fix"). */
function refuseEnvironmentProblems(problems: string[]): void {
  if (problems.length)
    throw ApplicationFailure.nonRetryable(
      `This environment cannot run the spec:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
      FAILURE_TYPES.preflight,
      problems,
    );
}

/**
 * The tools' check of a spec; a check this machine cannot run (its PostgreSQL out of the postgres user's reach) fails
 * as an environment problem with its fix, not retried.
 */
async function toolCheck(check: Promise<ToolCheckOutcome>): Promise<ToolCheckOutcome> {
  try {
    return await check;
  } catch (err) {
    if (err instanceof SetupError) refuseEnvironmentProblems([err.message]);
    throw err;
  }
}

/** What one local host writes on this machine's disk, and the spec fields that set each part (for the fix). */
interface HostDisk {
  /** Its volume: the class's sizeGiB when the spec sets one (a file of that size), else the computed need. */
  volumeBytes: number;
  /** `storageClasses.<name>.sizeGiB` (or `storageClass.sizeGiB`) when set, else the field the computed size follows. */
  volumeField: string;
  /** Worst-case logs beside the volume (pgbench's transaction log, the failover drill's ledger), if any. */
  log?: { bytes: number; field: string; what: string };
}

/** What this machine must offer a local run: hosts at once, each with its memory limit, disk and classes. */
interface LocalNeeds {
  version: number | undefined;
  classes: { path: string; cls: StorageClassSpec }[];
  hostsAtOnce: number;
  memoryLimitMiB: number;
  /** Every host of the run; the `hostsAtOnce` largest must fit the free disk together. */
  disks: HostDisk[];
  /** The fields that set how many hosts run at once, for the fix (maxParallelClusters), if any. */
  parallelField?: string;
}

/** CPUs a local host's pgbench and server share: this machine's. */
function localCpus(): number {
  return os.availableParallelism();
}

const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);

/** The largest `hostsAtOnce` hosts' volumes and logs against the free disk of the hosts folder. */
function diskProblems(hostsDir: string, n: LocalNeeds, orParallel: string): string[] {
  const free = freeBytes(hostsDir);
  if (free === null) return [];
  const size = (d: HostDisk) => d.volumeBytes + (d.log?.bytes ?? 0);
  const atOnce = [...n.disks].sort((a, b) => size(b) - size(a)).slice(0, n.hostsAtOnce);
  if (atOnce.length === 0) return [];
  const volumes = atOnce.reduce((sum, d) => sum + d.volumeBytes, 0);
  const logs = atOnce.reduce((sum, d) => sum + (d.log?.bytes ?? 0), 0);
  const hosts = `${atOnce.length} host${atOnce.length === 1 ? '' : 's'} at once`;
  const field = atOnce[0].volumeField;
  if (volumes > free) {
    const fix = field.endsWith('sizeGiB') ? `lower ${field} (or remove it: the default fits the data)` : `lower ${field}`;
    return [`${field}: ${hosts} need about ${gib(volumes)} GiB of volumes but ${hostsDir} has ${gib(free)} GiB free; ${fix}${orParallel}`];
  }
  const log = atOnce.find((d) => d.log)?.log;
  if (log && volumes + logs > free)
    return [
      `${log.field}: ${hosts} may keep ${gib(logs)} GiB of ${log.what} beside ${gib(volumes)} GiB of volumes, but ${hostsDir} has ${gib(free)} GiB free; lower ${log.field}${orParallel}`,
    ];
  return [];
}

/** Whether this machine can hold the local hosts: PostgreSQL, the hosts folder, cgroups, memory and disk. */
function localProblems(hostsDir: string, n: LocalNeeds): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const orParallel = n.parallelField ? ` or ${n.parallelField}` : '';
  if (!findPostgresBinDir(n.version))
    problems.push(
      `postgres.version: PostgreSQL ${n.version ?? ''} is not installed here (installed: ${installedPostgresMajors().join(', ') || 'none'}); install it (infra/bootstrap.sh) or remove postgres.version`,
    );
  const socket = socketPathProblem(hostsDir);
  if (socket) problems.push(socket);
  if (process.getuid?.() === 0 && !traversableByOthers(hostsDir))
    problems.push(
      `hosts folder ${hostsDir}: the postgres user cannot reach it (a parent folder lacks o+x); set STORAGE_LAB_HOSTS_DIR to a folder it can reach, for example under /var/lib`,
    );
  const cgroups = detectCgroups();
  const volumes = modelledVolumeSupport();
  for (const { path: field, cls } of n.classes) {
    const modelled = deviceModelOf(cls) !== null;
    const reason = !cgroups.kind ? cgroups.reason : modelled && !volumes.ok ? volumes.reason : null;
    if (!reason) continue;
    if (cls.emulation === 'required')
      problems.push(
        `${field}.emulation: ${modelled ? 'the modelled volume and the memory limit' : 'the memory limit'} cannot be had here (${reason}); run as root on a machine with cgroups and FUSE after infra/bootstrap.sh, or set emulation to "preferred" to run unemulated`,
      );
    else warnings.push(`storage class ${field} will run not emulated: ${reason}`);
  }
  const memoryNeeded = n.hostsAtOnce * n.memoryLimitMiB;
  const memoryMiB = Math.floor(os.totalmem() / 2 ** 20);
  if (memoryNeeded > memoryMiB * 0.8)
    problems.push(
      `host.memoryLimitMiB: ${n.hostsAtOnce} hosts at once x ${n.memoryLimitMiB} MiB = ${memoryNeeded} MiB, more than 80 % of this machine's ${memoryMiB} MiB; lower host.memoryLimitMiB${orParallel}`,
    );
  problems.push(...diskProblems(hostsDir, n, orParallel));
  return { problems, warnings };
}

/** Free bytes of the file system a folder is (or will be) on. */
function freeBytes(dir: string): number | null {
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      const s = statfsSync(d);
      return s.bavail * s.bsize;
    } catch {
      if (d === '/') return null;
    }
  }
}

/**
 * Whether the hosts will have the backup tool the spec names; null when they will. Hosts on this machine run its
 * binaries; instances (EC2 hosts) install pgBackRest from apt and get WAL-G from this control worker (its tools cache).
 */
function backupToolProblem(tool: BackupToolName, field: string, provider: ProviderName): string | null {
  const { onThisMachine, where } = providerOf(provider);
  if (tool === 'wal-g') {
    const walg = walgState();
    // Hosts here wait for a build beside the run (lib/walg-build.ts); a control worker that ships WAL-G needs it now.
    if (walg.state === 'present' || (walg.state === 'building' && onThisMachine)) return null;
    if (walg.state === 'building') return `${field}: WAL-G is still being built on this control worker (bootstrap pid ${walg.pid}, log ${walg.log}), which ships it to its hosts ${where}; start the run when the build has ended`;
    if (walg.state === 'failed') return `${field}: WAL-G's build failed (its log: ${walg.log}); run infra/bootstrap.sh again, or set ${field} to "pgbackrest"`;
    return `${field}: WAL-G is not installed ${onThisMachine ? 'here' : `on this control worker, which ships it to its hosts ${where}`}; run infra/bootstrap.sh (it builds wal-g into the tools cache, .cache/bin) or set ${field} to "pgbackrest"`;
  }
  if (!onThisMachine) return null;
  return onPath('pgbackrest') ? null : `${field}: pgBackRest is not installed here; apt-get install pgbackrest (infra/bootstrap.sh does) or set ${field} to "wal-g"`;
}

/**
 * WAL-G beyond the durability tool's own check: data sets are published and restored with it (issue 31), and a
 * build of it beside the run (lib/walg-build.ts) must end before anything is measured. A run waits for it where it
 * first needs WAL-G, which is before its first measurement when it uses data sets or archives with WAL-G; any other
 * run on this machine would measure beside the compile, so it is refused until the build has ended.
 */
export function walgProblems(spec: ExperimentSpec, walg: WalgState, opts: { toolChecked: boolean }): string[] {
  const { onThisMachine, where } = providerOf(spec.provider);
  const dataSets = dataSetsOff(spec) === null;
  const walgBeforeMeasuring = dataSets || (spec.durability.enabled && spec.durability.tool === 'wal-g');
  if (dataSets && !opts.toolChecked && walg.state !== 'present' && !(walg.state === 'building' && onThisMachine)) {
    const why = walg.state === 'building' ? `is still being built on this control worker (bootstrap pid ${walg.pid}, log ${walg.log}), which ships it to its hosts ${where}` : walg.state === 'failed' ? `did not build (its log: ${walg.log})` : 'is not installed';
    return [`data.reuse: data sets are published and restored with WAL-G, which ${why}; run infra/bootstrap.sh, or set data.reuse to "never"`];
  }
  if (onThisMachine && walg.state === 'building' && !walgBeforeMeasuring)
    return [`provider: WAL-G is being built on this machine (bootstrap pid ${walg.pid}, log ${walg.log}) and this run would measure before it first needs WAL-G, beside the compile; start the run when the build has ended`];
  return [];
}

/** Whether an executable of that name is on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => {
    try {
      accessSync(path.join(dir || '.', name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Hosts a drill has at once: the restore drill's source and restore host; the failover drill's three nodes and its client. */
const DRILL_HOSTS = { restore: 2, failover: 4, partition: 4, 'power-cut': 2 } as const;

/** The drills by kind, as the preflight takes them. */
type DrillKind = keyof typeof DRILL_HOSTS;

/** The worst case of a log, for the message: its rate and line size. */
const WORST_CASE = `${MAX_TPS_PER_CPU.toLocaleString('en-US')} transactions a second per CPU`;

/** Each host of a local experiment: its class's volume and its pgbench transaction logs. */
function experimentDisks(spec: ExperimentSpec, cpus: number): HostDisk[] {
  const log = {
    bytes: pgbenchLogBytes(spec.workload, cpus),
    field: 'workload.durationSeconds',
    what: `pgbench transaction logs (warm-up and run at the worst case of ${WORST_CASE} on ${cpus} CPUs, ${PGBENCH_LOG_BYTES_PER_TRANSACTION} bytes each)`,
  };
  return Object.entries(spec.storageClasses).flatMap(([name, cls]) =>
    Array.from({ length: spec.clustersPerClass }, () => ({
      volumeBytes: cls.sizeGiB !== undefined ? cls.sizeGiB * 2 ** 30 : volumeBytes(spec),
      volumeField: cls.sizeGiB !== undefined ? `storageClasses.${name}.sizeGiB` : 'data.scale',
      log,
    })),
  );
}

/** Each host of a local drill: its volume, and on the failover drill's client the ledger of acknowledged ids. */
function drillDisks(kind: DrillKind, spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec, cpus: number): HostDisk[] {
  const sized = spec.storageClass.sizeGiB !== undefined;
  const volume = {
    volumeBytes: sized ? spec.storageClass.sizeGiB! * 2 ** 30 : drillVolumeBytes(spec),
    volumeField: sized ? 'storageClass.sizeGiB' : 'data' in spec ? 'data.scale' : 'storageClass.sizeGiB',
  };
  const disks: HostDisk[] = Array.from({ length: DRILL_HOSTS[kind] }, () => ({ ...volume }));
  if ('rounds' in spec)
    disks[0].log = {
      bytes: failoverLedgerBytes(spec, cpus),
      field: 'rounds',
      what: `ledger of acknowledged commits (every round's writes at the worst case of ${WORST_CASE} on ${cpus} CPUs)`,
    };
  return disks;
}

/**
 * What the partition drill's cut needs on this machine: root (nftables and cgroups), the nft tool, and a cgroup v2
 * tree below /sys/fs/cgroup where each host gets a cgroup that names its sockets (lib/network-cut.ts).
 */
async function networkCutProblems(): Promise<string[]> {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push('provider: the partition drill cuts the network with nftables, which needs root; run the control worker as root');
  if (!(process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(path.join(dir, 'nft'))))
    problems.push('provider: nft (nftables) is not installed; run infra/bootstrap.sh (installs Debian\'s nftables)');
  else if (process.getuid?.() === 0)
    await listCutTables().catch((err: Error) =>
      problems.push(`provider: nft cannot read this machine's packet filter (${err.message.split('\n')[0]}); the control worker needs CAP_NET_ADMIN`),
    );
  const cgroups = detectCgroups();
  if (!cgroups.kind) problems.push(`provider: the partition drill tells hosts apart by their cgroups, and there are none here: ${cgroups.reason}`);
  else if (!cgroupV2Mount()) problems.push('provider: no cgroup v2 tree below /sys/fs/cgroup, where each host gets a cgroup that names its sockets; mount cgroup2 there (systemd hybrid mode has it at /sys/fs/cgroup/unified)');
  return problems;
}

/** What the power-cut drill needs here: a provider that can cut a host's power, and a modelled volume to cut. */
function powerCutProblems(p: HostProvider): string[] {
  const problems: string[] = [];
  if (!p.cutPower) problems.push(`provider: "${p.name}" cannot cut a host's power; run the power-cut drill with provider "local"`);
  const volumes = modelledVolumeSupport();
  if (!volumes.ok) problems.push(`storageClass.kind: the power-cut drill runs on a modelled volume, and none can be made here: ${volumes.reason}`);
  return problems;
}

export function createPreflightActivities(deps: PreflightDeps, provider: (name: ProviderName) => HostProvider) {
  return {
    /** Checks an experiment spec with the real tools and this environment against it, before anything is created. */
    async preflight(input: { spec: ExperimentSpec }): Promise<{ warnings: string[] }> {
      const { spec } = input;
      provider(spec.provider);
      const tools = await toolCheck(checkExperimentWithTools(spec, 'control-plane'));
      refuseSpecProblems(tools, 'experiment spec');
      const backsUp = spec.durability.enabled || spec.durability.drills.length > 0;
      // A folder store the lab would create and delete must lie below its backups folder, whatever the spec says.
      const store = backsUp ? backupStoreProblem(spec.durability.backupStore, deps.hostsDir, 'durability.backupStore') : null;
      refuseSpecProblems({ problems: store ? [store] : [], notes: [] }, 'experiment spec');
      const problems: string[] = [];
      const warnings = [...tools.notes];
      // Hosts on this machine: its PostgreSQL, cgroups, memory and disk must hold them.
      if (providerOf(spec.provider).onThisMachine) {
        const local = localProblems(deps.hostsDir, {
          version: spec.postgres.version,
          classes: Object.entries(spec.storageClasses).map(([name, cls]) => ({ path: `storageClasses.${name}`, cls })),
          hostsAtOnce: Math.min(spec.maxParallelClusters, spec.clustersPerClass * Object.keys(spec.storageClasses).length),
          // The largest limit a host of the run gets (a class may set its own).
          memoryLimitMiB: Math.max(...Object.values(spec.storageClasses).map((c) => c.memoryLimitMiB ?? spec.host.memoryLimitMiB)),
          disks: experimentDisks(spec, localCpus()),
          parallelField: 'maxParallelClusters',
        });
        problems.push(...local.problems);
        warnings.push(...local.warnings);
      }
      // The fields a real run on the provider needs (a dry run needs none of them).
      problems.push(...providerOf(spec.provider).runProblemsOf(spec).map((p) => `${p.path}: ${p.message}`));
      const tool = backsUp ? backupToolProblem(spec.durability.tool, 'durability.tool', spec.provider) : null;
      if (tool) problems.push(tool);
      problems.push(...walgProblems(spec, walgState(), { toolChecked: backsUp && spec.durability.tool === 'wal-g' }));
      // The partition drill's cut, checked before the clusters run rather than when the drill starts after them.
      if (spec.durability.drills.includes('partition')) problems.push(...(await networkCutProblems()).map((p) => p.replace(/^provider:/, 'durability.drills:')));
      // The provider's own checks (the account's subnet, image, instance type) once the spec itself is complete.
      const checked = problems.length ? undefined : await provider(spec.provider).preflight?.(spec);
      problems.push(...(checked?.problems ?? []));
      warnings.push(...(checked?.warnings ?? []));
      refuseEnvironmentProblems(problems);
      return { warnings };
    },

    /** The same for a drill: its settings by the real server, this machine against its hosts. */
    async preflightDrill(input: { kind: DrillKind; spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec }): Promise<{ warnings: string[] }> {
      const { spec } = input;
      provider(spec.provider);
      const tools = await toolCheck(checkDrillWithTools(spec, 'control-plane'));
      refuseSpecProblems(tools, `${input.kind} drill spec`);
      // The power-cut drill archives nothing; the replica drills unless backup.enabled is false; the restore drill always.
      const backup = 'backup' in spec ? spec.backup : null;
      const backsUp = backup !== null && (!('enabled' in backup) || backup.enabled);
      const store = backsUp ? backupStoreProblem(backup.store, deps.hostsDir, 'backup.store') : null;
      refuseSpecProblems({ problems: store ? [store] : [], notes: [] }, `${input.kind} drill spec`);
      const warnings = [...tools.notes];
      if (providerOf(spec.provider).onThisMachine) {
        const local = localProblems(deps.hostsDir, {
          version: spec.postgres.version,
          classes: [{ path: 'storageClass', cls: spec.storageClass }],
          hostsAtOnce: DRILL_HOSTS[input.kind],
          memoryLimitMiB: spec.host.memoryLimitMiB,
          disks: drillDisks(input.kind, spec, localCpus()),
        });
        refuseEnvironmentProblems(local.problems);
        warnings.push(...local.warnings);
      }
      const tool = backsUp ? backupToolProblem(backup.tool, 'backup.tool', spec.provider) : null;
      if (tool) refuseEnvironmentProblems([tool]);
      if (input.kind === 'partition') refuseEnvironmentProblems(await networkCutProblems());
      if (input.kind === 'power-cut') refuseEnvironmentProblems(powerCutProblems(provider(spec.provider)));
      // The provider's own checks (the account's subnet, image owner and instance type, the cost ceiling).
      const kind = input.kind;
      const checked = kind === 'partition' || kind === 'power-cut' ? undefined : await provider(spec.provider).preflightDrill?.(kind, spec as RestoreDrillSpec | FailoverDrillSpec);
      refuseEnvironmentProblems(checked?.problems ?? []);
      warnings.push(...(checked?.warnings ?? []));
      return { warnings };
    },
  };
}
