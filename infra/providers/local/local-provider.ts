/**
 * Hosts on this machine. A host is a folder, a storage device, a memory limit, and a supervised host agent started
 * inside the host's cgroups, so the Postgres and pgbench it starts inherit the limits. The device is the machine's
 * disk (`local-disk`), or for a modelled class (`emulated-ebs`: gp3, io2; `nvme`: m6id's instance store) a modelled
 * volume: a server outside the host's cgroups (lib/volume.ts, infra/volume) times every I/O by the class's device
 * model, under a direct-I/O loop device with ext4 (docs/storage-emulation.md). Without root, cgroups or FUSE hosts
 * still work on the machine's disk and are marked "not emulated".
 */
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { closeSync, existsSync, lstatSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { safeSegment } from '../../../common/core/ids';
import { classLimits } from '../../../common/input/spec';
import { hostTaskQueue } from '../../../common/core/names';
import { hostAgentEnv } from '../../agent-env';
import { LabPathError, chownLab, makeLabDir, openLabFile, registerLabRoot, removeLabTree, writeLabFile } from '../../../lib/lab-fs';
import { backupsDirFor, ensureDir, hostsKeyFile } from '../../../lib/lab-paths';
import { freePort } from '../../../lib/net';
import { childrenOf } from '../../../lib/postgres-probe';
import { findClientBinDir, findPostgresBinDir, postgresOsUser, serverUserReaches, unreachableServerError, type OsUser } from '../../../lib/postgres-binaries';
import type { HostConfig, HostDiagnosis, HostRecord, HostRequest, ManagedHost } from '../../../common/core/hosts';
import type { HostProvider } from '../host-provider';
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
  type VolumeStats,
} from '../../../lib/volume';

/** Extra room on a modelled volume beyond what the workflow asked for (file system overhead, WAL bursts). */
const VOLUME_HEADROOM_BYTES = 2 * 1024 ** 3;

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
}

export interface LocalProviderOptions {
  hostsDir: string;
  /** Environment the host agents start with (Temporal address and namespace, ...). */
  agentEnv: Record<string, string>;
  /** The compiled supervisor script that keeps a host's agent running. */
  supervisorScript: string;
}

export class LocalProvider implements HostProvider {
  readonly name = 'local' as const;

  constructor(private readonly opts: LocalProviderOptions) {
    // Its hosts, the key beside them, and the runs' backup stores: where the file guard lets it write and delete.
    registerLabRoot(opts.hostsDir, hostsKeyFile(opts.hostsDir), backupsDirFor(opts.hostsDir));
  }

