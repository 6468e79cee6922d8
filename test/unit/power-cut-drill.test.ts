/**
 * The power-cut drill's pure parts: its spec (a modelled volume and the local provider only, the window of the cut,
 * fsync and synchronous_commit refused in its settings), the seeded moment of each cut, the continuation's door, and
 * the round's verdict, each fed data made to break it.
 */
import { resolvePowerCutDrill, DRILL_PRESET_NAMES } from '../../common/input/drill-spec';
import { powerCutContinuationSchema } from '../../workflows/power-cut-continuation';
import { cutMoment, concludePowerCutDrill } from '../../workflows/power-cut-steps';
import { roundEntry } from '../../workflows/power-cut-round';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { amcheckOutcome, clearLockFileLeftByCut, crashRecoveryLog, listensAt } from '../../activities/host/power-cut';
import { registerLabRoot } from '../../lib/lab-fs';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { hostIdFor } from '../../common/core/ids';
import { hostTaskQueue } from '../../common/core/names';
import type { PowerCutDrillResult, PowerCutClusterCheck } from '../../common/results/drill-result';
import type { PowerCutRecord } from '../../common/core/hosts';
import { problemsOf } from '../helpers/spec-problems';

describe('power-cut drill spec', () => {
  it.each(DRILL_PRESET_NAMES)('preset %s resolves, on a modelled gp3, local', (preset) => {
    const spec = resolvePowerCutDrill({ preset });
    expect(spec).toMatchObject({ preset, provider: 'local', storageClass: { kind: 'emulated-ebs', iops: 3000 } });
    expect(spec.powerCut.latestSeconds).toBeGreaterThanOrEqual(spec.powerCut.earliestSeconds);
  });

  it('refuses a class that cannot drop writes, another provider, a window backwards, and names each field', () => {
    expect(problemsOf(resolvePowerCutDrill, { preset: 'ci', storageClass: { kind: 'local-disk' } })).toEqual([
      expect.objectContaining({ path: 'storageClass.kind', message: expect.stringMatching(/only a modelled volume can drop the writes it had not made durable; use "emulated-ebs" or "nvme"/) }),
    ]);
    expect(() => resolvePowerCutDrill({ preset: 'ci', storageClass: { kind: 'nvme' } })).not.toThrow();
    const aws = problemsOf(resolvePowerCutDrill, { preset: 'ci', provider: 'aws', aws: { region: 'eu-west-1', subnetId: 'subnet-1', temporalAddress: 'temporal:7233' }, storageClass: { kind: 'ebs' } });
    expect(aws.map((p) => p.path)).toEqual(expect.arrayContaining(['provider', 'storageClass.kind']));
    expect(problemsOf(resolvePowerCutDrill, { preset: 'ci', powerCut: { earliestSeconds: 5, latestSeconds: 2 } })).toEqual([
      expect.objectContaining({ path: 'powerCut.latestSeconds', message: 'must be at least powerCut.earliestSeconds (5)' }),
    ]);
    const bad = problemsOf(resolvePowerCutDrill, { preset: 'ci', rounds: 0, powerCut: { seed: -1, recoveryTimeoutSeconds: 1 }, writer: { connections: 0 }, backup: {} });
    expect(bad.map((p) => p.path)).toEqual(expect.arrayContaining(['rounds', 'powerCut.seed', 'powerCut.recoveryTimeoutSeconds', 'writer.connections', 'backup']));
  });

  it.each(['fsync', 'synchronous_commit', 'full_page_writes'])('refuses %s in its settings: only a test seam turns it off', (name) => {
    expect(problemsOf(resolvePowerCutDrill, { preset: 'ci', postgres: { settings: { [name]: 'off' } } })).toEqual([
      expect.objectContaining({ path: `postgres.settings.${name}`, message: expect.stringMatching(/^refused: /) }),
    ]);
  });
});

