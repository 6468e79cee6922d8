/**
 * Per-host cgroups on one machine: a memory limit (so the page cache cannot hold the data set), the host's own I/O
 * counts on its device and CPU accounting (the I/O budget is the modelled volume's: lib/volume.ts). cgroup v1 (memory, blkio, cpuacct controllers) and v2 (one
 * unified tree with memory.max, io.max, cpu.stat) are both supported. Host cgroups sit below the cgroup this
 * process already lives in, so whatever supervises us keeps supervising the hosts.
 * The cgroup file system is its own root for the file guard (lib/lab-fs.ts, eslint.config.js): only root creates
 * entries there and it holds no symbolic links, so plain fs calls are safe once a path is checked to stay inside it
 * (cgroupPath) and a host id is one safe segment.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync, rmdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { safeSegment } from '../common/core/ids';
import { blkioCounters, parseIoStat, type CgroupIoCounters } from './parsers/cgroup';

const CGROUP_ROOT = '/sys/fs/cgroup';
const V1_CONTROLLERS = ['memory', 'blkio', 'cpuacct'] as const;
type V1Controller = (typeof V1_CONTROLLERS)[number];

/** A path inside the cgroup file system's host parent, or an error: the guard of this module's writes and removals. */
function cgroupPath(p: string): string {
  const resolved = path.resolve(p);
  if (!resolved.startsWith(`${CGROUP_ROOT}/`) || !resolved.split('/').includes('storage-lab'))
    throw new Error(`refused to change ${p}: not a lab cgroup below ${CGROUP_ROOT}`);
  return resolved;
}

/** Writes one control file of a host's cgroup (a limit, an accounting rule). */
export function writeCgroupFile(dir: string, name: string, value: string): void {
  writeFileSync(cgroupPath(path.join(dir, safeSegment(name, 'cgroup file'))), value);
}

/** The cgroup directories of one host. */
export interface HostCgroup {
  kind: 'v1' | 'v2';
  /** Every directory a process must join (one per v1 controller and the v2 one, or the one v2 directory). */
  dirs: string[];
  memoryDir: string;
  ioDir: string;
  cpuDir: string;
  /**
   * The host's cgroup in the v2 hierarchy: on a v2 machine its one directory; on a hybrid one (v1 controllers, a v2
   * tree without them) a directory of its own there, which carries no limit but names the host's sockets, so a
   * packet filter can tell one host's connections from another's on loopback (lib/network-cut.ts). Null: no v2 tree.
   */
  netDir: string | null;
}

export type CgroupSupport = { kind: 'v1' | 'v2'; reason?: undefined } | { kind: null; reason: string };

/** Which cgroup version this machine lets us use for hosts, or why none. */
export function detectCgroups(): CgroupSupport {
  if (process.env.STORAGE_LAB_NO_CGROUPS)
    return { kind: null, reason: 'cgroup limits switched off (STORAGE_LAB_NO_CGROUPS is set)' };
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return { kind: null, reason: 'not running as root: cgroup limits need root' };
  const v1Ready = V1_CONTROLLERS.every((c) => existsSync(path.join(CGROUP_ROOT, c, 'cgroup.procs')));
  if (v1Ready) return { kind: 'v1' };
  const unified = path.join(CGROUP_ROOT, 'cgroup.controllers');
  if (existsSync(unified)) {
    const controllers = readFileSync(unified, 'utf8').split(/\s+/);
    if (controllers.includes('memory') && controllers.includes('io')) return { kind: 'v2' };
    return { kind: null, reason: `cgroup v2 lacks the memory or io controller (has: ${controllers.join(' ')})` };
  }
  return { kind: null, reason: 'no cgroup v1 memory/blkio/cpuacct controllers and no cgroup v2 tree' };
}

