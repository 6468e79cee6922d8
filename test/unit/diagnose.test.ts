/**
 * Diagnose's pure parts: the verdict from evidence (each verdict from data made to show it), the DSN's password
 * never kept or echoed, the input rules, and the parsers of pg_test_fsync and the cgroup files on captured output.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { blkioCounters, parseIoStat, parseMemoryStat } from '../../activities/parsers/cgroup';
import { parsePgTestFsync } from '../../activities/parsers/pg-test-fsync';
import {
  classify,
  dsnHasPassword,
  parseDiagnoseInput,
  redactDsn,
  resolveDiagnoseInput,
  verdictEvidence,
  verdictGroupOf,
  verdictLine,
} from '../../common/diagnose';
import type { Diagnostics } from '../../common/diagnostics';
import { PROJECT_ROOT } from '../../infra/lab-paths';

const fixtures = path.join(PROJECT_ROOT, 'test', 'fixtures');
const read = (...p: string[]) => readFileSync(path.join(fixtures, ...p), 'utf8');

/** What the sampler saw: `samples` samples with these active-backend counts per event, and idle-in-transaction ones. */
function sampled(waitEvents: Record<string, number>, opts: { samples?: number; idleInTransaction?: number; cores?: number } = {}) {
  const samples = opts.samples ?? 100;
  const active = Object.values(waitEvents).reduce((s, n) => s + n, 0);
  const d: Pick<Diagnostics, 'waitEvents' | 'samples' | 'avgActiveSessions' | 'database' | 'cpu' | 'sessions'> = {
    waitEvents,
    samples,
    avgActiveSessions: samples ? active / samples : 0,
    database: { xactCommit: 0, xactRollback: 0, blksRead: 1000, blksHit: 9000, blkReadTimeMs: 780, blkWriteTimeMs: 0, tupUpdated: 0, tempBytes: 0, deadlocks: 0, msPerBlockRead: 0.78, hitRatio: 0.9 },
    cpu: opts.cores ? { source: 'proc', seconds: 10, coresBusy: 1.5, cores: opts.cores } : null,
    sessions: { avgIdleInTransaction: opts.idleInTransaction ?? 0, distinctBackends: 8 },
  };
  return d;
}
const seen = (...args: Parameters<typeof sampled>) => verdictEvidence(sampled(...args), { trackIoTiming: true, fsyncMs: 1.39 });

