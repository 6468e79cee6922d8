/**
 * A server's dynamic shared memory after a SIGKILL. PostgreSQL's POSIX segments (dynamic_shared_memory_type's Linux
 * default) are files in /dev/shm named PostgreSQL.<handle> (src/backend/storage/ipc/dsm_impl.c). The server removes
 * them on a clean shutdown. A server killed outright (a host's teardown, a power cut) leaves them in the machine's
 * RAM, 1 MiB or more each: this machine had 3,722 of them (1.9 GB) after a day of runs and test suites
 * (2026-12-05).
 *
 * The lab removes exactly the segments its own host's processes mapped, read from /proc before the kill: never a
 * segment it cannot show is its server's (another server's on the machine, or one no process maps).
 */
import { lstatSync } from 'node:fs';
import { SERVER_SEGMENT as SEGMENT, readKernelFile, removeServerSegment } from './lab-fs';

/** The PostgreSQL segments in one /proc/<pid>/maps text. */
export function segmentsInMaps(maps: string): string[] {
  const out = new Set<string>();
  for (const line of maps.split('\n')) {
    // address perms offset dev inode path: the path is what follows the fifth field.
    const m = /^\S+\s+\S+\s+\S+\s+\S+\s+\d+\s+(.*)$/.exec(line);
    const file = m?.[1].trim();
    if (file && SEGMENT.test(file)) out.add(file);
  }
  return [...out];
}

/** A segment as it was when its server's processes were read: its file, and which file it was (inode, owner). */
export interface MappedSegment {
  file: string;
  ino: number;
  uid: number;
}

/** The segments any of these processes maps now (a process gone meanwhile maps none). */
export function mappedSegments(
  pids: number[],
  readMaps: (pid: number) => string = (pid) => readKernelFile(`/proc/${pid}/maps`),
  statFile: (file: string) => { ino: number; uid: number; isFile(): boolean } = lstatSync,
): MappedSegment[] {
  const files = new Set<string>();
  for (const pid of pids) {
    let maps: string;
    try {
      maps = readMaps(pid);
    } catch {
      continue;
    }
    for (const s of segmentsInMaps(maps)) files.add(s);
  }
  const out: MappedSegment[] = [];
  for (const file of [...files].sort()) {
    try {
      const st = statFile(file);
      if (st.isFile()) out.push({ file, ino: st.ino, uid: st.uid });
    } catch {
      // Removed meanwhile.
    }
  }
  return out;
}

/**
 * Removes the segments once their processes are gone, each only while it is still the file that was read (a regular
 * file of that name, the same inode and owner): what was read is what goes. Returns the files removed.
 */
export function removeSegments(segments: MappedSegment[]): string[] {
  return segments.filter((s) => SEGMENT.test(s.file) && removeServerSegment(s.file, s)).map((s) => s.file);
}