describe('the moment of each cut', () => {
  const window = { earliestSeconds: 1, latestSeconds: 3, seed: 1, recoveryTimeoutSeconds: 60 };
  it('is the same for the same seed and round, inside the window, and moves with either', () => {
    const moments = Array.from({ length: 200 }, (_, i) => cutMoment(window, i + 1));
    expect(moments).toEqual(Array.from({ length: 200 }, (_, i) => cutMoment(window, i + 1)));
    for (const m of moments) {
      expect(m).toBeGreaterThanOrEqual(1);
      expect(m).toBeLessThanOrEqual(3);
    }
    // Spread over the window, not stuck at one end: every third of it is hit.
    for (const [lo, hi] of [[1, 1.667], [1.667, 2.333], [2.333, 3]]) expect(moments.filter((m) => m >= lo && m < hi).length).toBeGreaterThan(30);
    expect(cutMoment({ ...window, seed: 2 }, 1)).not.toBe(cutMoment(window, 1));
    expect(new Set(moments).size).toBeGreaterThan(150);
    expect(cutMoment({ ...window, earliestSeconds: 2, latestSeconds: 2 }, 7)).toBe(2);
  });
});

const RUN = 'power-cut-run';
const record = () => ({
  hostId: hostIdFor(RUN, 'node', 1),
  runId: RUN,
  provider: 'local',
  className: 'node',
  kind: 'emulated-ebs',
  taskQueue: hostTaskQueue(hostIdFor(RUN, 'node', 1)),
  emulated: true,
  limits: { iops: 3000, throughputMiBps: 125, memoryLimitMiB: 256, iopsBudget: 'shared' },
  postgres: { host: '127.0.0.1', port: 5500 },
});
const passed = (round: number) => ({ round, ok: true, lostCommits: 0 });
const continuation = (over: Record<string, unknown> = {}) => ({
  startedAt: '2026-12-03T04:00:00.000Z',
  postgresVersion: '15.14',
  records: { n1: record() },
  baseline: { amcheck: { ok: true, detail: 'no corruption found' } },
  rounds: Array.from({ length: 10 }, (_, i) => passed(i + 1)),
  nextRound: 11,
  ...over,
});