/** This process's own cgroup path for a v1 controller, or the v2 path ('' key 0). */
function ownCgroupPath(controller: V1Controller | ''): string {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, p] = line.split(':');
    if (p === undefined) continue;
    const names = controllers.split(',');
    if (controller === '' ? controllers === '' : names.includes(controller)) return p;
  }
  return '/';
}

/** The parent under which all host cgroups of this lab live, per controller. */
function labParent(kind: 'v1' | 'v2', controller: V1Controller | ''): string {
  const base = kind === 'v1' ? path.join(CGROUP_ROOT, controller) : CGROUP_ROOT;
  return path.join(base, ownCgroupPath(controller), 'storage-lab');
}

/**
 * Where the cgroup v2 tree is mounted below the cgroup root (the root itself on a v2 machine, `unified` on a hybrid
 * one), or null when there is none there.
 */
export function cgroupV2Mount(): string | null {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [mount, fs] = line.split(' - ');
    const mountPoint = mount?.split(' ')[4];
    if (fs?.startsWith('cgroup2 ') && mountPoint && (mountPoint === CGROUP_ROOT || mountPoint.startsWith(`${CGROUP_ROOT}/`))) return mountPoint;
  }
  return null;
}

/** The cgroup directories a host uses (whether or not they exist yet). */
export function hostCgroupPaths(kind: 'v1' | 'v2', hostId: string): HostCgroup {
  safeSegment(hostId, 'hostId');
  if (kind === 'v2') {
    const dir = path.join(labParent('v2', ''), hostId);
    return { kind, dirs: [dir], memoryDir: dir, ioDir: dir, cpuDir: dir, netDir: dir };
  }
  const dir = (c: V1Controller) => path.join(labParent('v1', c), hostId);
  const v2 = cgroupV2Mount();
  const netDir = v2 ? path.join(v2, ownCgroupPath(''), 'storage-lab', hostId) : null;
  return {
    kind,
    dirs: [...V1_CONTROLLERS.map(dir), ...(netDir ? [netDir] : [])],
    memoryDir: dir('memory'),
    ioDir: dir('blkio'),
    cpuDir: dir('cpuacct'),
    netDir,
  };
}

/**
 * How a packet filter names a host's v2 cgroup: nftables' `socket cgroupv2 level <level> "<path>"` takes the path
 * below the cgroup root and the cgroup's depth in the v2 tree (it compares the socket's ancestor at that depth).
 */
export function socketCgroupMatch(netDir: string): { path: string; level: number } {
  const mount = cgroupV2Mount();
  const resolved = path.resolve(netDir);
  if (!mount || !resolved.startsWith(`${mount}/`)) throw new Error(`${netDir} is not in the cgroup v2 tree${mount ? ` (mounted at ${mount})` : ''}`);
  return { path: path.relative(CGROUP_ROOT, resolved), level: path.relative(mount, resolved).split('/').length };
}

/** Creates (or reuses) a host's cgroups and sets its memory limit before anything runs in them. */
export function createHostCgroup(kind: 'v1' | 'v2', hostId: string, memoryLimitMiB: number): HostCgroup {
  const cg = hostCgroupPaths(kind, hostId);
  if (kind === 'v2') enableV2Controllers(path.dirname(cg.memoryDir));
  for (const dir of cg.dirs) mkdirSync(cgroupPath(dir), { recursive: true });
  writeCgroupFile(cg.memoryDir, kind === 'v1' ? 'memory.limit_in_bytes' : 'memory.max', String(memoryLimitMiB * 1024 * 1024));
  return cg;
}

/** v2 only hands controllers to children that every ancestor enabled in cgroup.subtree_control. */
function enableV2Controllers(labDir: string): void {
  const chain: string[] = [];
  for (let d = labDir; d.startsWith(CGROUP_ROOT) && d !== CGROUP_ROOT; d = path.dirname(d)) chain.unshift(d);
  mkdirSync(cgroupPath(labDir), { recursive: true });
  for (const dir of [CGROUP_ROOT, ...chain]) {
    try {
      writeFileSync(path.join(dir, 'cgroup.subtree_control'), '+memory +io +cpu');
    } catch {
      // Already enabled, or a parent with processes of its own; io.max below then reports the real problem.
    }
  }
}

