/**
 * cgroup I/O and memory counters → typed values: v1 blkio.throttle.io_serviced / io_service_bytes and memory.stat,
 * v2 io.stat and memory.stat. Pure; tested on files captured on this machine (test/fixtures/linux-6.18) and, for
 * v2 io.stat, on the example of the kernel's cgroup-v2 documentation (test/fixtures/linux-docs).
 */

/** Cumulative I/O of one cgroup on one device (MAJ:MIN). */
export interface CgroupIoCounters {
  reads: number;
  writes: number;
  readBytes: number;
  writeBytes: number;
}

/** The "MAJ:MIN Read N" and "MAJ:MIN Write N" lines of a v1 blkio.throttle file, or null when the device has none. */
export function parseBlkioThrottle(text: string, majMin: string): { read: number; write: number } | null {
  let read: number | null = null;
  let write: number | null = null;
  for (const line of text.split('\n')) {
    const [dev, op, value] = line.trim().split(/\s+/);
    if (dev !== majMin) continue;
    if (op === 'Read') read = Number(value);
    if (op === 'Write') write = Number(value);
  }
  return read === null || write === null ? null : { read, write };
}

/** v1: the counters from io_serviced (operations) and io_service_bytes (bytes). */
export function blkioCounters(serviced: string, serviceBytes: string, majMin: string): CgroupIoCounters | null {
  const ops = parseBlkioThrottle(serviced, majMin);
  const bytes = parseBlkioThrottle(serviceBytes, majMin);
  if (!ops || !bytes) return null;
  return { reads: ops.read, writes: ops.write, readBytes: bytes.read, writeBytes: bytes.write };
}

/** v2: one device's line of io.stat ("MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. ..."), or null. */
export function parseIoStat(text: string, majMin: string): CgroupIoCounters | null {
  for (const line of text.split('\n')) {
    const [dev, ...fields] = line.trim().split(/\s+/);
    if (dev !== majMin) continue;
    const kv = Object.fromEntries(fields.map((f) => f.split('=')).map(([k, v]) => [k, Number(v)]));
    return { reads: kv.rios ?? 0, writes: kv.wios ?? 0, readBytes: kv.rbytes ?? 0, writeBytes: kv.wbytes ?? 0 };
  }
  return null;
}

/** What a memory cgroup holds: page cache (v1 counts shmem, so shared_buffers, in it; so does v2's "file") and anonymous memory. */
export interface CgroupMemory {
  cacheBytes: number;
  anonBytes: number;
}

/** memory.stat of v1 (total_cache, total_rss: this cgroup and its children) or v2 (file, anon). */
export function parseMemoryStat(text: string): CgroupMemory | null {
  const kv = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined) kv.set(key, Number(value));
  }
  if (kv.has('total_cache')) return { cacheBytes: kv.get('total_cache')!, anonBytes: kv.get('total_rss') ?? 0 };
  if (kv.has('file')) return { cacheBytes: kv.get('file')!, anonBytes: kv.get('anon') ?? 0 };
  return null;
}