describe("the power-cut drill's continuation door", () => {
  const spec = resolvePowerCutDrill({ preset: 'ci', rounds: 20 });
  const problems = (value: unknown, s = spec) => {
    const r = powerCutContinuationSchema(RUN, s).safeParse(value);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  it('passes what the drill carries', () => {
    expect(problems(continuation())).toEqual([]);
  });
  it.each([
    ['another run\'s host', { records: { n1: { ...record(), hostId: hostIdFor('other', 'node', 1), taskQueue: hostTaskQueue(hostIdFor('other', 'node', 1)) } } }, /^records.n1.hostId/],
    ['a task queue not its own', { records: { n1: { ...record(), taskQueue: 'control' } } }, /^records.n1.taskQueue/],
    ['a host beyond loopback', { records: { n1: { ...record(), postgres: { host: '10.0.0.9', port: 5500 } } } }, /^records.n1.postgres.host: local hosts listen on 127.0.0.1 only/],
    ['a class that is not the drill\'s', { records: { n1: { ...record(), kind: 'local-disk' } } }, /^records.n1.kind/],
    ['a failed round carried on', { rounds: [...Array.from({ length: 9 }, (_, i) => passed(i + 1)), { round: 10, ok: false, lostCommits: 3 }] }, /^rounds.9.ok/],
    ['rounds out of order', { rounds: [passed(2), passed(1), ...Array.from({ length: 8 }, (_, i) => passed(i + 3))] }, /^nextRound: a run continues after every 10 rounds/],
    ['a round beyond the spec', { nextRound: 21, rounds: Array.from({ length: 20 }, (_, i) => passed(i + 1)) }, /^nextRound: beyond the drill's 20 rounds/],
    ['an unknown field', { hbaLines: ['host all all 0.0.0.0/0 trust'] }, /unrecognized key/i],
  ])('refuses %s', (_name, over, expected) => {
    expect(problems(continuation(over))).toEqual(expect.arrayContaining([expect.stringMatching(expected)]));
  });
});

const cutRecord = (dropped: number): PowerCutRecord => {
  const counters = { writes: 100, writeBytes: 409_600, flushes: 10, volatileBytes: dropped * 4096, cutPages: 0, errors: 0 };
  return { hostId: 'h', cutAt: '2026-12-03T04:00:00.000Z', backAt: '2026-12-03T04:00:01.000Z', droppedPages: dropped, droppedBytes: dropped * 4096, before: counters, after: { ...counters, cutPages: dropped, volatileBytes: 0 }, seconds: 1 };
};
const check = (over: Partial<PowerCutClusterCheck> = {}): PowerCutClusterCheck => ({
  amcheck: { exitCode: 0, ok: true, problems: 0, relations: [], detail: 'no corruption found' },
  dataChecksums: true,
  checksumFailures: 0,
  settings: { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', wal_sync_method: 'fdatasync', data_checksums: 'on' },
  ...over,
});
const written = { acknowledged: 500, failedWrites: 0, inDoubt: 4, lastAckBeforeKillAt: '2026-12-03T04:00:00.000Z', firstAckAfterAt: null, newPrimaryNode: null, outageSeconds: null, stopReason: 'no write acknowledged for 2 s (maxOutageSeconds)' };
const recovered = { started: true, seconds: 0.9, detail: '', log: crashRecoveryLog('') };
const count = (lost: number) => ({ ok: true as const, count: { acknowledged: 500, lost, lostSample: Array.from({ length: Math.min(10, lost) }, (_, i) => 1_000_000_001 + i), inDoubtPresent: 2, rowsOnPrimary: 502 - lost } });
const drill = () => ({ host: 'h', result: { baseline: check() } as unknown as PowerCutDrillResult });

describe("a power-cut round's verdict", () => {
  it('passes a round with nothing lost and clean checks', () => {
    const r = roundEntry(drill(), 1, { cutAfterSeconds: 1.5, cut: cutRecord(12), written, recovery: recovered, count: count(0), check: check() });
    expect(r).toMatchObject({ ok: true, lostCommits: 0, acknowledgedTotal: 500, inDoubtPresent: 2, countError: null });
    expect(r.error).toBeUndefined();
  });
  it('fails a loss, naming how many, the first ids and the settings', () => {
    const r = roundEntry(drill(), 1, { cutAfterSeconds: 1.5, cut: cutRecord(12), written, recovery: recovered, count: count(37), check: check({ settings: { ...check().settings!, fsync: 'off' } }) });
    expect(r.ok).toBe(false);
    expect(r.lostCommits).toBe(37);
    expect(r.error).toBe('37 acknowledged commits lost by the power cut (fsync = off, synchronous_commit = on) (first ids 1000000001, 1000000002, 1000000003, 1000000004, 1000000005, 1000000006, 1000000007, 1000000008, 1000000009, 1000000010)');
  });
  it('fails a corrupt cluster: pg_amcheck problems, checksum failures, a ledger that cannot be counted, a server that does not come back', () => {
    const corrupt = roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(3), written, recovery: recovered, count: count(0), check: check({ amcheck: amcheckOutcome(2, 'heap table "lab.public.t", block 0, offset 1:\n    line pointer redirection to item at offset 99 exceeds maximum offset 3\n', ''), checksumFailures: 2 }) });
    expect(corrupt.ok).toBe(false);
    expect(corrupt.error).toMatch(/corrupt cluster after the power cut \(fsync = on, synchronous_commit = on\): pg_amcheck: 1 problems in lab.public.t/);
    expect(corrupt.error).toMatch(/2 pages failed their checksums/);
    const uncounted = roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(3), written, recovery: recovered, count: { ok: false, error: 'relation "storage_lab.failover_ledger" does not exist' }, check: check() });
    expect(uncounted).toMatchObject({ ok: false, lostCommits: null, countError: 'relation "storage_lab.failover_ledger" does not exist' });
    const log = '2026-12-03 04:00:01.000 UTC [9] LOG:  starting PostgreSQL 15.14\n2026-12-03 04:00:01.100 UTC [9] PANIC:  could not locate a valid checkpoint record\n';
    const down = roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(3), written, recovery: { started: false, seconds: 2, detail: 'pg_ctl: could not start server', log: crashRecoveryLog(log) }, count: null, check: null });
    expect(down).toMatchObject({ ok: false, lostCommits: null, check: null, recovery: { started: false, fatal: 'could not locate a valid checkpoint record' } });
    expect(down.error).toBe(
      'PostgreSQL did not come back from the power cut (fsync = on, synchronous_commit = on): could not locate a valid checkpoint record (pg_ctl: could not start server); the server log ends: pg_ctl: could not start server',
    );
  });
  it("names a count refused for the lab role's password as committed changes lost", () => {
    const refused = { ok: false as const, error: 'password authentication failed for user "lab"' };
    const r = roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(14), written, recovery: recovered, count: refused, check: check() });
    expect(r).toMatchObject({ ok: false, lostCommits: null, countError: refused.error });
    expect(r.error).toBe(
      'the acknowledged commits could not be counted after the cut (fsync = on, synchronous_commit = on): password authentication failed for user "lab" (the lab role\'s password, committed before the first cut, did not survive it: committed changes were lost)',
    );
    const gone = roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(14), written, recovery: recovered, count: { ok: false, error: 'relation "storage_lab.failover_ledger" does not exist' }, check: check() });
    expect(gone.error).toBe('the acknowledged commits could not be counted after the cut (fsync = on, synchronous_commit = on): relation "storage_lab.failover_ledger" does not exist');
  });
  it('fails a round whose writer had no acknowledged commit before the cut', () => {
    const r = roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(0), written: { ...written, acknowledged: 0, lastAckBeforeKillAt: null }, recovery: recovered, count: count(0), check: check() });
    expect(r.error).toMatch(/no acknowledged commit before the cut; raise powerCut.earliestSeconds/);
  });
});

