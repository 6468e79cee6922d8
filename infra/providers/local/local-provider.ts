/**
 * Hosts on this machine. A host is a folder, a storage device, a memory limit, and a supervised host agent started
 * inside the host's cgroups, so the Postgres and pgbench it starts inherit the limits. The device is the machine's
 * disk (`local-disk`), or for a modelled class (`emulated-ebs`: gp3, io2; `nvme`: m6id's instance store) a modelled
 * volume: a server outside the host's cgroups (lib/volume.ts, infra/volume) times every I/O by the class's device
 * model, under a direct-I/O loop device with ext4 (docs/storage-emulation.md). Without root, cgroups or FUSE hosts
 * still work on the machine's disk and are marked "not emulated".
 */
import { ApplicationFailure } from '@temporalio/common';
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { closeSync, existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { describeClaimant, hostIndexOf, ownedBy, ownerRefusal, type OwnerRecord } from '../../../common/core/claims';
import { FAILURE_TYPES } from '../../../common/core/errors';
import { hostFolderName, safeSegment, segmentProblem } from '../../../common/core/ids';
import { localProvider } from '../../../common/providers/local';
import { classLimits } from '../../../common/input/spec';
import { hostTaskQueue } from '../../../common/core/names';
import { hostAgentEnv } from '../../agent-env';
import { readConfig } from './host-config-file';
import {
  LabPathError,
  chownLab,
  listKernelDir,
  listLabDir,
  makeLabDir,
  openLabFile,
  readKernelFile,
  readLabBytes,
  readLabFile,
  registerLabRoot,
  removeLabTree,
  writeLabFile,
} from '../../../lib/lab-fs';
import { claimFile, ownedByAnotherRun, readClaimFile } from '../../../lib/claims';
import { backupsDirFor, ensureDir, hostsKeyFile, socketPathProblem } from '../../../lib/lab-paths';
import { freePort } from '../../../lib/net';
import { childrenOf } from '../../../lib/postgres-probe';
import { mappedSegments, removeSegments } from '../../../lib/pg-dsm';
import { findClientBinDir, findPostgresBinDir, postgresOsUser, serverUserReaches, unreachableServerError, type OsUser } from '../../../lib/postgres-binaries';
import type { HostActor, HostConfig, HostInspection, HostRecord, HostRequest, ManagedHost, NetworkCutRecord, NetworkCutRequest, NetworkHealRecord } from '../../../common/core/hosts';
import { CUT_TABLE_PREFIX, applyCut, cutRuleCount, cutRuleset, cutTableName, hostOfCutTable, labCutTag, listCutTables, removeCut, type CutHost } from '../../../lib/network-cut';
import type { HostProvider, PowerCutReport } from '../host-provider';
import {
  createHostCgroup,
  detectCgroups,
  hostCgroupPaths,
  listHostCgroups,
  memoryState,
  pidsIn,
  removeHostCgroup,
  type HostCgroup,
} from '../../../lib/cgroups';
import { attachVolumeLoop, deviceOfPath, detachLoop, formatAndMount, loopsBackedBy, mountVolume, unmount } from '../../../lib/block-devices';
import { deviceModelOf, serverParams } from '../../../common/model/devices';
import type { ModelledVolume } from '../../../common/core/hosts';
import {
  chooseBacking,
  modelledVolumeSupport,
  socketPathFor,
  startVolumeServer,
  stopVolumeServer,
  tail,
  VolumeControl,
  volumeServerPid,
} from '../../../lib/volume';

/** Extra room on a modelled volume beyond what the workflow asked for (file system overhead, WAL bursts). */
const VOLUME_HEADROOM_BYTES = 2 * 1024 ** 3;
/** A host folder's owner record (lib/claims.ts), written before anything else in it. */
const OWNER_FILE = 'owner.json';
/** What a host folder made before owner records says of its run. */
const LABELS_FILE = 'labels.json';

export type { PowerCutReport } from '../host-provider';

export interface LocalProviderOptions {
  hostsDir: string;
  /** Environment the host agents start with (Temporal address and namespace, ...). */
  agentEnv: Record<string, string>;
  /** The compiled supervisor script that keeps a host's agent running. */
  supervisorScript: string;
}

export class LocalProvider implements HostProvider {
  readonly name = localProvider.name;

  constructor(private readonly opts: LocalProviderOptions) {
    // Its hosts, the key beside them, and the runs' backup stores: where the file guard lets it write and delete.
    registerLabRoot(opts.hostsDir, hostsKeyFile(opts.hostsDir), backupsDirFor(opts.hostsDir));
  }

  async provision(req: HostRequest): Promise<HostRecord> {
    const hostDir = this.hostDir(req.hostId);
    const tooLong = socketPathProblem(this.opts.hostsDir, path.basename(hostDir));
    if (tooLong) throw ApplicationFailure.nonRetryable(tooLong, FAILURE_TYPES.preflight);
    ensureDir(this.opts.hostsDir);
    // Marked as the lab's (beside it, in the hosts folder), so teardown deletes this folder and never another; then
    // claimed, before anything in it is looked at or changed: another run's host is refused here, untouched.
    makeLabDir(hostDir, { marker: true });
    const owner = this.claim(hostDir, req);
    const configFile = path.join(hostDir, 'host.json');
    if (existsSync(configFile)) {
      const existing = readConfig(configFile);
      if (!this.supervisorAlive(existing)) this.startAgent(existing, req);
      return toRecord(existing);
    }
    // A provisioning cut short (its worker died) may have left a mount, a loop device or a volume server: start afresh.
    await this.releaseVolume(hostDir);
    // Labels: when the host expires (the sweeper removes it then, whatever its run's state).
    writeLabFile(path.join(hostDir, LABELS_FILE), JSON.stringify({ runId: req.runId, hostId: req.hostId, experiment: req.experiment, expiresAt: req.expiresAt }), {
      atomic: true,
    });
    const osUser = postgresOsUser();
    const pgBinDir = findPostgresBinDir(req.postgresVersion);
    if (!pgBinDir)
      throw new Error(
        `PostgreSQL ${req.postgresVersion ?? ''} server binaries not found; run infra/bootstrap.sh (installs Debian's postgresql and PostgreSQL 17)`,
      );
    const pgClientBinDir = findClientBinDir(pgBinDir);
    if (!pgClientBinDir)
      throw new Error(`no PostgreSQL client tools (pgbench, psql) for ${pgBinDir}; run infra/bootstrap.sh (installs Debian's postgresql)`);
    // Root runs Postgres as the postgres user, who must reach the binaries (a tools cache below /root is private).
    if (osUser && !serverUserReaches(pgBinDir)) throw unreachableServerError(pgBinDir, osUser.name);

    const support = detectCgroups();
    const limits = classLimits(req.storageClass);
    const model = deviceModelOf(req.storageClass);
    const cgroup = support.kind ? createHostCgroup(support.kind, req.hostId, req.memoryLimitMiB) : null;
    const volumeSupport = modelledVolumeSupport();
    let emulated = cgroup !== null && (model === null || volumeSupport.ok);
    const emulationNote = !support.kind ? `not emulated: ${support.reason}` : model && !volumeSupport.ok ? `not emulated: ${volumeSupport.reason}` : undefined;

    let storageRoot = path.join(hostDir, 'disk');
    let device: string | null;
    let volume: ModelledVolume | undefined;
    if (model && cgroup && volumeSupport.ok) {
      // The modelled volume: its server first (outside the host's cgroups), then the loop device, ext4 and the mount.
      storageRoot = path.join(hostDir, 'volume');
      ensureDir(storageRoot);
      const want = req.storageClass.sizeGiB ? req.storageClass.sizeGiB * 1024 ** 3 : req.volumeBytes + VOLUME_HEADROOM_BYTES;
      const sizeBytes = Math.ceil(want / 4096) * 4096;
      volume = await startVolumeServer({
        binary: volumeSupport.binary,
        hostDir,
        sizeBytes,
        params: serverParams(model),
        model: model.name,
        backing: chooseBacking(req.volumeBytes, req.memoryLimitMiB * 2 ** 20),
        // A request from before the field existed keeps them, as every volume did then.
        powerCuts: req.powerCuts !== false,
      });
      const loop = await attachVolumeLoop(volume.image);
      await new VolumeControl(volume.socket).attach(loop.name);
      await formatAndMount(loop.device, storageRoot);
      device = loop.name;
    } else {
      ensureDir(storageRoot);
      device = deviceOfPath(storageRoot);
      if (model) emulated = false;
    }

    const dataDir = path.join(storageRoot, 'pgdata');
    // The agent narrows it further (postgres:client group, 0750) before its server starts; nobody else enters.
    const socketDir = ensureDir(path.join(hostDir, 'run'), 0o700);
    const logsDir = ensureDir(path.join(hostDir, 'logs'));
    if (osUser) for (const dir of [storageRoot, socketDir, logsDir]) chownLab(dir, osUser);

    const secretsDir = ensureDir(path.join(hostDir, 'secrets'), 0o700);
    const passwordFile = path.join(secretsDir, 'db-password');
    writeLabFile(passwordFile, this.password(req.passwordScope), { mode: 0o600 });

    const config: HostConfig = {
      hostId: req.hostId,
      runId: req.runId,
      provider: localProvider.name,
      className: req.className,
      kind: req.storageClass.kind,
      taskQueue: hostTaskQueue(req.hostId),
      emulated,
      emulationNote,
      limits: {
        iops: emulated && limits ? limits.iops : null,
        throughputMiBps: emulated && limits ? limits.throughputMiBps : null,
        memoryLimitMiB: cgroup ? req.memoryLimitMiB : null,
        iopsBudget: emulated && limits ? 'shared' : null,
      },
      postgres: { host: '127.0.0.1', port: await freePort() },
      hostDir,
      dataDir,
      socketDir,
      device,
      osUser: osUser?.name ?? null,
      passwordFile,
      pgBinDir,
      ...(pgClientBinDir !== pgBinDir ? { pgClientBinDir } : {}),
      cgroup: cgroup ? { kind: cgroup.kind, cpuDir: cgroup.cpuDir, memoryDir: cgroup.memoryDir, ioDir: cgroup.ioDir, netDir: cgroup.netDir } : null,
      ...(owner ? { owner } : {}),
      ...(volume ? { volume } : {}),
    };
    // The volume's server starts with its model on; the host's agent lifts it only for preparation (lib/io-cap.ts).
    writeLabFile(configFile, JSON.stringify(config, null, 2), { atomic: true });
    this.startAgent(config, req);
    return toRecord(config);
  }

  async teardown(hostId: string, actor?: HostActor): Promise<string> {
    const hostDir = this.hostDir(hostId);
    const refusal = this.refusal(hostId, hostDir, actor, 'tear down');
    if (refusal) {
      // The sweeper judged another run than the one the host now names: it fails, naming both.
      if (actor && 'sweptRun' in actor) throw ownedByAnotherRun(refusal);
      // A run's undo of a host it never got: nothing of it is this run's, so nothing is removed.
      return `left ${hostId} alone: ${refusal}`;
    }
    // The network first: a cut made around the host must not outlive it (nor its port, given to the next host).
    await this.healNetwork(hostId);
    await this.killAndWait(hostId);
    await this.releaseVolume(hostDir);
    const cg = this.cgroupOf(hostId);
    if (cg) removeHostCgroup(cg);
    await removeLabTree(hostDir);
    return `removed ${hostId}`;
  }

  async kill(hostId: string, actor?: HostActor): Promise<void> {
    const refusal = this.refusal(hostId, this.hostDir(hostId), actor, 'kill');
    if (refusal) throw ownedByAnotherRun(refusal);
    await this.killHost(hostId);
  }

  /** Kills everything on the host (its owner's kill, and teardown's). */
  private async killHost(hostId: string): Promise<void> {
    // The supervisor's process group first (supervisor, agent and the tools it runs), so nothing is restarted;
    // the supervisor lives outside the host's cgroups, so the cgroup alone would miss it.
    const hostDir = this.hostDir(hostId);
    const supervisorPid = readPid(path.join(hostDir, 'supervisor.pid'));
    if (supervisorPid) signal(-supervisorPid, 'SIGKILL');
    const cg = this.cgroupOf(hostId);
    if (cg) {
      for (const pid of pidsIn(cg)) signal(pid, 'SIGKILL');
      return;
    }
    // Without cgroups: the postmaster by its pid file (it runs in a session of its own), and its children too: a
    // backend stopped by SIGSTOP never runs to notice its postmaster's death (nor a SIGTERM until continued), while
    // SIGKILL ends a stopped process. The postmaster is stopped first, so it forks no child while they are listed,
    // and they are listed while it is still their parent.
    const postmasterPid = this.postmasterOf(hostId);
    if (!postmasterPid) return;
    if (signal(postmasterPid, 'SIGSTOP')) for (const pid of childrenOf(postmasterPid)) signal(pid, 'SIGKILL');
    signal(postmasterPid, 'SIGKILL');
  }

  /**
   * The host's postmaster by its pid file, or null. The pid file is the postgres user's to write (and may be stale):
   * a pid counts only when it is this host's postmaster (its data folder on its command line), never whatever process
   * that user named.
   */
  private postmasterOf(hostId: string): number | null {
    const configFile = path.join(this.hostDir(hostId), 'host.json');
    const config = existsSync(configFile) ? readConfig(configFile) : null;
    const pid = config ? readPid(path.join(config.dataDir, 'postmaster.pid')) : null;
    return config && pid && commandLine(pid).includes(config.dataDir) ? pid : null;
  }

  /**
   * Cuts the TCP traffic between two groups of hosts with nftables (lib/network-cut.ts): each host's sockets are
   * told apart by its v2 cgroup, its server by its port. The table is named after the lab and the host the cut is
   * made around; making it again replaces it.
   */
  async cutNetwork(cut: NetworkCutRequest): Promise<NetworkCutRecord> {
    if (!cut.isolated.includes(cut.hostId)) throw new Error(`the cut is made around ${cut.hostId}, which must be one of the isolated hosts (${cut.isolated.join(', ')})`);
    const ends = (ids: string[]): CutHost[] =>
      ids.map((hostId) => {
        const configFile = path.join(this.hostDir(hostId), 'host.json');
        if (!existsSync(configFile)) throw new Error(`host ${hostId}: no host here to cut off (never made, or torn down)`);
        const config = readConfig(configFile);
        const netDir = config.cgroup?.netDir;
        if (!netDir)
          throw new Error(
            `host ${hostId} has no cgroup v2 of its own, so its connections cannot be told from other hosts' on loopback (${config.cgroup ? 'made before network cuts existed, or no cgroup v2 tree below /sys/fs/cgroup' : `no cgroups: ${detectCgroups().reason ?? 'none'}`})`,
          );
        return { hostId, netDir, port: config.postgres.port };
      });
    const sides: [CutHost[], CutHost[]] = [ends(cut.isolated), ends(cut.others)];
    const table = this.cutTable(cut.hostId);
    const ruleset = cutRuleset(table, sides);
    const requestedAt = new Date().toISOString();
    const { seconds } = await applyCut(ruleset);
    return {
      table,
      mechanism: 'nftables, table inet ' + table + ': socket cgroupv2 (the host a socket belongs to) and the server port, both directions',
      rules: cutRuleCount(sides),
      requestedAt,
      appliedAt: new Date().toISOString(),
      applySeconds: seconds,
    };
  }

  async healNetwork(hostId: string): Promise<NetworkHealRecord> {
    if (!(await this.canCut())) return { removed: false, droppedPackets: null, healedAt: new Date().toISOString(), removeSeconds: 0 };
    const removed = await removeCut(this.cutTable(hostId));
    return { removed: removed.removed, droppedPackets: removed.droppedPackets, healedAt: new Date().toISOString(), removeSeconds: removed.seconds };
  }

  /** The nftables table of a cut made around a host by this lab (several labs may share the machine). */
  private cutTable(hostId: string): string {
    return cutTableName(labCutTag(this.opts.hostsDir), hostId);
  }

  /**
   * Whether this lab can have made a cut at all: nftables needs root, the nft tool, and a packet filter it may read (a
   * container without CAP_NET_ADMIN has none). Asked once; where it cannot, teardown and the sweeper skip the cuts.
   */
  private canCut(): Promise<boolean> {
    this.cutSupport ??= (async () => {
      if (typeof process.getuid === 'function' && process.getuid() !== 0) return false;
      if (!(process.env.PATH ?? '/usr/sbin:/sbin').split(':').some((dir) => dir && existsSync(path.join(dir, 'nft')))) return false;
      return listCutTables().then(
        () => true,
        () => false,
      );
    })();
    return this.cutSupport;
  }

  private cutSupport: Promise<boolean> | null = null;

  async list(): Promise<ManagedHost[]> {
    const hosts = new Map<string, ManagedHost>();
    for (const folder of listLabDir(this.opts.hostsDir) ?? []) {
      const dir = path.join(this.opts.hostsDir, folder);
      if (!lstatSync(dir).isDirectory() || segmentProblem(folder)) continue;
      // Whose it is: its owner record (the full host id: the folder's name is a hash of it), else the labels of a
      // host made before records, else nobody's (a provisioning that died before its claim).
      const record = readClaimFile(path.join(dir, OWNER_FILE));
      const labels = readLabels(dir);
      const hostId = record?.resource ?? labels?.hostId ?? folder;
      const runId = record?.runId ?? labels?.runId ?? '';
      const volumePid = volumeServerPid(volumePaths(dir));
      hosts.set(hostId, {
        hostId,
        runId,
        expiresAt: labels?.expiresAt ?? null,
        resources: [dir, ...(volumePid ? [`volume-server:${volumePid}`] : [])],
        ...(runId ? {} : { madeAt: madeAt(dir) }),
      });
    }
    const support = detectCgroups();
    if (support.kind) {
      for (const hostId of listHostCgroups(support.kind)) {
        const entry = hosts.get(hostId);
        if (entry) entry.resources.push(`cgroup:${hostId}`);
        // Every lab on this machine shares the cgroup parent: claim a cgroup without a host folder here only when
        // a process in it runs from this lab's hosts folder, so a sweep never kills another lab's hosts.
        else if (this.runsFromHere(hostCgroupPaths(support.kind, hostId)))
          hosts.set(hostId, { hostId, runId: '', expiresAt: null, resources: [`cgroup:${hostId}`] });
      }
    }
    // Cuts made around this lab's hosts; one whose host is gone goes to the sweeper as a host without a run label.
    if (await this.canCut()) {
      const labTag = labCutTag(this.opts.hostsDir);
      for (const table of await listCutTables(`${CUT_TABLE_PREFIX}${labTag}_`)) {
        const hostId = hostOfCutTable(labTag, table);
        if (!hostId) continue;
        const entry = hosts.get(hostId);
        if (entry) entry.resources.push(`nftables:inet ${table}`);
        else hosts.set(hostId, { hostId, runId: '', expiresAt: null, resources: [`nftables:inet ${table}`] });
      }
    }
    return [...hosts.values()];
  }

  async inspect(hostId: string, actor?: HostActor): Promise<HostInspection> {
    const hostDir = this.hostDir(hostId);
    // Another run's host: only whose it is, nothing of what runs there or its log.
    const refusal = this.refusal(hostId, hostDir, actor, 'diagnose');
    if (refusal) return { oomKills: null, text: `host ${hostId}: not described: ${refusal}` };
    const configFile = path.join(hostDir, 'host.json');
    if (!existsSync(configFile)) return { oomKills: null, text: `host ${hostId}: no host folder at ${hostDir} (never made, or torn down)` };
    const config = readConfig(configFile);
    const alive = (pid: number | null) => (pid !== null && signal(pid, 0) ? `running (pid ${pid})` : 'not running');
    const agents = processesRunning(configFile, 'host-agent.js');
    const processes = [
      `supervisor ${alive(readPid(path.join(hostDir, 'supervisor.pid')))}`,
      `agent ${agents.length ? `running (pid ${agents.join(', ')})` : 'not running'}`,
      `postgres ${alive(readPid(path.join(config.dataDir, 'postmaster.pid')))}`,
    ];
    const cg = this.cgroupOf(hostId);
    const memory = cg ? memoryState(cg) : null;
    const mib = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;
    const memoryLine = memory
      ? `memory cgroup: limit ${mib(memory.limitBytes)}, peak ${memory.peakBytes === null ? 'unknown' : mib(memory.peakBytes)}, ${memory.oomKills} process${memory.oomKills === 1 ? '' : 'es'} killed for memory (OOM)`
      : 'memory: no cgroup (not enforced)';
    if (config.volume) {
      const pid = volumeServerPid(config.volume);
      processes.push(pid ? `volume server running (pid ${pid})` : `volume server NOT running (its log ${config.volume.log} ends:\n${tail(config.volume.log, 8)})`);
    }
    const logFile = path.join(hostDir, 'agent.log');
    const logText = readLabFile(logFile, { maxBytes: 16 * 1024, tail: true });
    const log = logText !== null ? `last lines of ${logFile}:\n${logText.trimEnd().split('\n').slice(-20).map((l) => l.slice(0, 400)).join('\n')}` : `no agent log at ${logFile}`;
    return { oomKills: memory?.oomKills ?? null, text: `host ${hostId}: ${processes.join(', ')}\n${memoryLine}\n${log}` };
  }

  /**
   * Cuts the power of a host on a modelled volume: the volume drops every write it had not made durable and fails all
   * I/O from that instant, every process of the host is killed (what the host's page cache held is lost with them),
   * the file system is unmounted and the loop device detached; then the volume serves again and ext4 is mounted on
   * what was durable (it replays its journal). The host's agent is started again by provisioning the host again (the
   * provider's idempotent path starts a dead agent), and PostgreSQL's crash recovery is the caller's next step.
   * Resolves with what the device dropped and its counters around the cut.
   */
  async cutPower(hostId: string, actor?: HostActor): Promise<PowerCutReport> {
    const hostDir = this.hostDir(hostId);
    const refusal = this.refusal(hostId, hostDir, actor, 'cut the power of');
    if (refusal) throw ownedByAnotherRun(refusal);
    const configFile = path.join(hostDir, 'host.json');
    if (!existsSync(configFile)) throw new Error(`host ${hostId}: no host folder at ${hostDir}: nothing to cut`);
    const config = readConfig(configFile);
    if (!config.volume) throw new Error(`host ${hostId} is not on a modelled volume (class ${config.className}, ${config.kind}): only a modelled volume can drop unflushed writes`);
    const control = new VolumeControl(config.volume.socket);
    const before = await control.stats();
    const started = Date.now();
    const cutAt = new Date(started).toISOString();
    const dropped = await control.cut();
    await this.killAndWait(hostId);
    const storageRoot = path.dirname(config.dataDir);
    await unmount(storageRoot);
    for (const loop of await loopsBackedBy(hostDir)) await detachLoop(loop.device);
    await control.powerOn();
    const loop = await attachVolumeLoop(config.volume.image);
    await control.attach(loop.name);
    await mountVolume(loop.device, storageRoot);
    const seconds = (Date.now() - started) / 1000;
    // The loop device may come back under another name: the host's record follows it (the sampler reads it).
    if (loop.name !== config.device) writeLabFile(configFile, JSON.stringify({ ...config, device: loop.name }, null, 2), { atomic: true });
    return { hostId, ...dropped, before, after: await control.stats(), seconds, cutAt, backAt: new Date().toISOString() };
  }

  /** Unmounts a host's volume, detaches its loop devices and stops its volume server, in bounded time. */
  private async releaseVolume(hostDir: string): Promise<void> {
    await unmount(path.join(hostDir, 'volume'));
    // The loop device the host recorded, even when its image's path no longer resolves (a dead server's mount).
    const configFile = path.join(hostDir, 'host.json');
    const recorded = existsSync(configFile) ? readConfig(configFile) : null;
    if (recorded?.volume && recorded.device && loopImage(recorded.device)?.endsWith('volume.img')) await detachLoop(recorded.device);
    for (const loop of await loopsBackedBy(hostDir)) await detachLoop(loop.device);
    await stopVolumeServer(volumePaths(hostDir));
  }

  /** A new random password, or the one every host of a scope shares: derived from the lab's key, never stored per scope. */
  private password(scope: string | undefined): string {
    if (!scope) return randomBytes(24).toString('base64url');
    const keyFile = hostsKeyFile(this.opts.hostsDir);
    if (!existsSync(keyFile)) {
      // Written aside and linked into place: two hosts provisioned at once both end up with the first key.
      try {
        writeLabFile(keyFile, randomBytes(32), { mode: 0o600, exclusive: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    const key = readLabBytes(keyFile, { maxBytes: 1024 });
    if (!key) throw new Error(`the hosts' key ${keyFile} vanished`);
    return createHmac('sha256', key).update(scope).digest('base64url').slice(0, 32);
  }

  /**
   * Claims a host's folder for the request's owner (its owner record, written with O_EXCL), or refuses: the folder
   * holds another run's host, or another host id whose folder name is the same (80 bits: infeasible by chance, and
   * refused rather than shared). Returns the record in force; null for a request made before claims (its host must
   * have no record either).
   */
  private claim(hostDir: string, req: HostRequest): OwnerRecord | null {
    const file = path.join(hostDir, OWNER_FILE);
    const labels = readLabels(hostDir);
    if (!req.owner) {
      const record = readClaimFile(file);
      if (record) throw ownedByAnotherRun(`host ${req.hostId} belongs to ${describeClaimant(record)}; a request that names no owner may not provision it: refused`);
      if (labels && labels.runId !== req.runId) throw ownedByAnotherRun(`host ${req.hostId} belongs to run ${JSON.stringify(labels.runId)}; run ${JSON.stringify(req.runId)} may not provision it: refused`);
      return null;
    }
    const record: OwnerRecord = {
      kind: 'host',
      resource: req.hostId,
      runId: req.runId,
      ...req.owner,
      className: req.className,
      ...(hostIndexOf(req.hostId) !== undefined ? { index: hostIndexOf(req.hostId) } : {}),
      claimedAt: new Date().toISOString(),
    };
    // A host made before owner records: its labels name its run, which alone may claim it.
    if (labels && labels.runId !== req.runId && !existsSync(file))
      throw ownedByAnotherRun(`host ${req.hostId} belongs to run ${JSON.stringify(labels.runId)} (made before owner records); ${describeClaimant({ ...req.owner, runId: req.runId })} may not provision it: refused, nothing of it touched`);
    const inForce = claimFile(file, record);
    if (inForce.resource !== req.hostId)
      throw ownedByAnotherRun(
        `host folder ${hostDir} holds host ${inForce.resource} of ${describeClaimant(inForce)}; host ${req.hostId} of ${describeClaimant({ ...req.owner, runId: req.runId })} has the same folder name: refused, nothing of it touched`,
      );
    if (!ownedBy(inForce, req.owner)) throw ownedByAnotherRun(ownerRefusal(`host ${req.hostId}`, inForce, { ...req.owner, runId: req.runId }, 'provision'));
    return inForce;
  }

  /**
   * Why `actor` may not act on a host (a message naming both runs), or null when it may: the owner its record names;
   * the sweeper for the run it judged (the record still names it, or nobody for a folder without one); a request made
   * before claims on a host without a record. A host made before records is its run's workflow's and its children's.
   */
  private refusal(hostId: string, hostDir: string, actor: HostActor | undefined, action: string): string | null {
    const record = readClaimFile(path.join(hostDir, OWNER_FILE));
    const labels = readLabels(hostDir);
    if (record && record.resource !== hostId) return `host folder ${hostDir} holds host ${record.resource} of ${describeClaimant(record)}, not ${hostId}`;
    if (!actor) return record ? `host ${hostId} belongs to ${describeClaimant(record)}; a request that names no owner may not ${action} it` : null;
    if ('sweptRun' in actor) {
      const runId = record?.runId ?? labels?.runId ?? '';
      return runId === actor.sweptRun ? null : `host ${hostId} now belongs to run ${JSON.stringify(runId)}, not to run ${JSON.stringify(actor.sweptRun)} that the sweeper judged; not removed`;
    }
    if (record) return ownedBy(record, actor.owner) ? null : ownerRefusal(`host ${hostId}`, record, actor.owner, action);
    if (labels) {
      const own = actor.owner.workflowId === labels.runId || actor.owner.workflowId.startsWith(`${labels.runId}/`);
      return own ? null : `host ${hostId} belongs to run ${JSON.stringify(labels.runId)} (made before owner records); ${describeClaimant(actor.owner)} may not ${action} it`;
    }
    // A folder with no record (a provisioning that died before its claim, or nothing there): not this run's to touch.
    return existsSync(hostDir) ? `host folder ${hostDir} of ${hostId} has no owner record: it is not ${describeClaimant(actor.owner)}'s (the sweeper removes it once no open run could have made it)` : null;
  }

  /** A host's folder: named from its id (hostFolderName), one safe path segment; a link planted there is refused. */
  private hostDir(hostId: string): string {
    const dir = path.join(this.opts.hostsDir, hostFolderName(safeSegment(hostId, 'hostId')));
    let isLink = false;
    try {
      isLink = !lstatSync(dir).isDirectory();
    } catch {
      // Not made yet, or torn down.
    }
    if (isLink) throw new LabPathError(`host ${hostId}: ${dir} is not a folder (a link planted in the hosts folder?); refused`);
    return dir;
  }

  /** Whether a process in the cgroup was started from this lab's hosts folder (agent, supervisor, postmaster). */
  private runsFromHere(cg: HostCgroup): boolean {
    const mark = this.opts.hostsDir + path.sep;
    return pidsIn(cg).some((pid) => {
      try {
        return readKernelFile(`/proc/${pid}/cmdline`).replace(/\0/g, ' ').includes(mark);
      } catch {
        return false; // Exited while we looked.
      }
    });
  }

  private cgroupOf(hostId: string): HostCgroup | null {
    const support = detectCgroups();
    if (!support.kind) return null;
    // The cgroups recorded at provisioning first: a control worker restarted in another cgroup of its own (the
    // host parent sits below the worker's cgroup) must still find, kill and remove the hosts it made before.
    const configFile = path.join(this.hostDir(hostId), 'host.json');
    const recorded = existsSync(configFile) ? readConfig(configFile).cgroup : null;
    const cg =
      recorded?.memoryDir && recorded.ioDir && recorded.cpuDir
        ? {
            kind: recorded.kind,
            dirs: [...new Set([recorded.memoryDir, recorded.ioDir, recorded.cpuDir, ...(recorded.netDir ? [recorded.netDir] : [])])],
            memoryDir: recorded.memoryDir,
            ioDir: recorded.ioDir,
            cpuDir: recorded.cpuDir,
            netDir: recorded.netDir ?? null,
          }
        : hostCgroupPaths(support.kind, hostId);
    return cg.dirs.some((d) => existsSync(d)) ? cg : null;
  }

  /** Kills everything on the host and waits until the kernel has reaped it, so mounts and cgroups can go. */
  private async killAndWait(hostId: string): Promise<void> {
    const cg = this.cgroupOf(hostId);
    // The server's dynamic shared memory outlives a SIGKILL (lib/pg-dsm.ts): the segments its processes map are read
    // first, and removed once they are killed (without cgroups, its postmaster's and its children's).
    const postmaster = cg ? null : this.postmasterOf(hostId);
    const segments = mappedSegments(cg ? pidsIn(cg) : postmaster ? [postmaster, ...childrenOf(postmaster)] : []);
    for (let i = 0; i < 200; i++) {
      await this.killHost(hostId);
      if (!cg || pidsIn(cg).length === 0) {
        // A name unlinked while a dying process still maps it is harmless: the memory goes with the last mapping.
        removeSegments(segments);
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`host ${hostId}: processes still alive after SIGKILL: ${cg ? pidsIn(cg).join(' ') : ''}`);
  }

  private supervisorAlive(config: HostConfig): boolean {
    const pid = readPid(path.join(config.hostDir, 'supervisor.pid'));
    return pid !== null && signal(pid, 0);
  }

  /**
   * Starts the agent's supervisor, detached, so it outlives the control worker. The supervisor stays outside the
   * host's cgroups (the host's OOM killer cannot reach it) and starts the agent inside them.
   */
  private startAgent(config: HostConfig, req: HostRequest): void {
    const log = openLabFile(path.join(config.hostDir, 'agent.log'), { append: true });
    const args = [this.opts.supervisorScript, path.join(config.hostDir, 'host.json')];
    const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', log, log], env: hostAgentEnv(process.env, this.opts.agentEnv, { s3Backups: req.s3Backups === true }) });
    closeSync(log);
    child.unref();
    writeLabFile(path.join(config.hostDir, 'supervisor.pid'), String(child.pid));
  }
}

/** Where a host's volume server keeps its mount, socket and pid file: known from the host's folder alone, so teardown
 * finds a server whose host.json was never written (a provisioning cut short). */
function volumePaths(hostDir: string): Pick<ModelledVolume, 'fuseDir' | 'socket' | 'pidFile'> {
  return { fuseDir: path.join(hostDir, 'volume-fuse'), socket: socketPathFor(hostDir), pidFile: path.join(hostDir, 'volume-server.pid') };
}

/** The backing file a loop device names in sysfs, or null when it is not attached. */
function loopImage(name: string): string | null {
  try {
    return /^loop\d+$/.test(name) ? readKernelFile(`/sys/block/${name}/loop/backing_file`).trim() : null;
  } catch {
    return null;
  }
}

/** The record workflows see: the config without the host-local paths. */
function toRecord(config: HostConfig): HostRecord {
  const { hostId, runId, provider, className, kind, taskQueue, emulated, emulationNote, limits, postgres } = config;
  return { hostId, runId, provider, className, kind, taskQueue, emulated, emulationNote, limits, postgres };
}


/** The labels a host folder holds (its run and expiry), or null. */
function readLabels(hostDir: string): { runId: string; hostId?: string; expiresAt?: string } | null {
  const text = readLabFile(path.join(hostDir, LABELS_FILE), { maxBytes: 64 * 1024 });
  return text === null ? null : (JSON.parse(text) as { runId: string; hostId?: string; expiresAt?: string });
}

/** When a host folder was made: its marker's time (written once, with the folder), else the folder's own. */
function madeAt(dir: string): string {
  const marker = path.join(path.dirname(dir), `.${path.basename(dir)}.storage-lab`);
  const st = existsSync(marker) ? lstatSync(marker) : lstatSync(dir);
  return new Date(Math.min(st.mtimeMs, lstatSync(dir).mtimeMs)).toISOString();
}

/** Pids of the processes running `script` for this host (its host.json is on their command line). */
export function processesRunning(configFile: string, script: string): number[] {
  return listKernelDir('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const cmd = readKernelFile(`/proc/${pid}/cmdline`).split('\0');
        return cmd.some((a) => a.endsWith(script)) && cmd.includes(configFile);
      } catch {
        return false; // Exited while we looked.
      }
    })
    .map(Number);
}

function readPid(file: string): number | null {
  // postmaster.pid is in the postgres user's data folder: read through the file guard, its first bytes only; a
  // link planted there is no pid (the host's cgroup still finds its processes).
  let text: string | null;
  try {
    text = readLabFile(file, { maxBytes: 1024 });
  } catch (err) {
    if (err instanceof LabPathError) return null;
    throw err;
  }
  const pid = Number((text ?? '').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** A process's command line, its arguments joined by spaces; empty when it is gone. */
function commandLine(pid: number): string {
  try {
    return readKernelFile(`/proc/${pid}/cmdline`).replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** Sends a signal; false when the process does not exist. */
function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}


export type { OsUser };
