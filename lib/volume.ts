/**
 * The modelled volume of a local host (infra/volume, docs/storage-emulation.md): its server process, served on a
 * FUSE mount outside the host's cgroups, and the control socket through which the lab switches its model on and off,
 * reads its counters and cuts its power. The provider makes and removes volumes (createModelledVolume,
 * stopVolumeServer); the host agent's IoCap and the sampler talk to a running one (VolumeControl).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import type { ModelledVolume } from '../common/core/hosts';
import type { DeviceModelName, VolumeServerParams } from '../common/model/devices';
import { labPaths } from './lab-paths';
import { LabPathError, lastLogLines, makeLabDir, openLabFile, readKernelFile, readLabFile, removeLabFile } from './lab-fs';
import { isMounted } from './block-devices';
import { runProcess } from './process-runner';

/** The server's binary, built by infra/bootstrap.sh into the tools cache. */
export const VOLUME_BINARY = 'storage-lab-volume';

export function volumeBinary(env: NodeJS.ProcessEnv = process.env): string | null {
  const file = path.join(labPaths(env).cacheBin, VOLUME_BINARY);
  return existsSync(file) ? file : null;
}

/** A block device's own counts, as the server reads them beside its own (/sys/block/<dev>/stat). */
export interface KernelCounters {
  reads: number;
  readSectors: number;
  readTicksMs: number;
  /** Completed writes, an empty flush counted as a write of no sectors (and as a flush). */
  writes: number;
  writeSectors: number;
  writeTicksMs: number;
  inFlight: number;
  discards: number;
  flushes: number;
}

/** The server's cumulative counters at one moment (infra/volume/control.go Stats). */
export interface VolumeStats {
  atSeconds: number;
  pid: number;
  model: VolumeServerParams;
  on: boolean;
  dead: boolean;
  reads: number;
  writes: number;
  flushes: number;
  discards: number;
  readBytes: number;
  writeBytes: number;
  discardBytes: number;
  modelledReads: number;
  modelledWrites: number;
  modelledUnits: number;
  modelledReadBytes: number;
  modelledWriteBytes: number;
  /** Reads and writes the model decided on (admitted while it was on), counted on arrival, not completion. */
  modelledAdmitted: number;
  throttleWaits: number;
  throttleWaitSeconds: number;
  queueWaits: number;
  queueWaitSeconds: number;
  readServiceSeconds: number;
  writeServiceSeconds: number;
  flushServiceSeconds: number;
  errors: number;
  inFlight: number;
  queueArea: number;
  busiestSecondUnits: number;
  readCompensationUs: number;
  writeCompensationUs: number;
  /** powerCuts: the undo log a power cut needs is kept (absent from servers built before the choice: kept). */
  store: { volatileBytes: number; destaged: number; cutPages: number; backing: 'ram' | 'file'; powerCuts?: boolean };
  device?: string;
  kernel?: KernelCounters;
  rssBytes: number;
  cpuSeconds: number;
}

/** How long one control request may take: the server answers from memory, so only a dead or wedged server is slower. */
const REQUEST_TIMEOUT_MS = 5_000;

/** A running volume server's control socket. Every call is one connection, one request, one answer. */
export class VolumeControl {
  constructor(readonly socket: string) {}

