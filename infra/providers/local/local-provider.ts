/**
 * Hosts on this machine. A host is a folder, a storage device (the machine's disk, or a direct-I/O loop device
 * under a cgroup I/O limit for emulated EBS), a memory limit, and a supervised host agent started inside the host's
 * cgroups, so the Postgres and pgbench it starts inherit the limits. Without root or cgroups hosts still work and
 * are marked "not emulated".
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
import type { HostConfig, HostInspection, HostRecord, HostRequest, ManagedHost } from '../../../common/core/hosts';
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
import { IoCap } from '../../../lib/io-cap';
import { createLoopVolume, deviceOfPath, detachLoop, loopsBackedBy, unmount } from '../../../lib/block-devices';

/** Extra room on an emulated volume beyond what the workflow asked for (file system overhead, WAL bursts). */
const VOLUME_HEADROOM_BYTES = 2 * 1024 ** 3;

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
    // A provisioning cut short (its worker died) may have left a mount or a loop device: start from scratch.
    await unmount(path.join(hostDir, 'volume'));
    for (const loop of await loopsBackedBy(hostDir)) await detachLoop(loop.device);
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
    const cgroup = support.kind ? createHostCgroup(support.kind, req.hostId, req.memoryLimitMiB) : null;
    let emulated = cgroup !== null;
    let emulationNote = support.kind ? undefined : `not emulated: ${support.reason}`;

    let storageRoot = path.join(hostDir, 'disk');
    let device: string | null;
    let majMin: string | null = null;
    if (req.storageClass.kind === 'emulated-ebs' && cgroup && limits) {
      storageRoot = path.join(hostDir, 'volume');
      ensureDir(storageRoot);
      const size = req.storageClass.sizeGiB ? req.storageClass.sizeGiB * 1024 ** 3 : req.volumeBytes + VOLUME_HEADROOM_BYTES;
      const loop = await createLoopVolume(path.join(hostDir, 'volume.img'), storageRoot, Math.ceil(size));
      majMin = loop.majMin;
      device = loop.name;
    } else {
      ensureDir(storageRoot);
      device = deviceOfPath(storageRoot);
      if (req.storageClass.kind === 'emulated-ebs') {
        emulated = false;
        emulationNote ??= 'not emulated: no I/O limits on this machine';
      }
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
        iopsBudget: emulated && limits ? limits.iopsBudget : null,
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
    };
    // The class's I/O cap, before anything runs on the host; its agent lifts it only for preparation (lib/io-cap.ts).
    new IoCap(config, majMin).apply();
    writeLabFile(configFile, JSON.stringify(config, null, 2), { atomic: true });
    this.startAgent(config, req);
    return toRecord(config);
  }

  async teardown(hostId: string): Promise<void> {
    const hostDir = this.hostDir(hostId);
    await this.killAndWait(hostId);
    await unmount(path.join(hostDir, 'volume'));
    for (const loop of await loopsBackedBy(hostDir)) await detachLoop(loop.device);
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
        hosts.set(hostId, {
          hostId,
          runId: labels?.runId ?? '',
          expiresAt: labels?.expiresAt ?? null,
          resources: [this.hostDir(hostId)],
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

  async inspect(hostId: string): Promise<HostInspection> {
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
    const logFile = path.join(hostDir, 'agent.log');
    const log = existsSync(logFile) ? `last lines of ${logFile}:\n${readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-20).join('\n')}` : `no agent log at ${logFile}`;
    return { oomKills: memory?.oomKills ?? null, text: `host ${hostId}: ${processes.join(', ')}\n${memoryLine}\n${log}` };
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