describe('the diagnose verdict', () => {
  it('groups wait events: I/O and WAL waits are storage, locks and LWLocks lock, Client waits the client', () => {
    expect(verdictGroupOf('IO:DataFileRead')).toBe('storage');
    expect(verdictGroupOf('IO:WALSync')).toBe('storage');
    expect(verdictGroupOf('LWLock:WALWrite')).toBe('storage'); // waiting on another backend's WAL flush
    expect(verdictGroupOf('LWLock:BufferIO')).toBe('storage'); // waiting on another backend's read
    expect(verdictGroupOf('IO:DataFileWrite')).toBe('storage');
    expect(verdictGroupOf('Lock:transactionid')).toBe('lock');
    expect(verdictGroupOf('LWLock:LockManager')).toBe('lock');
    expect(verdictGroupOf('CPU')).toBe('cpu');
    expect(verdictGroupOf('Client:ClientRead')).toBe('client');
    expect(verdictGroupOf('IPC:SyncRep')).toBe('other');
  });

  it('storage-bound: page reads and WAL flushes take most of the time', () => {
    const e = seen({ 'IO:DataFileRead': 300, 'LWLock:WALWrite': 150, CPU: 100, 'Lock:transactionid': 20 });
    expect(classify(e).verdict).toBe('storage-bound');
    expect(e.shares.storage).toBeCloseTo(450 / 570, 12);
    expect(verdictLine('storage-bound', e)).toMatch(/^verdict: storage-bound \(storage 79 %.*0\.780 ms per block read; fsync 1\.39 ms/);
  });

  it('cpu-bound: active with no wait event', () => {
    expect(classify(seen({ CPU: 500, 'IO:DataFileRead': 100, 'LWLock:WALWrite': 50 })).verdict).toBe('cpu-bound');
  });

  it('lock-bound: row locks and lock-manager waits', () => {
    expect(classify(seen({ 'Lock:transactionid': 300, 'Lock:tuple': 100, CPU: 150, 'IO:DataFileRead': 100 })).verdict).toBe('lock-bound');
  });

  it('client-bound: sessions sit idle in a transaction, waiting for their application', () => {
    const e = seen({ CPU: 100, 'IO:DataFileRead': 50 }, { idleInTransaction: 4 }); // 400 idle-in-transaction samples
    expect(classify(e).verdict).toBe('client-bound');
    expect(e.topEvents[0].event).toBe('Client:IdleInTransaction');
  });

  it('idle: no samples, or fewer than 0.1 sessions in a transaction on average', () => {
    expect(classify(seen({})).verdict).toBe('idle');
    expect(classify(seen({ 'IO:DataFileRead': 5 }, { samples: 100 })).verdict).toBe('idle'); // 0.05 sessions
    expect(classify(seen({ 'IO:DataFileRead': 5 }, { samples: 0 })).verdict).toBe('idle');
    expect(classify(seen({ 'IO:DataFileRead': 20 }, { samples: 100 })).verdict).toBe('storage-bound'); // 0.2 sessions
  });

  it('says how to get ms per block read when track_io_timing is off', () => {
    const e = verdictEvidence(sampled({ CPU: 100 }, { cores: 2 }), { trackIoTiming: false, fsyncMs: null });
    expect(e.msPerBlockRead).toBeNull();
    expect(verdictLine('cpu-bound', e)).toMatch(/ms per block read unknown \(track_io_timing off\).*CPU 1\.50 of 2 cores busy/);
  });
});

describe('DSNs and the diagnose input', () => {
  it('finds a password in a URL, a query parameter or key=value form', () => {
    expect(dsnHasPassword('postgresql://monitor:s3cret@db.example:5432/app')).toBe(true);
    expect(dsnHasPassword('postgres://monitor@db.example/app?password=s3cret&sslmode=require')).toBe(true);
    expect(dsnHasPassword('host=db.example user=monitor password=s3cret dbname=app')).toBe(true);
    expect(dsnHasPassword('postgresql://monitor@db.example:5432/app?sslmode=require')).toBe(false);
    expect(dsnHasPassword('postgresql://db.example/app')).toBe(false);
  });

  it('redacts every form, keeping the rest', () => {
    expect(redactDsn('postgresql://monitor:s3cret@db.example:5432/app')).toBe('postgresql://monitor:***@db.example:5432/app');
    expect(redactDsn('postgres://m@db/app?sslmode=require&password=s3cret')).toBe('postgres://m@db/app?sslmode=require&password=***');
    expect(redactDsn("host=db password='s 3cret' user=m")).toBe('host=db password=*** user=m');
  });

  it('a workflow refuses a password in the DSN and never repeats it; the CLI may take one', () => {
    const dsn = 'postgresql://monitor:s3cret@db.example:5432/app';
    const refused = parseDiagnoseInput({ dsn }, { allowPassword: false });
    expect(refused.input).toBeNull();
    expect(JSON.stringify(refused.problems)).not.toContain('s3cret');
    expect(refused.problems[0].message).toMatch(/PGPASSWORD|passwordEnv/);
    expect(() => resolveDiagnoseInput({ dsn })).toThrow(/holds a password/);
    expect(parseDiagnoseInput({ dsn }, { allowPassword: true }).input?.dsn).toBe(dsn);
  });

  it('defaults and bounds: 60 s at 20 samples a second; bad fields named, the DSN never echoed', () => {
    expect(resolveDiagnoseInput({ dsn: 'postgresql://m@db/app' })).toEqual({ dsn: 'postgresql://m@db/app', seconds: 60, intervalMs: 50, fsyncProbe: true });
    const { problems } = parseDiagnoseInput({ dsn: 'mysql://x:pw@db', seconds: 0, intervalMs: 5000, extra: 1 }, { allowPassword: false });
    const paths = problems.map((p) => p.path).sort();
    expect(paths).toEqual(['dsn', 'extra', 'intervalMs', 'seconds']);
    expect(JSON.stringify(problems)).not.toContain('pw@');
  });
});

describe('parsers on captured output', () => {
  it('pg_test_fsync (PostgreSQL 15): every method of one and two 8 kB writes; n/a where unsupported', () => {
    const r = parsePgTestFsync(read('postgres-15', 'pg_test_fsync.txt'));
    expect(r.oneWrite.fdatasync).toEqual({ opsPerSecond: 5364.961, usecsPerOp: 186 });
    expect(r.oneWrite.open_datasync).toEqual({ opsPerSecond: 6728.146, usecsPerOp: 149 });
    expect(r.oneWrite.fsync_writethrough).toBeNull();
    expect(Object.keys(r.oneWrite)).toEqual(['open_datasync', 'fdatasync', 'fsync', 'fsync_writethrough', 'open_sync']);
    expect(r.twoWrites.fdatasync).toEqual({ opsPerSecond: 4373.477, usecsPerOp: 229 });
    expect(() => parsePgTestFsync('pgbench (15.18)\nnumber of transactions: 5\n')).toThrow(/not a pg_test_fsync report/);
  });

  it('cgroup v1 blkio.throttle counters of one device (Linux 6.18)', () => {
    const c = blkioCounters(read('linux-6.18', 'blkio.throttle.io_serviced.txt'), read('linux-6.18', 'blkio.throttle.io_service_bytes.txt'), '254:0');
    expect(c).toEqual({ reads: 469, writes: 901, readBytes: expect.any(Number), writeBytes: expect.any(Number) });
    expect(c!.readBytes).toBeGreaterThan(24 * 2 ** 20); // the 24 MiB file read back
    expect(blkioCounters(read('linux-6.18', 'blkio.throttle.io_serviced.txt'), read('linux-6.18', 'blkio.throttle.io_service_bytes.txt'), '7:3')).toBeNull();
  });

  it('cgroup v2 io.stat (the kernel documentation\'s example)', () => {
    expect(parseIoStat(read('linux-docs', 'io.stat-v2.txt'), '8:0')).toEqual({ reads: 8950, writes: 1252, readBytes: 90430464, writeBytes: 299008000 });
    expect(parseIoStat(read('linux-docs', 'io.stat-v2.txt'), '8:32')).toBeNull();
  });

  it('memory.stat: v1 total_cache and total_rss (Linux 6.18)', () => {
    const m = parseMemoryStat(read('linux-6.18', 'memory.stat-v1.txt'));
    expect(m).toEqual({ cacheBytes: 27340800, anonBytes: 0 });
    expect(parseMemoryStat('anon 1048576\nfile 2097152\nshmem 0\n')).toEqual({ cacheBytes: 2097152, anonBytes: 1048576 });
    expect(parseMemoryStat('nothing 1\n')).toBeNull();
  });
});
