/**
 * Diagnose's pure parts: the verdict from evidence (each verdict from data made to show it), the DSN rules (a table
 * of hostile DSNs, each refused; allowed ones read as pg reads them), passwordEnv by origin, the DSN's password never
 * kept or echoed, the connection built from the parts, and the parsers of pg_test_fsync and the cgroup files on
 * captured output.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { blkioCounters, parseIoStat, parseMemoryStat } from '../../lib/parsers/cgroup';
import { parsePgTestFsync } from '../../lib/parsers/pg-test-fsync';
import { parse as pgParse } from 'pg-connection-string';
import { clientConfig } from '../../lib/diagnose/connect';
import { classify, verdictEvidence, verdictGroupOf, verdictLine } from '../../common/results/diagnose-capture';
import { parseDiagnoseInput, parseDsn, redactDsn, resolveDiagnoseInput } from '../../common/input/diagnose';
import type { SamplerReadings } from '../../common/results/sampler-readings';
import { InvalidSpecError } from '../../common/input/spec';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const fixtures = path.join(PROJECT_ROOT, 'test', 'fixtures');
const read = (...p: string[]) => readFileSync(path.join(fixtures, ...p), 'utf8');

/** What the sampler saw: `samples` samples with these active-backend counts per event, and idle-in-transaction ones. */
function sampled(waitEvents: Record<string, number>, opts: { samples?: number; idleInTransaction?: number; cores?: number } = {}) {
  const samples = opts.samples ?? 100;
  const active = Object.values(waitEvents).reduce((s, n) => s + n, 0);
  const d: Pick<SamplerReadings, 'waitEvents' | 'samples' | 'avgActiveSessions' | 'database' | 'cpu' | 'sessions'> = {
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
  const SECRET = 's3cret-never-echoed';
  /** A DSN a workflow's input could carry to make the control worker do something else than read a server. */
  const HOSTILE: [string, string, RegExp][] = [
    ['options override', 'postgresql://monitor@db.example/app?options=-c%20default_transaction_read_only%3Doff', /"options" is not allowed.*allowed: sslmode, application_name, connect_timeout/],
    ['host= a lab host\'s socket', 'postgresql://monitor@db.example/app?host=/var/lib/storage-lab/hosts-x/h1/run', /"host" is not allowed/],
    ['percent-encoded socket as the host', 'postgresql://monitor@%2Fvar%2Flib%2Fstorage-lab%2Fhosts-x%2Fh1%2Frun/app', /Unix-socket directory/],
    ['percent-encoded socket, lower case', 'postgresql://monitor@%2fvar%2frun%2fpostgresql/app', /Unix-socket directory/],
    ['hostaddr', 'postgresql://monitor@db.example/app?hostaddr=127.0.0.1', /"hostaddr" is not allowed/],
    ['port override', 'postgresql://monitor@db.example:5432/app?port=5433', /"port" is not allowed/],
    ['user override', 'postgresql://monitor@db.example/app?user=postgres', /"user" is not allowed/],
    ['dbname override', 'postgresql://monitor@db.example/app?dbname=postgres', /"dbname" is not allowed/],
    ['sslrootcert=/etc/shadow', 'postgresql://monitor@db.example/app?sslrootcert=/etc/shadow', /"sslrootcert" is not allowed/],
    ['sslcert', 'postgresql://monitor@db.example/app?sslcert=/root/.ssh/id_rsa', /"sslcert" is not allowed/],
    ['sslkey', 'postgresql://monitor@db.example/app?sslkey=/root/.aws/credentials', /"sslkey" is not allowed/],
    ['sslpassword', `postgresql://monitor@db.example/app?sslpassword=${SECRET}`, /"sslpassword" is not allowed \(a password never goes in the DSN/],
    ['passfile', 'postgresql://monitor@db.example/app?passfile=/root/.pgpass', /"passfile" is not allowed/],
    ['service', 'postgresql://monitor@db.example/app?service=lab', /"service" is not allowed/],
    ['password=', `postgresql://monitor@db.example/app?password=${SECRET}`, /"password" is not allowed \(a password never goes in the DSN: put it in a variable of the control worker named STORAGE_LAB_DSN_PASSWORD_<NAME>/],
    ['%70assword=', `postgresql://monitor@db.example/app?%70assword=${SECRET}`, /"password" is not allowed/],
    ['PASSWORD=', `postgresql://monitor@db.example/app?PASSWORD=${SECRET}`, /"PASSWORD" is not allowed/],
    ['a parameter name with a control character', `postgresql://monitor@db.example/app?pass%0Aword=${SECRET}`, /a query parameter \(its name not shown\) is not allowed/],
    ['user:pass@', `postgresql://monitor:${SECRET}@db.example/app`, /holds a password, which would stay in the workflow's history/],
    ['user:pass@ with "@" in the password', `postgresql://monitor:${SECRET}@x@db.example/app`, /holds a password/],
    ['a percent-encoded ":" in the user', `postgresql://monitor%3A${SECRET}@db.example/app`, /percent-encoded ":", which reads as user:password/],
    ['sslmode=verify-ca (needs a root certificate file)', 'postgresql://monitor@db.example/app?sslmode=verify-ca', /verify-ca needs a root certificate file.*use sslmode=verify-full/],
    ['an unknown sslmode', 'postgresql://monitor@db.example/app?sslmode=no-verify', /sslmode must be one of disable, allow, prefer, require, verify-full/],
    ['sslmode twice', 'postgresql://monitor@db.example/app?sslmode=disable&sslmode=verify-full', /gives sslmode more than once/],
    ['connect_timeout 0 (forever)', 'postgresql://monitor@db.example/app?connect_timeout=0', /connect_timeout must be whole seconds from 1 to 60/],
    ['a control character in the host', 'postgresql://monitor@db%0Aexample/app', /the host holds a control character/],
    ['a control character in the database', 'postgresql://monitor@db.example/app%00', /the database name holds a control character/],
    ['a control character in application_name', 'postgresql://monitor@db.example/app?application_name=a%1B%5B2J', /application_name holds a control character/],
    ['a raw newline (the URL parser would drop it)', 'postgresql://monitor@db.example/app?opt\nions=x', /holds whitespace or a control character/],
    ['a raw tab', 'postgresql://monitor@db.example/a\tpp', /holds whitespace or a control character/],
    ['a host that is no host name', 'postgresql://monitor@db%40evil.example/app', /neither a host name nor an IP address/],
    ['a fragment', `postgresql://monitor@db.example/app#password=${SECRET}`, /#fragment/],
    ['no host', 'postgresql:///app', /names no host/],
    ['no user', 'postgresql://db.example/app', /names no user/],
    ['several hosts', 'postgresql://monitor@db1:5432,db2:5432/app', /is not a valid URL/],
  ];

  it.each(HOSTILE)('a workflow refuses %s, naming dsn and never its secret', (_what, dsn, message) => {
    const { input, problems } = parseDiagnoseInput({ dsn }, { origin: 'workflow' });
    expect(input).toBeNull();
    expect(problems.map((p) => p.path)).toEqual(problems.map(() => 'dsn'));
    expect(problems.map((p) => p.message).join('\n')).toMatch(message);
    expect(JSON.stringify(problems)).not.toContain(SECRET);
    expect(() => resolveDiagnoseInput({ dsn })).toThrow(InvalidSpecError);
  });

  it('pg itself would have obeyed them: host= and a percent-encoded host become socket paths, options and PASSWORD pass through', () => {
    expect(pgParse('postgresql://m@db.example/app?host=/var/lib/x/run').host).toBe('/var/lib/x/run');
    expect(pgParse('postgresql://m@%2Fvar%2Flib%2Fx%2Frun/app').host).toBe('/var/lib/x/run');
    expect(pgParse('postgresql://m@db.example/app?options=-c%20default_transaction_read_only%3Doff').options).toBe('-c default_transaction_read_only=off');
    expect(pgParse(`postgresql://m@db.example/app?%70assword=${SECRET}`).password).toBe(SECRET);
  });

  it('the CLI refuses the same parameters, but takes a password and a socket directory (its own process, its own rights)', () => {
    for (const [what, dsn] of HOSTILE.filter(([, d]) => d.includes('?')))
      expect([what, parseDiagnoseInput({ dsn }, { origin: 'cli' }).problems.map((p) => p.path)]).toEqual([what, expect.arrayContaining(['dsn'])]);
    expect(parseDsn(`postgresql://monitor:${SECRET}@db.example/app`, 'cli').parts).toMatchObject({ user: 'monitor', password: SECRET, host: 'db.example' });
    expect(parseDsn('postgresql://monitor@%2Fvar%2Frun%2Fpostgresql/app', 'cli').parts).toMatchObject({ host: '/var/run/postgresql', database: 'app' });
    expect(parseDsn('postgresql:///app', 'cli').parts).toMatchObject({ host: null, user: null, database: 'app' });
  });

  it('allowed DSNs parse into what pg-connection-string reads from them', () => {
    const allowed = [
      'postgresql://monitor@db.example:5432/app',
      'postgres://monitor@db.example/app?sslmode=verify-full&application_name=nightly%20check&connect_timeout=5',
      'postgresql://monitor@10.0.0.5:6432/app?sslmode=disable',
      'postgresql://monitor@[::1]:5433/app',
      'postgresql://monitor@[2001:db8::7]/app',
      'postgresql://mon%40itor@db.example/my%20app',
      'POSTGRESQL://Monitor@DB.Example/App',
      'postgresql://monitor@db.example',
    ];
    for (const dsn of allowed) {
      const { parts, problems } = parseDsn(dsn, 'workflow');
      expect([dsn, problems]).toEqual([dsn, []]);
      const pg = pgParse(dsn);
      expect([dsn, parts!.host, parts!.port, parts!.user, parts!.database]).toEqual([dsn, pg.host, pg.port ? Number(pg.port) : null, pg.user, pg.database]);
    }
    expect(parseDsn(allowed[1], 'workflow').parts).toEqual({
      host: 'db.example',
      port: null,
      user: 'monitor',
      password: null,
      database: 'app',
      sslmode: 'verify-full',
      applicationName: 'nightly check',
      connectTimeoutSeconds: 5,
    });
    expect(parseDsn(allowed[3], 'workflow').parts).toMatchObject({ host: '::1', port: 5433 });
  });

  it('passwordEnv: a workflow names only STORAGE_LAB_DSN_PASSWORD_* variables of the worker; the CLI any of the user\'s', () => {
    const dsn = 'postgresql://monitor@db.example/app';
    for (const passwordEnv of ['AWS_SECRET_ACCESS_KEY', 'PGPASSWORD', 'STORAGE_LAB_DSN_PASSWORD_', 'storage_lab_dsn_password_replica', 'XSTORAGE_LAB_DSN_PASSWORD_REPLICA']) {
      const { input, problems } = parseDiagnoseInput({ dsn, passwordEnv }, { origin: 'workflow' });
      expect(input).toBeNull();
      expect(problems).toEqual([{ path: 'passwordEnv', message: expect.stringContaining('starts with STORAGE_LAB_DSN_PASSWORD_') }]);
      expect(parseDiagnoseInput({ dsn, passwordEnv }, { origin: 'cli' }).input?.passwordEnv).toBe(passwordEnv);
    }
    expect(resolveDiagnoseInput({ dsn, passwordEnv: 'STORAGE_LAB_DSN_PASSWORD_REPLICA' }).passwordEnv).toBe('STORAGE_LAB_DSN_PASSWORD_REPLICA');
    // Every problem at once: the DSN's and passwordEnv's, with the schema's.
    const all = parseDiagnoseInput({ dsn: `${dsn}?options=x`, passwordEnv: 'AWS_SECRET_ACCESS_KEY', seconds: 0 }, { origin: 'workflow' });
    expect(all.problems.map((p) => p.path).sort()).toEqual(['dsn', 'passwordEnv', 'seconds']);
  });

  it('redacts every password form and every value but the allowed parameters\', keeping the rest', () => {
    expect(redactDsn(`postgresql://monitor:${SECRET}@db.example:5432/app`)).toBe('postgresql://monitor:***@db.example:5432/app');
    expect(redactDsn(`postgres://m@db/app?sslmode=require&password=${SECRET}`)).toBe('postgres://m@db/app?sslmode=require&password=***');
    expect(redactDsn(`postgres://m@db/app?%70assword=${SECRET}&PASSWORD=${SECRET}&application_name=x`)).toBe('postgres://m@db/app?password=***&PASSWORD=***&application_name=x');
    expect(redactDsn(`postgresql://monitor:a${SECRET}@b@db.example/app`)).toBe('postgresql://monitor:***@db.example/app');
    expect(redactDsn(`postgresql://monitor%3A${SECRET}@db.example/app`)).toBe('postgresql://***@db.example/app');
    expect(redactDsn(`postgresql://monitor@db.example/app#${SECRET}`)).toBe('postgresql://monitor@db.example/app#***');
    expect(redactDsn(`postgresql://monitor:pa/${SECRET}@db.example/app`)).toBe('postgresql://*** (not a valid URL, not shown)');
    expect(redactDsn("host=db password='s 3cret' user=m")).toBe('host=db password=*** user=m');
  });

  it('defaults and bounds: 60 s at 20 samples a second; bad fields named, the DSN never echoed', () => {
    expect(resolveDiagnoseInput({ dsn: 'postgresql://m@db/app' })).toEqual({ dsn: 'postgresql://m@db/app', seconds: 60, intervalMs: 50, fsyncProbe: true });
    const { problems } = parseDiagnoseInput({ dsn: 'mysql://x:pw@db', seconds: 0, intervalMs: 5000, extra: 1 }, { origin: 'workflow' });
    const paths = problems.map((p) => p.path).sort();
    expect(paths).toEqual(['dsn', 'extra', 'intervalMs', 'seconds']);
    expect(JSON.stringify(problems)).not.toContain('pw@');
  });
});

describe('the connection diagnose builds from a DSN', () => {
  const parts = (dsn: string, origin: 'workflow' | 'cli') => parseDsn(dsn, origin).parts!;
  const saved = { ...process.env };
  afterEach(() => {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  });

  it('from a workflow: every field given (nothing from the worker\'s PG* variables), the lab\'s options last', () => {
    const config = clientConfig(parts('postgresql://monitor@db.example/app?application_name=nightly', 'workflow'), { origin: 'workflow' });
    expect(config).toMatchObject({ host: 'db.example', port: 5432, user: 'monitor', database: 'app', ssl: false, application_name: 'nightly', connectionTimeoutMillis: 10_000 });
    expect(config.options).toBe('-c default_transaction_read_only=on -c statement_timeout=5000 -c lock_timeout=1000');
    expect(clientConfig(parts('postgresql://monitor@db.example?sslmode=require&connect_timeout=3', 'workflow'), { origin: 'workflow' })).toMatchObject({ database: 'monitor', ssl: {}, connectionTimeoutMillis: 3000 });
    // The CLI leaves what the DSN does not say to pg, which reads the user's PGHOST, PGPORT, PGSSLMODE as libpq does.
    expect(clientConfig(parts('postgresql:///app', 'cli'), { origin: 'cli' })).toMatchObject({ host: undefined, port: undefined, user: undefined, ssl: undefined });
  });

  it('from a workflow the password comes only from the named STORAGE_LAB_DSN_PASSWORD_* variable, never PGPASSWORD or a password file', async () => {
    process.env.PGPASSWORD = 'the-lab-own-secret';
    const password = (dsn: string, opts: Parameters<typeof clientConfig>[1]) => (clientConfig(parts(dsn, opts.origin), opts).password as () => Promise<string>)();
    const dsn = 'postgresql://monitor@db.example/app';
    await expect(password(dsn, { origin: 'workflow' })).rejects.toThrow(/the input names none: put it in a variable of the control worker named STORAGE_LAB_DSN_PASSWORD_<NAME>/);
    process.env.STORAGE_LAB_DSN_PASSWORD_REPLICA = 'replica-password';
    await expect(password(dsn, { origin: 'workflow', passwordEnv: 'STORAGE_LAB_DSN_PASSWORD_REPLICA' })).resolves.toBe('replica-password');
    await expect(password(dsn, { origin: 'workflow', passwordEnv: 'STORAGE_LAB_DSN_PASSWORD_UNSET' })).rejects.toThrow(/STORAGE_LAB_DSN_PASSWORD_UNSET .* is not set/);
    // The CLI keeps libpq's fallbacks, and a password in its URL comes first.
    await expect(password(dsn, { origin: 'cli' })).resolves.toBe('the-lab-own-secret');
    await expect(password('postgresql://monitor:from-url@db.example/app', { origin: 'cli' })).resolves.toBe('from-url');
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