describe('reading a crash recovery from the server log', () => {
  it('takes the last start only, and whether the server knew it had crashed', () => {
    const log = [
      '2026-12-03 04:00:00.000 UTC [1] LOG:  starting PostgreSQL 15.14 on x86_64-pc-linux-gnu',
      '2026-12-03 04:00:00.200 UTC [1] LOG:  database system is ready to accept connections',
      '2026-12-03 04:00:05.000 UTC [7] LOG:  starting PostgreSQL 15.14 on x86_64-pc-linux-gnu',
      '2026-12-03 04:00:05.010 UTC [8] LOG:  database system was interrupted; last known up at 2026-12-03 04:00:00 UTC',
      '2026-12-03 04:00:05.015 UTC [9] FATAL:  the database system is starting up',
      '2026-12-03 04:00:05.020 UTC [8] LOG:  database system was not properly shut down; automatic recovery in progress',
      '2026-12-03 04:00:05.030 UTC [8] LOG:  redo starts at 0/1A2B3C8',
      '2026-12-03 04:00:05.180 UTC [8] LOG:  redo done at 0/1BBB820 system usage: CPU: user: 0.01 s',
      '2026-12-03 04:00:05.300 UTC [7] LOG:  database system is ready to accept connections',
    ].join('\n');
    expect(crashRecoveryLog(log)).toMatchObject({ crashRecovery: true, redoDoneLsn: '0/1BBB820', redoSeconds: 0.15, readyAt: '2026-12-03T04:00:05.300Z', fatal: null, startedAt: '2026-12-03T04:00:05.000Z' });
    // A clean start after it: no crash recovery.
    expect(crashRecoveryLog(log.split('\n').slice(0, 2).join('\n'))).toMatchObject({ crashRecovery: false, redoSeconds: null });
  });

  // A real drill's server log (PostgreSQL 15): the start before the cut, the cut's I/O errors, then the start after it,
  // refused at once: postgresql.conf's last line, appended without a flush, came back as zeros. That start logs no
  // "starting PostgreSQL" (and in GMT: the log_timezone it could not read), so its FATAL is found only in this start's
  // own lines (recoverAfterPowerCut reads the log from where it stood before pg_ctl start).
  const torn = readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'postgres-15', 'power-cut-torn-config.txt'), 'utf8');
  it("names the FATAL of a start refused before it logged 'starting PostgreSQL' (a configuration file the cut tore)", () => {
    const thisStart = torn.slice(torn.indexOf('2026-12-03 07:52:16.564 GMT'));
    expect(crashRecoveryLog(thisStart)).toMatchObject({
      startedAt: null,
      readyAt: null,
      crashRecovery: false,
      fatal: { message: expect.stringMatching(/^configuration file ".*\/pgdata\/postgresql\.conf" contains errors$/) },
    });
    // The whole log would read as the start before the cut, ready and without a FATAL: what the drill reported before.
    expect(crashRecoveryLog(torn)).toMatchObject({ readyAt: '2026-12-03T07:52:00.760Z', fatal: null });
  });
});

