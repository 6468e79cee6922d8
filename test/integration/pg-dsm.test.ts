/**
 * A real server killed outright leaves its dynamic shared memory in /dev/shm; the lab removes exactly the segments
 * its processes mapped (lib/pg-dsm.ts, used by the local provider's kill for teardown and power cuts), and nothing
 * that is not the file it read.
 */
import { existsSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startBenchHost, type BenchHost } from '../../bench/bench-host';
import { mappedSegments, removeSegments, type MappedSegment } from '../../lib/pg-dsm';
import { childrenOf } from '../../lib/postgres-probe';
import { withConnection } from '../../lib/pg';

describe('a killed server\'s dynamic shared memory (integration)', () => {
  let host: BenchHost;
  const planted = `/dev/shm/PostgreSQL.${4_000_000_000 + (process.pid % 100_000)}`;
  // What the test read, removed after it whatever its outcome: a failed case must not leave the leak it shows.
  const read: MappedSegment[] = [];
  beforeAll(async () => {
    host = await startBenchHost('dsm', { shared_buffers: '32MB', max_connections: '20' });
  });
  afterAll(async () => {
    rmSync(planted, { force: true });
    removeSegments(read);
    await host?.close();
  });

  it('leaves its segments behind after a SIGKILL; they are removed, and only those', async () => {
    // A parallel query makes a segment of its own beside the postmaster's control segment.
    await withConnection(host.deps.config, (c) => c.query("SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SELECT count(*) FROM pg_catalog.pg_class"));
    const postmaster = Number(readFileSync(path.join(host.deps.config.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const pids = [postmaster, ...childrenOf(postmaster)];
    const segments = mappedSegments(pids);
    read.push(...segments);
    expect(segments.length).toBeGreaterThanOrEqual(1);
    for (const s of segments) expect(s.file).toMatch(/^\/dev\/shm\/PostgreSQL\.\d+$/);
    process.kill(postmaster, 'SIGSTOP');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Exited meanwhile (a parallel worker ending its query).
      }
    }
    await new Promise((r) => setTimeout(r, 300));
    // The kill leaves them: this is the leak.
    for (const s of segments) expect(existsSync(s.file)).toBe(true);
    // A file of a segment's name that is not the one read (another inode) stays.
    writeFileSync(planted, 'not a segment the server mapped');
    const stranger = { file: planted, ino: lstatSync(planted).ino + 1, uid: lstatSync(planted).uid };
    expect(removeSegments([...segments, stranger]).sort()).toEqual(segments.map((s) => s.file).sort());
    for (const s of segments) expect(existsSync(s.file)).toBe(false);
    expect(existsSync(planted)).toBe(true);
  });
});
