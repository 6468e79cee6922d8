/**
 * The memory limit a data set's preparation lifts, on a real memory cgroup: lifted, the host's page cache grows past
 * it; set again, the kernel reclaims down to it and enforces it (lib/memory-limit.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHostCgroup, detectCgroups, joinScript, removeHostCgroup, type HostCgroup } from '../../lib/cgroups';
import { MemoryLimit, enforcedMemoryLimit } from '../../lib/memory-limit';

const support = detectCgroups();
const maybe = support.kind ? describe : describe.skip;
const LIMIT_MIB = 64;

maybe('a host memory limit lifted for a preparation and set again (real cgroup)', () => {
  let cg: HostCgroup;
  let dir: string;

  beforeAll(() => {
    cg = createHostCgroup(support.kind!, `memlimit-${process.pid}`, LIMIT_MIB);
    dir = mkdtempSync(path.join(os.tmpdir(), 'memlimit-'));
  });

  afterAll(() => {
    if (cg) removeHostCgroup(cg);
    rmSync(dir, { recursive: true, force: true });
  });

  const usage = () => Number(readFileSync(path.join(cg.memoryDir, cg.kind === 'v1' ? 'memory.usage_in_bytes' : 'memory.current'), 'utf8'));
  /** Writes and reads back a file of `mib` MiB from inside the cgroup: its page cache is the cgroup's. */
  const cacheFile = (mib: number) => {
    const file = path.join(dir, 'data');
    const r = spawnSync('sh', ['-c', `${joinScript(cg)} && dd if=/dev/zero of="$1" bs=1M count="$2" conv=fsync status=none && cat "$1" > /dev/null`, 'sh', file, String(mib)], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  };

  it('lets the page cache grow past the limit while lifted, and reclaims down to it when set again', async () => {
    const host = { cgroup: { kind: cg.kind, cpuDir: null, memoryDir: cg.memoryDir, ioDir: null }, limits: { iops: null, throughputMiBps: null, memoryLimitMiB: LIMIT_MIB } };
    const limit = new MemoryLimit(host);
    expect(enforcedMemoryLimit(cg)).toBe(LIMIT_MIB * 2 ** 20);
    // Under the limit, a file larger than it does not stay cached.
    cacheFile(4 * LIMIT_MIB);
    expect(usage()).toBeLessThanOrEqual(LIMIT_MIB * 2 ** 20);
    await limit.withoutLimit(async () => {
      expect(enforcedMemoryLimit(cg)).toBeNull();
      cacheFile(4 * LIMIT_MIB);
      expect(usage()).toBeGreaterThan(2 * LIMIT_MIB * 2 ** 20);
    });
    expect(enforcedMemoryLimit(cg)).toBe(LIMIT_MIB * 2 ** 20);
    expect(usage()).toBeLessThanOrEqual(LIMIT_MIB * 2 ** 20);
  });
});
