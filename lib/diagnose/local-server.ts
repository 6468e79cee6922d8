/**
 * Whether a server we are connected to runs on this machine, and if so where its data lives: the data directory it
 * reports must hold a postmaster.pid whose port and start time are the server's own. Then its data device, the
 * machine's memory (or the server's memory cgroup limit) and page cache are known.
 */
import { existsSync, statSync } from 'node:fs';
import { readAsFolderOwner, readKernelFile } from '../lab-fs';
import path from 'node:path';
import type { Client } from 'pg';
import { deviceOfPath } from '../block-devices';
import { parseMemoryStat } from '../parsers/cgroup';

export interface LocalServer {
  dataDirectory: string;
  postmasterPid: number;
  device: string | null;
  memoryMiB: number;
  pageCacheMiB: number;
}

/** The server's data directory if it is on this machine (null: elsewhere, or not readable here), with why not. */
export async function findLocalServer(client: Client): Promise<{ server: LocalServer | null; reason: string | null }> {
  let row: { dir: string; port: string; started: string };
  try {
    row = (
      await client.query<{ dir: string; port: string; started: string }>(
        "SELECT current_setting('data_directory') AS dir, current_setting('port') AS port, extract(epoch FROM pg_postmaster_start_time())::text AS started",
      )
    ).rows[0];
  } catch (err) {
    return { server: null, reason: `the role cannot read data_directory (${(err as Error).message}); grant it pg_monitor` };
  }
  const pidFile = path.join(row.dir, 'postmaster.pid');
  let lines: string[];
  try {
    // The server's own folder (its OS user writes there): read as that user, so a link there leads nowhere else.
    lines = readAsFolderOwner(pidFile, 4096).split('\n');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      server: null,
      reason: code === 'ENOENT' ? 'the server runs on another machine (its data directory is not here)' : `${pidFile} is not readable here (${code}); run diagnose as root or as the server's OS user for CPU, device and fsync figures`,
    };
  }
  // postmaster.pid: pid, data directory, start time (epoch seconds), port, ...
  const [pid, , startEpoch, port] = lines;
  if (port?.trim() !== row.port || Math.abs(Number(startEpoch) - Number(row.started)) > 2)
    return { server: null, reason: `${pidFile} belongs to another server than the one connected to (another machine with the same path?)` };
  const memory = serverMemory(Number(pid));
  return {
    server: { dataDirectory: row.dir, postmasterPid: Number(pid), device: safeDevice(row.dir), ...memory },
    reason: null,
  };
}

function safeDevice(dir: string): string | null {
  try {
    return deviceOfPath(dir);
  } catch {
    return null;
  }
}

/** The memory the server can cache in: its memory cgroup's limit and page cache if it has a limit, else the machine's. */
function serverMemory(pid: number): { memoryMiB: number; pageCacheMiB: number } {
  const mib = (bytes: number) => bytes / 2 ** 20;
  const cg = memoryCgroupDir(pid);
  if (cg) {
    try {
      const limitFile = existsSync(path.join(cg, 'memory.max')) ? 'memory.max' : 'memory.limit_in_bytes';
      const limit = Number(readKernelFile(path.join(cg, limitFile)).trim());
      const stat = parseMemoryStat(readKernelFile(path.join(cg, 'memory.stat')));
      if (Number.isFinite(limit) && limit < 2 ** 60 && stat) return { memoryMiB: mib(limit), pageCacheMiB: mib(stat.cacheBytes) };
    } catch {
      // Fall back to the machine's figures.
    }
  }
  const info = readKernelFile('/proc/meminfo');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? 0);
  return { memoryMiB: kib('MemTotal') / 1024, pageCacheMiB: kib('Cached') / 1024 };
}

/** The memory cgroup directory of a process (v1 memory controller or v2 unified), or null at the root or when unreadable. */
function memoryCgroupDir(pid: number): string | null {
  try {
    for (const line of readKernelFile(`/proc/${pid}/cgroup`).split('\n')) {
      const [, controllers, p] = line.split(':');
      if (p === undefined || p === '/') continue;
      const dir = controllers === '' ? path.join('/sys/fs/cgroup', p) : controllers.split(',').includes('memory') ? path.join('/sys/fs/cgroup/memory', p) : null;
      if (dir && existsSync(dir) && statSync(dir).isDirectory()) return dir;
    }
  } catch {
    // Not visible (another pid namespace): no cgroup.
  }
  return null;
}