describe('a postmaster.pid the cut left', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'power-cut-lock-'));
    registerLabRoot(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const pidFile = () => path.join(dir, 'postmaster.pid');

  it('removes one that names no process (empty, or zeros: never flushed), saying what it was', () => {
    writeFileSync(pidFile(), '');
    expect(clearLockFileLeftByCut(dir)).toBe('postmaster.pid came back empty: removed before the start (PostgreSQL refuses to start on it)');
    expect(existsSync(pidFile())).toBe(false);
    writeFileSync(pidFile(), Buffer.alloc(96));
    expect(clearLockFileLeftByCut(dir)).toMatch(/^postmaster.pid came back 96 bytes of zeros: removed/);
    expect(existsSync(pidFile())).toBe(false);
  });
  it('leaves one that names a PID to pg_ctl and the server, and says nothing of none', () => {
    const real = readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'postgres-15', 'postmaster-pid.txt'), 'utf8');
    writeFileSync(pidFile(), real);
    expect(clearLockFileLeftByCut(dir)).toBeNull();
    expect(readFileSync(pidFile(), 'utf8')).toBe(real);
    rmSync(pidFile());
    expect(clearLockFileLeftByCut(dir)).toBeNull();
  });
});

describe('where a started server listens (postmaster.pid)', () => {
  // Written by a real PostgreSQL 15 started with the lab's settings (port and socket folder of its own).
  const pid = readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'postgres-15', 'postmaster-pid.txt'), 'utf8');
  it("reads the port and the socket folder the server chose", () => {
    expect(listensAt(pid)).toEqual({ port: 35093, socketDir: '/tmp/storage-lab-suite-Q2rVtn/power-cut-Hk2mLp/hosts/x3fd9kq2wz7mbn4c/run' });
  });
  it("reads a server that came back without the lab's settings: PostgreSQL's defaults", () => {
    const lines = pid.split('\n');
    lines[3] = '5432';
    lines[4] = '/var/run/postgresql';
    expect(listensAt(lines.join('\n'))).toEqual({ port: 5432, socketDir: '/var/run/postgresql' });
  });
  it('says nothing of a file that is not there, or names no port yet', () => {
    expect(listensAt(null)).toBeNull();
    expect(listensAt(pid.split('\n').slice(0, 3).join('\n'))).toBeNull();
    expect(listensAt(['1', '/d', '1', '', '', ''].join('\n'))).toBeNull();
  });
});

describe("the drill's summary", () => {
  it('takes the largest count, counts rounds not recovered and not clean, and sums the device\'s drops', () => {
    const r = {
      kind: 'power-cut-drill',
      status: 'failed',
      baseline: check(),
      rounds: [
        roundEntry(drill(), 1, { cutAfterSeconds: 1, cut: cutRecord(5), written, recovery: recovered, count: count(0), check: check() }),
        roundEntry(drill(), 2, { cutAfterSeconds: 2, cut: cutRecord(7), written, recovery: { ...recovered, seconds: 2.1 }, count: count(4), check: check({ amcheck: amcheckOutcome(1, '', 'pg_amcheck: error: connection refused') }) }),
      ],
      summary: {},
      errors: [],
    } as unknown as PowerCutDrillResult;
    concludePowerCutDrill(r, 'round 2: 4 acknowledged commits lost');
    expect(r.summary).toMatchObject({ rounds: 2, lostCommits: 4, roundsWithLoss: 1, notRecovered: 0, amcheckFailedRounds: 1, amcheckProblems: 0, droppedPages: 12, droppedBytes: 12 * 4096, recoverySecondsMedian: 1.5, recoverySecondsMax: 2.1 });
    expect(r.verdict).toMatch(/^failed: round 2: 4 acknowledged commits lost \(2 power cuts \(fsync = on, synchronous_commit = on, wal_sync_method = fdatasync\): 4 acknowledged commits lost, 0 not recovered, pg_amcheck not clean in 1/);
  });
});