/** The cgroup's cumulative I/O on one device (v1 blkio.throttle.io_serviced / io_service_bytes, v2 io.stat), or null. */
export function ioCounters(cg: Pick<HostCgroup, 'kind' | 'ioDir'>, majMin: string): CgroupIoCounters | null {
  try {
    const read = (f: string) => readFileSync(path.join(cg.ioDir, f), 'utf8');
    if (cg.kind === 'v2') return parseIoStat(read('io.stat'), majMin);
    return blkioCounters(read('blkio.throttle.io_serviced'), read('blkio.throttle.io_service_bytes'), majMin);
  } catch {
    return null;
  }
}

/** The command prefix that moves a shell into the host's cgroups before it execs the real program. */
export function joinScript(cg: Pick<HostCgroup, 'dirs'>): string {
  return cg.dirs.map((d) => `echo $$ > '${path.join(d, 'cgroup.procs')}'`).join(' && ');
}

/** Pids of every process in the host's cgroups. */
export function pidsIn(cg: HostCgroup): number[] {
  const pids = new Set<number>();
  for (const dir of cg.dirs) {
    const file = path.join(dir, 'cgroup.procs');
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) if (line.trim()) pids.add(Number(line));
  }
  return [...pids];
}

/** CPU time the host's processes used, in seconds. */
export function cpuSeconds(cg: Pick<HostCgroup, 'kind' | 'cpuDir'>): number {
  if (cg.kind === 'v1') return Number(readFileSync(path.join(cg.cpuDir, 'cpuacct.usage'), 'utf8')) / 1e9;
  const stat = readFileSync(path.join(cg.cpuDir, 'cpu.stat'), 'utf8');
  const m = /^usage_usec (\d+)/m.exec(stat);
  return m ? Number(m[1]) / 1e6 : 0;
}

/** The host's memory cgroup as the kernel sees it: the limit, the peak, and the processes it killed for memory. */
export interface MemoryState {
  limitBytes: number;
  peakBytes: number | null;
  oomKills: number;
}

/** Reads the memory cgroup's counters (v1 memory.oom_control / max_usage_in_bytes, v2 memory.events / memory.peak). */
export function memoryState(cg: Pick<HostCgroup, 'kind' | 'memoryDir'>): MemoryState {
  const read = (file: string): string | null => {
    try {
      return readFileSync(path.join(cg.memoryDir, file), 'utf8');
    } catch {
      return null;
    }
  };
  const counter = (text: string | null, key: string) => Number(new RegExp(`^${key} (\\d+)`, 'm').exec(text ?? '')?.[1] ?? 0);
  if (cg.kind === 'v1')
    return {
      limitBytes: Number(read('memory.limit_in_bytes')),
      peakBytes: Number(read('memory.max_usage_in_bytes')),
      oomKills: counter(read('memory.oom_control'), 'oom_kill'),
    };
  const peak = read('memory.peak');
  return { limitBytes: Number(read('memory.max')), peakBytes: peak === null ? null : Number(peak), oomKills: counter(read('memory.events'), 'oom_kill') };
}

/** Removes the host's cgroups; they must be empty (kill the processes first). */
export function removeHostCgroup(cg: HostCgroup): void {
  for (const dir of cg.dirs) {
    if (existsSync(dir)) rmdirSync(cgroupPath(dir));
  }
}

/** Host ids that have a cgroup under this lab's parent (for the sweeper). */
export function listHostCgroups(kind: 'v1' | 'v2'): string[] {
  const parent = kind === 'v1' ? labParent('v1', 'memory') : labParent('v2', '');
  if (!existsSync(parent)) return [];
  return readdirSync(parent, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
}
