/** Parsers of the measured phases, on output captured from real tools (PostgreSQL 15, Linux 6.18). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkpointDeltas, databaseDeltas, ioDeltas, numericDeltas, type StatSnapshot } from '../../lib/parsers/pg-stats';
import { diskRates, parseDiskstats, parsePidStatCpuSeconds, parseProcStat } from '../../lib/parsers/proc';
import { parseVacuumVerbose } from '../../activities/host/phases/vacuum';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const fixtures = path.join(PROJECT_ROOT, 'test', 'fixtures');
const read = (...p: string[]) => readFileSync(path.join(fixtures, ...p), 'utf8');

describe('VACUUM (VERBOSE) parser', () => {
  it('reads every figure of a report with one index pass', () => {
    const [r, ...rest] = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose.txt'));
    expect(rest).toEqual([]);
    expect(r).toEqual({
      relation: 'bench.public.pgbench_accounts',
      indexScans: 1,
      pages: { removed: 0, remain: 4263, scanned: 1969 },
      tuples: { removed: 60000, remain: 199987, deadNotYetRemovable: 0 },
      missedDead: { tuples: 0, pages: 0 },
      deadItems: { pages: 984, identifiersRemoved: 60000 },
      indexes: [{ name: 'pgbench_accounts_pkey', pages: 716, newlyDeleted: 0, currentlyDeleted: 0, reusable: 0 }],
      ioTimingsMs: { read: 0.543, write: 0 },
      avgReadMBps: 33.799,
      avgWriteMBps: 0,
      buffers: { hits: 5311, misses: 382, dirtied: 0 },
      wal: { records: 4267, fullPageImages: 0, bytes: 757888 },
      cpu: { userSeconds: 0.04, systemSeconds: 0, elapsedSeconds: 0.08 },
    });
  });

  it('reads multi-pass, no-op and multi-table reports', () => {
    const multi = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose-multipass.txt'))[0];
    expect(multi.indexScans).toBe(2);
    expect(multi.tuples.removed).toBe(200000);
    expect(multi.avgWriteMBps).toBe(106.346);
    const idle = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose-nothing-to-do.txt'))[0];
    expect(idle.deadItems).toEqual({ pages: 0, identifiersRemoved: 0 });
    expect(idle.indexes).toEqual([]);
    const deletes = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose-deletes.txt'))[0];
    expect(deletes.indexes[0].newlyDeleted).toBe(271);
    const two = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose-two-tables.txt'));
    expect(two.map((r) => r.relation)).toEqual(['bench.public.pgbench_tellers', 'bench.public.pgbench_branches']);
    expect(two[1].tuples.remain).toBe(2);
  });

  it('reads PostgreSQL 17 reports (a "frozen" line added; O_DIRECT data files, so the reads are misses)', () => {
    const [r] = parseVacuumVerbose(read('postgres-17', 'vacuum-verbose.txt'));
    expect(r).toEqual({
      relation: 'bench.public.pgbench_accounts',
      indexScans: 1,
      pages: { removed: 0, remain: 9222, scanned: 9222 },
      tuples: { removed: 62500, remain: 500000, deadNotYetRemovable: 0 },
      missedDead: { tuples: 0, pages: 0 },
      deadItems: { pages: 950, identifiersRemoved: 57850 },
      indexes: [{ name: 'pgbench_accounts_pkey', pages: 1374, newlyDeleted: 0, currentlyDeleted: 0, reusable: 0 }],
      ioTimingsMs: { read: 961.072, write: 1029.342 },
      avgReadMBps: 39.69,
      avgWriteMBps: 39.398,
      buffers: { hits: 9255, misses: 11556, dirtied: 11471 },
      wal: { records: 17036, fullPageImages: 6867, bytes: 47650865 },
      cpu: { userSeconds: 0.12, systemSeconds: 0.58, elapsedSeconds: 2.27 },
    });
    const multi = parseVacuumVerbose(read('postgres-17', 'vacuum-verbose-multipass.txt'))[0];
    expect(multi.indexScans).toBe(227);
    expect(multi.deadItems).toEqual({ pages: 8276, identifiersRemoved: 250000 });
    const idle = parseVacuumVerbose(read('postgres-17', 'vacuum-verbose-nothing-to-do.txt'))[0];
    expect(idle.deadItems).toEqual({ pages: 0, identifiersRemoved: 0 });
    expect(idle.pages.scanned).toBe(1);
  });

  it('reads what VACUUM left dead: row versions an older snapshot sees, and tuples on a page another backend pinned', () => {
    // Captured on PostgreSQL 15: 10,000 rows updated while a REPEATABLE READ transaction held its snapshot ...
    const [held] = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose-snapshot-held.txt'));
    expect(held.tuples).toEqual({ removed: 0, remain: 29945, deadNotYetRemovable: 10000 });
    expect(held.missedDead).toEqual({ tuples: 0, pages: 0 });
    // ... and 199 rows of the first page updated while a cursor (FETCH 1 of a TID scan) kept that page pinned.
    const [pinned] = parseVacuumVerbose(read('postgres-15', 'vacuum-verbose-pinned-page.txt'));
    expect(pinned.tuples).toEqual({ removed: 0, remain: 20088, deadNotYetRemovable: 0 });
    expect(pinned.missedDead).toEqual({ tuples: 199, pages: 1 });
  });

  it('reads notices without the INFO prefix, and names a missing line', () => {
    const text = read('postgres-15', 'vacuum-verbose.txt').replace(/^INFO: {2}/gm, '');
    expect(parseVacuumVerbose(text)[0].pages.scanned).toBe(1969);
    const broken = read('postgres-15', 'vacuum-verbose.txt').replace(/^WAL usage.*$/m, '');
    expect(() => parseVacuumVerbose(broken)).toThrow(/no "WAL usage" line/);
    expect(parseVacuumVerbose('VACUUM')).toEqual([]);
  });
});

describe('/proc parsers', () => {
  it('reads a device from /proc/diskstats and turns two readings into rates', () => {
    const before = parseDiskstats(read('linux-6.18', 'diskstats-1.txt'), 'vda')!;
    const after = parseDiskstats(read('linux-6.18', 'diskstats-2.txt'), 'vda')!;
    expect(before).toEqual({ reads: 107622, readSectors: 7259822, readMs: 24723, writes: 716855, writeSectors: 35700380, writeMs: 233427, ioMs: 38508 });
    const r = diskRates(before, after, 2);
    expect(r.readIops).toBe(1);
    expect(r.writeIops).toBe(759);
    expect(r.writeMBps).toBeCloseTo(((35844036 - 35700380) * 512) / 2 ** 20 / 2, 6);
    expect(r.readLatencyMs).toBe(0);
    expect(r.writeLatencyMs).toBeCloseTo(88 / 1518, 6);
    expect(r.utilization).toBeCloseTo(36 / 2000, 6);
    expect(parseDiskstats(read('linux-6.18', 'diskstats-1.txt'), 'nvme9n9')).toBeNull();
    expect(diskRates(after, after, 1).readLatencyMs).toBeNull();
  });

  it('reads busy CPU seconds from /proc/stat', () => {
    const a = parseProcStat(read('linux-6.18', 'stat-1.txt'));
    const b = parseProcStat(read('linux-6.18', 'stat-2.txt'));
    expect(a.busySeconds).toBeCloseTo((127477 + 0 + 18475 + 0 + 1077 + 320) / 100, 6);
    expect(a.idleSeconds).toBeCloseTo(6061.63, 6);
    expect(b.busySeconds).toBeGreaterThanOrEqual(a.busySeconds);
    expect(() => parseProcStat('intr 1 2 3')).toThrow(/no aggregate "cpu" line/);
  });

  it('reads a process\'s CPU seconds from /proc/<pid>/stat, whatever its name holds', () => {
    const text = read('linux-6.18', 'pid-stat.txt');
    expect(parsePidStatCpuSeconds(text)).toBeCloseTo((11 + 18) / 100, 9);
    expect(parsePidStatCpuSeconds(text.replace('(postgres)', '(postgres: lab bench [local] UPDATE)'))).toBeCloseTo(0.29, 9);
    expect(() => parsePidStatCpuSeconds('1 (x) S')).toThrow(/utime/);
  });
});

describe('pg_stat views', () => {
  const before = JSON.parse(read('postgres-15', 'pg-stats-before.json')) as StatSnapshot;
  const after = JSON.parse(read('postgres-15', 'pg-stats-after.json')) as StatSnapshot;

  it('turns pg_stat_database readings into deltas and ms per block read', () => {
    const d = databaseDeltas(before.db, after.db);
    expect(d.xactCommit).toBe(after.db.xact_commit as number - (before.db.xact_commit as number));
    expect(d.xactCommit).toBeGreaterThan(0);
    expect(d.blkReadTimeMs).toBeCloseTo((after.db.blk_read_time as number) - (before.db.blk_read_time as number), 6);
    expect(d.msPerBlockRead).toBe(d.blksRead > 0 ? d.blkReadTimeMs / d.blksRead : null);
    expect(d.hitRatio).toBeGreaterThan(0.5);
  });

  it('counts checkpoints from pg_stat_bgwriter on 15, and WAL column by column', () => {
    const c = checkpointDeltas({ ...before, checkpointer: null, io: null }, { ...after, checkpointer: null, io: null })!;
    expect(c.requested).toBe(1);
    expect(c.timed).toBe(0);
    expect(c.buffersWritten).toBe((after.bgwriter!.buffers_checkpoint as number) - (before.bgwriter!.buffers_checkpoint as number));
    const wal = numericDeltas(before.wal!, after.wal!);
    expect(wal.wal_records).toBeGreaterThan(0);
    expect(wal.wal_bytes).toBeGreaterThan(0);
    expect(wal).not.toHaveProperty('stats_reset');
  });

  it('reads PostgreSQL 17\'s pg_stat_checkpointer and pg_stat_io as the sampler captures them', () => {
    const b17 = JSON.parse(read('postgres-17', 'pg-stats-before.json')) as StatSnapshot;
    const a17 = JSON.parse(read('postgres-17', 'pg-stats-after.json')) as StatSnapshot;
    const c = checkpointDeltas(b17, a17)!;
    // One CHECKPOINT between the snapshots, counted by pg_stat_checkpointer (pg_stat_bgwriter has no such column on 17).
    expect(c.requested).toBe(1);
    expect(c.buffersWritten).toBe((a17.checkpointer!.buffers_written as number) - (b17.checkpointer!.buffers_written as number));
    expect(c.buffersWritten).toBeGreaterThan(0);
    const io = ioDeltas(b17.io, a17.io)!;
    expect(io['client backend'].reads).toBeGreaterThan(0);
    expect(io.checkpointer.writes).toBe(c.buffersWritten);
    expect(databaseDeltas(b17.db, a17.db).xactCommit).toBeGreaterThan(5000);
  });

  it('prefers pg_stat_checkpointer (17+) and sums pg_stat_io (16+) per backend type', () => {
    const ck = (n: number) => ({ num_timed: n, num_requested: 2 * n, write_time: 10 * n, sync_time: n, buffers_written: 100 * n });
    const c = checkpointDeltas({ ...before, checkpointer: ck(1), io: null }, { ...after, checkpointer: ck(3), io: null })!;
    expect(c).toEqual({ timed: 2, requested: 4, writeTimeMs: 20, syncTimeMs: 2, buffersWritten: 200 });
    // Columns as documented for PostgreSQL 16's pg_stat_io (not installed here, so not captured).
    const row = (backend_type: string, context: string, reads: number) => ({ backend_type, object: 'relation', context, reads, read_time: reads / 10, writes: 1, write_time: 0.5, extends: 0, fsyncs: null });
    const io = ioDeltas(
      [row('client backend', 'normal', 10), row('client backend', 'bulkread', 5)],
      [row('client backend', 'normal', 110), row('client backend', 'bulkread', 7), row('checkpointer', 'normal', 0)],
    )!;
    expect(io['client backend'].reads).toBe(102);
    expect(io['client backend'].readTimeMs).toBeCloseTo(10.2, 6);
    expect(io.checkpointer.writes).toBe(1);
    expect(ioDeltas(null, null)).toBeNull();
  });
});