  async provision(req: HostRequest): Promise<HostRecord> {
    const hostDir = this.hostDir(req.hostId);
    const configFile = path.join(hostDir, 'host.json');
    if (existsSync(configFile)) {
      const existing = readConfig(configFile);
      if (!this.supervisorAlive(existing)) this.startAgent(existing, req);
      return toRecord(existing);
    }
    // A provisioning cut short (its worker died) may have left a mount, a loop device or a volume server: start afresh.
    await this.releaseVolume(hostDir);
    ensureDir(this.opts.hostsDir);
    // Marked as the lab's (beside it, in the hosts folder), so teardown deletes this folder and never another.
    makeLabDir(hostDir, { marker: true });
    // Labels first: from now on the sweeper knows whose host this is, while the rest is still being made.
    writeLabFile(path.join(hostDir, 'labels.json'), JSON.stringify({ runId: req.runId, experiment: req.experiment, expiresAt: req.expiresAt }), {
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
      provider: 'local',
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
      cgroup: cgroup ? { kind: cgroup.kind, cpuDir: cgroup.cpuDir, memoryDir: cgroup.memoryDir, ioDir: cgroup.ioDir } : null,
      ...(volume ? { volume } : {}),
    };
    // The volume's server starts with its model on; the host's agent lifts it only for preparation (lib/io-cap.ts).
    writeLabFile(configFile, JSON.stringify(config, null, 2), { atomic: true });
    this.startAgent(config, req);
    return toRecord(config);
  }

  async teardown(hostId: string): Promise<void> {
    const hostDir = this.hostDir(hostId);
    await this.killAndWait(hostId);
    await this.releaseVolume(hostDir);
    const cg = this.cgroupOf(hostId);
    if (cg) removeHostCgroup(cg);
    await removeLabTree(hostDir);
  }

  async kill(hostId: string): Promise<void> {
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
    // Without cgroups: the postmaster by its pid file (it runs in a session of its own).
    const config = existsSync(path.join(hostDir, 'host.json')) ? readConfig(path.join(hostDir, 'host.json')) : null;
    const postmasterPid = config ? readPid(path.join(config.dataDir, 'postmaster.pid')) : null;
    if (!postmasterPid) return;
    // Its children too, when the pid is still this host's postmaster (a stale pid file may name another process
    // now): a backend stopped by SIGSTOP never runs to notice its postmaster's death (nor a SIGTERM until
    // continued), while SIGKILL ends a stopped process. The postmaster is stopped first, so it forks no child while
    // they are listed, and they are listed while it is still their parent.
    if (config && commandLine(postmasterPid).includes(config.dataDir) && signal(postmasterPid, 'SIGSTOP'))
      for (const pid of childrenOf(postmasterPid)) signal(pid, 'SIGKILL');
    signal(postmasterPid, 'SIGKILL');
  }

  async list(): Promise<ManagedHost[]> {
    const hosts = new Map<string, ManagedHost>();
    if (existsSync(this.opts.hostsDir)) {
      for (const hostId of readdirSync(this.opts.hostsDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)) {
        const labelsFile = path.join(this.hostDir(hostId), 'labels.json');
        const labels = existsSync(labelsFile)
          ? (JSON.parse(readFileSync(labelsFile, 'utf8')) as { runId: string; expiresAt: string })
          : null;
        const volumePid = volumeServerPid(volumePaths(this.hostDir(hostId)));
        hosts.set(hostId, {
          hostId,
          runId: labels?.runId ?? '',
          expiresAt: labels?.expiresAt ?? null,
          resources: [this.hostDir(hostId), ...(volumePid ? [`volume-server:${volumePid}`] : [])],
        });
      }
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
    return [...hosts.values()];
  }

  async diagnose(hostId: string): Promise<HostDiagnosis> {
    const hostDir = this.hostDir(hostId);
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
    const log = existsSync(logFile) ? `last lines of ${logFile}:\n${readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-20).join('\n')}` : `no agent log at ${logFile}`;
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
  async cutPower(hostId: string): Promise<PowerCutReport> {
    const hostDir = this.hostDir(hostId);
    const configFile = path.join(hostDir, 'host.json');
    if (!existsSync(configFile)) throw new Error(`host ${hostId}: no host folder at ${hostDir}: nothing to cut`);
    const config = readConfig(configFile);
    if (!config.volume) throw new Error(`host ${hostId} is not on a modelled volume (class ${config.className}, ${config.kind}): only a modelled volume can drop unflushed writes`);
    const control = new VolumeControl(config.volume.socket);
    const before = await control.stats();
    const started = Date.now();
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
    return { hostId, ...dropped, before, after: await control.stats(), seconds };
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
    return createHmac('sha256', readFileSync(keyFile)).update(scope).digest('base64url').slice(0, 32);
  }

  /** A host's folder: its id is one safe path segment, and a link planted under that name is refused. */
  private hostDir(hostId: string): string {
    const dir = path.join(this.opts.hostsDir, safeSegment(hostId, 'hostId'));
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
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(mark);
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
            dirs: [...new Set([recorded.memoryDir, recorded.ioDir, recorded.cpuDir])],
            memoryDir: recorded.memoryDir,
            ioDir: recorded.ioDir,
            cpuDir: recorded.cpuDir,
          }
        : hostCgroupPaths(support.kind, hostId);
    return cg.dirs.some((d) => existsSync(d)) ? cg : null;
  }

  /** Kills everything on the host and waits until the kernel has reaped it, so mounts and cgroups can go. */
  private async killAndWait(hostId: string): Promise<void> {
    const cg = this.cgroupOf(hostId);
    for (let i = 0; i < 200; i++) {
      await this.kill(hostId);
      if (!cg || pidsIn(cg).length === 0) return;
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
    return /^loop\d+$/.test(name) ? readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim() : null;
  } catch {
    return null;
  }
}

/** The record workflows see: the config without the host-local paths. */
function toRecord(config: HostConfig): HostRecord {
  const { hostId, runId, provider, className, kind, taskQueue, emulated, emulationNote, limits, postgres } = config;
  return { hostId, runId, provider, className, kind, taskQueue, emulated, emulationNote, limits, postgres };
}

export function readConfig(file: string): HostConfig {
  return JSON.parse(readFileSync(file, 'utf8')) as HostConfig;
}

/** Pids of the processes running `script` for this host (its host.json is on their command line). */
export function processesRunning(configFile: string, script: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return cmd.some((a) => a.endsWith(script)) && cmd.includes(configFile);
      } catch {
        return false; // Exited while we looked.
      }
    })
    .map(Number);
}

function readPid(file: string): number | null {
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** A process's command line, its arguments joined by spaces; empty when it is gone. */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
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