  private request<T>(req: Record<string, unknown>, timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const conn = connect(this.socket);
      let buffer = '';
      const timer = setTimeout(() => {
        conn.destroy();
        reject(new Error(`the volume server at ${this.socket} did not answer "${String(req.op)}" within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      conn.on('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`the volume server at ${this.socket} is not reachable (${(err as NodeJS.ErrnoException).code ?? err.message}): is it running?`));
      });
      conn.on('data', (chunk) => {
        buffer += chunk.toString('utf8');
        const nl = buffer.indexOf('\n');
        if (nl < 0) return;
        clearTimeout(timer);
        conn.end();
        try {
          const answer = JSON.parse(buffer.slice(0, nl)) as { ok: boolean; error?: string } & T;
          if (!answer.ok) reject(new Error(`the volume server refused "${String(req.op)}": ${answer.error}`));
          else resolve(answer);
        } catch (err) {
          reject(err as Error);
        }
      });
      conn.write(`${JSON.stringify(req)}\n`);
    });
  }

  async stats(): Promise<VolumeStats> {
    return (await this.request<{ stats: VolumeStats }>({ op: 'stats' })).stats;
  }

  /** The model on (the class's figures) or off (preparation, uncapped). */
  async setModel(on: boolean): Promise<void> {
    await this.request({ op: 'model', on });
  }

  /** Reads and writes admitted on the model since the server started (counted on arrival: none from before a switch). */
  async modelledIos(): Promise<number> {
    return (await this.stats()).modelledAdmitted;
  }

  /** The loop device over the image, whose own counters the server reads beside its own. */
  async attach(device: string): Promise<void> {
    await this.request({ op: 'attach', device });
  }

  /** Cuts the power: every I/O fails from now on, and writes not flushed are dropped; how many bytes were. */
  async cut(): Promise<{ droppedPages: number; droppedBytes: number }> {
    return this.request<{ droppedPages: number; droppedBytes: number }>({ op: 'cut' }, 60_000);
  }

  async powerOn(): Promise<void> {
    await this.request({ op: 'power-on' });
  }

  async shutdown(): Promise<void> {
    await this.request({ op: 'shutdown' });
  }
}

/**
 * Where a host's control socket lives: in its folder, unless that path is too long for a unix socket (108 bytes on
 * Linux), then in a short root-only folder named after it.
 */
export function socketPathFor(hostDir: string): string {
  const inHost = path.join(hostDir, 'volume.sock');
  if (Buffer.byteLength(inHost) < 100) return inHost;
  return path.join('/run/storage-lab-volumes', `${createHash('sha256').update(hostDir).digest('hex').slice(0, 20)}.sock`);
}

/** The server's pid from its pid file, when that process still runs the volume server; else null. */
export function volumeServerPid(volume: Pick<ModelledVolume, 'pidFile'>): number | null {
  let pid: number;
  try {
    // In the host's folder: read through the file guard (no link followed), a pid's few bytes at most.
    const text = readLabFile(volume.pidFile, { maxBytes: 32 });
    if (text === null) return null;
    pid = Number(text.trim());
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    const cmd = readKernelFile(`/proc/${pid}/cmdline`);
    return cmd.includes(VOLUME_BINARY) && cmd.split('\0').includes(volume.pidFile) ? pid : null;
  } catch {
    return null;
  }
}

export interface StartVolumeOptions {
  binary: string;
  hostDir: string;
  sizeBytes: number;
  params: VolumeServerParams;
  model: DeviceModelName;
  backing: 'ram' | 'file';
  /** Start with the model off (the host's preparation comes first and runs uncapped). */
  modelOff?: boolean;
  /**
   * Keep what a power cut drops (the server's undo log of writes not yet flushed). False for a host no power-cut
   * drill uses: its writes are durable as they land, which saves the server a copy of each page at its first write
   * after a flush, and a cut is refused.
   */
  powerCuts: boolean;
  /**
   * What answers the volume's FUSE requests: the server's own loop (the default, infra/volume/loop.go) or go-fuse's
   * server, kept for the cost bench's side-by-side rows (docs/storage-emulation.md, "What the device costs").
   */
  serve?: 'loop' | 'go-fuse';
}

/**
 * A volume server's environment: the path, and a Go CPU profile of its whole life when the control worker's
 * environment names a folder for them (STORAGE_LAB_VOLUME_PPROF_DIR, the operator's: no run's input reaches it): one
 * file a server, named after its host folder and its start (docs/storage-emulation.md, "What the device costs").
 */
export function volumeServerEnv(env: NodeJS.ProcessEnv, hostDir: string, startedAt = Date.now()): Record<string, string> {
  const dir = env.STORAGE_LAB_VOLUME_PPROF_DIR;
  return {
    PATH: env.PATH ?? '/usr/bin:/bin',
    ...(dir && path.isAbsolute(dir) ? { STORAGE_LAB_VOLUME_PPROF: path.join(dir, `${path.basename(hostDir)}-${startedAt}.pprof`) } : {}),
  };
}

/** How long a new server has to mount and answer. */
const START_TIMEOUT_MS = 20_000;

/**
 * Starts a host's volume server, detached (it outlives the control worker, as the host's agent does) and in the
 * cgroup of the process that starts it: outside the host's cgroups, so its memory (the volume's RAM) never counts
 * against the host's limit and it is never throttled with the host. Resolves once the server answers.
 */
export async function startVolumeServer(opts: StartVolumeOptions): Promise<ModelledVolume> {
  const fuseDir = makeLabDir(path.join(opts.hostDir, 'volume-fuse'), { mode: 0o700 });
  const volume: ModelledVolume = {
    model: opts.model,
    params: opts.params,
    fuseDir,
    image: path.join(fuseDir, 'volume.img'),
    socket: socketPathFor(opts.hostDir),
    pidFile: path.join(opts.hostDir, 'volume-server.pid'),
    log: path.join(opts.hostDir, 'volume-server.log'),
    backing: opts.backing,
    sizeBytes: opts.sizeBytes,
  };
  const args = [
    '--mount', fuseDir,
    '--size', String(opts.sizeBytes),
    '--control', volume.socket,
    '--params', JSON.stringify(opts.params),
    // The server writes its pid there; the path on its command line tells whose server a process is (volumeServerPid).
    '--pid-file', volume.pidFile,
    ...(opts.backing === 'file' ? ['--backing', path.join(opts.hostDir, 'volume.backing')] : []),
    ...(opts.modelOff ? ['--model-off'] : []),
    ...(opts.powerCuts ? [] : ['--power-cuts=false']),
    ...(opts.serve === 'go-fuse' ? ['--serve', 'go-fuse'] : []),
  ];
  const log = openLabFile(volume.log, { append: true });
  const child = spawn(opts.binary, args, { detached: true, stdio: ['ignore', log, log], env: volumeServerEnv(process.env, opts.hostDir) });
  closeSync(log);
  child.unref();
  let exited: string | null = null;
  child.once('exit', (code, sig) => (exited = sig ? `killed by ${sig}` : `exited with code ${code}`));
  const control = new VolumeControl(volume.socket);
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (exited) throw new Error(`the volume server ${exited} before it answered; the end of ${volume.log}:\n${tail(volume.log)}`);
    try {
      if (isMounted(fuseDir) && existsSync(volume.image)) {
        await control.stats();
        return volume;
      }
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      if (child.pid) process.kill(child.pid, 'SIGKILL');
      throw new Error(`the volume server did not answer within ${START_TIMEOUT_MS / 1000} s; the end of ${volume.log}:\n${tail(volume.log)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The last lines of a log, for a failure message: its last 32 KiB through the file guard, 300 characters a line. */
export function tail(file: string, lines = 15): string {
  try {
    const text = readLabFile(file, { maxBytes: 32 * 1024, tail: true });
    if (text === null) return '(no log)';
    return lastLogLines(text, lines);
  } catch (err) {
    return err instanceof LabPathError ? `(not read: ${err.message})` : '(no log)';
  }
}

/** How long a server has to exit after being asked, then after SIGTERM, before it is killed. */
const STOP_GRACE_MS = 3_000;

/**
 * Stops a host's volume server in bounded time and leaves no mount behind: asked to shut down, then SIGTERM, then
 * SIGKILL; a FUSE mount a killed server left is aborted and detached lazily. The loop device must be detached first.
 */
export async function stopVolumeServer(volume: Pick<ModelledVolume, 'pidFile' | 'socket' | 'fuseDir'>): Promise<void> {
  const pid = volumeServerPid(volume);
  const gone = async (ms: number) => {
    const until = Date.now() + ms;
    while (pid !== null && alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    return pid === null || !alive(pid);
  };
  if (pid !== null) {
    await new VolumeControl(volume.socket).shutdown().catch(() => undefined);
    if (!(await gone(STOP_GRACE_MS))) {
      signal(pid, 'SIGTERM');
      if (!(await gone(STOP_GRACE_MS))) {
        signal(pid, 'SIGKILL');
        await gone(STOP_GRACE_MS);
      }
    }
  }
  if (isMounted(volume.fuseDir)) {
    // A server that died leaves its mount answering ENOTCONN: detach it lazily (nothing holds it: the loop is gone).
    await runProcess('umount', ['-l', volume.fuseDir], { okExitCodes: [0, 32], timeoutMs: 10_000 });
  }
  if (existsSync(volume.pidFile)) removeLabFile(volume.pidFile);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Gone already.
  }
}

/** Whether this machine can run modelled volumes, or why not: root (direct FUSE mounts, loop devices), /dev/fuse, the server. */
export function modelledVolumeSupport(env: NodeJS.ProcessEnv = process.env): { ok: true; binary: string } | { ok: false; reason: string } {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return { ok: false, reason: 'not running as root: a modelled volume needs a FUSE mount and a loop device' };
  if (!existsSync('/dev/fuse')) return { ok: false, reason: 'no /dev/fuse on this machine' };
  const binary = volumeBinary(env);
  if (!binary) return { ok: false, reason: `the volume server is not built (${path.join(labPaths(env).cacheBin, VOLUME_BINARY)}): run infra/bootstrap.sh` };
  return { ok: true, binary };
}

/** Bytes of memory the machine has available now (/proc/meminfo MemAvailable), or null where unknown. */
export function memAvailableBytes(): number | null {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readKernelFile('/proc/meminfo'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Memory the machine keeps free beside a volume held in RAM and its host (the lab, other work). */
export const RAM_BACKING_MARGIN_BYTES = 2 * 2 ** 30;

/**
 * Where a volume's bytes go: RAM where all the volume may hold (the spec's estimate of data, WAL and phases) fits in
 * the memory the machine has available beside its host's memory limit and a margin (its pages are allocated as they
 * are written: a volume that fills less takes less), else a sparse file on the machine's disk, read and written
 * through the server's page cache. STORAGE_LAB_VOLUME_BACKING=ram|file decides instead.
 */
export function chooseBacking(volumeBytes: number, hostMemoryBytes: number, env: NodeJS.ProcessEnv = process.env, available = memAvailableBytes()): 'ram' | 'file' {
  const forced = env.STORAGE_LAB_VOLUME_BACKING;
  if (forced === 'ram' || forced === 'file') return forced;
  return available !== null && volumeBytes + hostMemoryBytes + RAM_BACKING_MARGIN_BYTES <= available ? 'ram' : 'file';
}
