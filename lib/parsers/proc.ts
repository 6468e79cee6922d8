/**
 * Linux /proc counters → typed values: /proc/diskstats (device IOPS, MB/s, latency) and /proc/stat (CPU seconds).
 * Pure; tested on files captured on this machine (test/fixtures/linux-6.18).
 */
import type { DeviceRates } from '../../common/results/sampler-readings';

/** Cumulative counters of one block device (Documentation/admin-guide/iostats.rst). */
export interface DiskCounters {
  reads: number;
  readSectors: number;
  readMs: number;
  writes: number;
  writeSectors: number;
  writeMs: number;
  /** Milliseconds the device had I/O in flight (utilisation). */
  ioMs: number;
}

/** Bytes per diskstats sector, whatever the device's own sector size. */
const SECTOR_BYTES = 512;

/** The counters of `device` (as named in /proc/diskstats, e.g. "loop3", "nvme0n1"), or null when it is not listed. */
export function parseDiskstats(text: string, device: string): DiskCounters | null {
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 14 || f[2] !== device) continue;
    const n = (i: number) => Number(f[i]);
    return { reads: n(3), readSectors: n(5), readMs: n(6), writes: n(7), writeSectors: n(9), writeMs: n(10), ioMs: n(12) };
  }
  return null;
}

/** Rates between two readings `seconds` apart. MB is 2^20 bytes, as Postgres counts it. */
export function diskRates(before: DiskCounters, after: DiskCounters, seconds: number): DeviceRates {
  const d = (k: keyof DiskCounters) => Math.max(0, after[k] - before[k]);
  const s = seconds > 0 ? seconds : 1;
  const mb = (sectors: number) => (sectors * SECTOR_BYTES) / 2 ** 20;
  return {
    readIops: d('reads') / s,
    writeIops: d('writes') / s,
    readMBps: mb(d('readSectors')) / s,
    writeMBps: mb(d('writeSectors')) / s,
    readLatencyMs: d('reads') > 0 ? d('readMs') / d('reads') : null,
    writeLatencyMs: d('writes') > 0 ? d('writeMs') / d('writes') : null,
    utilization: Math.min(1, d('ioMs') / (s * 1000)),
  };
}

/** CPU seconds (user + system) of one process from /proc/<pid>/stat; the name in parentheses may hold spaces. */
export function parsePidStatCpuSeconds(text: string, ticksPerSecond = 100): number {
  const rest = text.slice(text.lastIndexOf(')') + 2).trim().split(/\s+/);
  // After "pid (comm) ": state is field 3, utime and stime are fields 14 and 15 (proc(5)).
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('/proc/<pid>/stat has no utime/stime fields');
  return (utime + stime) / ticksPerSecond;
}

/** The state letter (R, S, D, T, t, Z, ...) and the parent's pid of a /proc/<pid>/stat line (proc(5), fields 3 and 4). */
export function parsePidStatState(text: string): { state: string; ppid: number } {
  // The command (field 2) is in parentheses and may hold spaces or parentheses itself: read after the last one.
  const rest = text.slice(text.lastIndexOf(')') + 2).trim().split(/\s+/);
  const ppid = Number(rest[1]);
  if (!/^[A-Za-z]$/.test(rest[0] ?? '') || !Number.isInteger(ppid)) throw new Error('/proc/<pid>/stat has no state/ppid fields');
  return { state: rest[0], ppid };
}

/** CPU time of the whole machine from the first line of /proc/stat, in seconds. */
export interface MachineCpu {
  /** user + nice + system + irq + softirq + steal (guest time is already inside user). */
  busySeconds: number;
  iowaitSeconds: number;
  idleSeconds: number;
}

/** Parses /proc/stat's aggregate "cpu" line; `ticksPerSecond` is USER_HZ (getconf CLK_TCK, 100 on Linux). */
export function parseProcStat(text: string, ticksPerSecond = 100): MachineCpu {
  const line = text.split('\n').find((l) => /^cpu\s/.test(l));
  if (!line) throw new Error('/proc/stat has no aggregate "cpu" line');
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((v) => Number(v) || 0);
  return {
    busySeconds: (user + nice + system + irq + softirq + (steal ?? 0)) / ticksPerSecond,
    iowaitSeconds: iowait / ticksPerSecond,
    idleSeconds: idle / ticksPerSecond,
  };
}
