/**
 * storage-lab diagnose against a real Postgres under pgbench load (a bare host in a temporary folder on a free port,
 * removed at the end), as a non-superuser role with pg_monitor and a password from PGPASSWORD: the verdict line with
 * its evidence, exit code 0, an fsync probe beside (never inside) the data directory, and nothing written by its
 * own connection: under load the server assigned exactly as many transaction ids as pgbench committed, and on an
 * idle server neither the next transaction id nor the WAL position moves.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withConnection, libpqEnv } from '../../activities/lib/pg';
import { runProcess } from '../../activities/lib/process-runner';
import { parseSummary } from '../../activities/parsers/pgbench';
import { hostSettings, startBenchHost, type BenchHost } from '../../bench/bench-host';
import { RANDOM_UPDATE_SCRIPT } from '../../common/presets';
import { CAPTURE_KIND, VERDICTS, type DiagnoseCapture } from '../../common/diagnose';
import { demandsFromCapture } from '../../common/demands';
import { configurePostgres, stopPostgres } from '../../activities/host/postgres';
import { cloneStandby, setReplication } from '../../activities/host/replication';
import { clientTool } from '../../infra/postgres-binaries';
import { PROJECT_ROOT } from '../../infra/lab-paths';

const cli = path.join(PROJECT_ROOT, 'dist/client/cli.js');
const PASSWORD = 'diagnose-test-password';
// wal_level minimal: no standby snapshots, so an idle server writes no WAL at all; no autovacuum, whose ANALYZE would take transaction ids.
const SETTINGS = { shared_buffers: '16MB', track_io_timing: 'on', autovacuum: 'off', wal_level: 'minimal', max_wal_senders: '0', max_connections: '40' };
const VERDICT_LINE = new RegExp(`^verdict: (${VERDICTS.join('|')}) \\(storage \\d+ %, CPU \\d+ %, locks \\d+ %, client \\d+ %`, 'm');

describe('storage-lab diagnose on a real Postgres (integration)', () => {
  let host: BenchHost;
  let dsn: string;
  let work: string;
  const query = <T extends Record<string, unknown>>(sql: string) => withConnection(host.deps.config, async (c) => (await c.query<T>(sql)).rows[0]);
  /** The next transaction id to be assigned and the WAL insert position: what any write moves. */
  const writeCounters = () => query<{ xid: string; lsn: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid, pg_current_wal_lsn()::text AS lsn');
  const diagnose = (args: string[]) =>
    runProcess(process.execPath, [cli, 'diagnose', '--dsn', dsn, ...args], { env: { ...process.env, PGPASSWORD: PASSWORD }, timeoutMs: 180_000, okExitCodes: [0, 1, 2] });

  beforeAll(async () => {
    host = await startBenchHost('diagnose', SETTINGS);
    const cfg = host.deps.config;
    work = path.join(cfg.hostDir, 'test');
    await runProcess('mkdir', ['-p', work]);
    await query(`CREATE ROLE monitor LOGIN PASSWORD '${PASSWORD}' IN ROLE pg_monitor`);
    await runProcess(clientTool(cfg, 'pgbench'), ['-i', '-s', '2', '-q'], { env: libpqEnv(cfg), timeoutMs: 120_000 });
    dsn = `postgresql://monitor@127.0.0.1:${cfg.postgres.port}/${libpqEnv(cfg).PGDATABASE}`;
  });
  afterAll(async () => {
    await host?.close();
  });

  it('prints the verdict with evidence under pgbench load, exits 0, and its own connection wrote nothing', async () => {
    const cfg = host.deps.config;
    const script = path.join(work, 'update.sql');
    writeFileSync(script, RANDOM_UPDATE_SCRIPT);
    const before = await writeCounters();
    const load = runProcess(clientTool(cfg, 'pgbench'), ['-n', '-s', '2', '-c', '4', '-j', '2', '-T', '25', '-f', script], { env: libpqEnv(cfg), timeoutMs: 120_000 });
    await new Promise((r) => setTimeout(r, 2000));
    const html = path.join(work, 'report.html');
    const r = await diagnose(['--seconds', '20', '--html', html]);
    const pgbench = parseSummary((await load).stdout);
    const after = await writeCounters();

    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(VERDICT_LINE);
    expect(r.stdout).toMatch(/ms per block read/);
    expect(r.stdout).toMatch(/fsync probe: fdatasync \d[\d,]* µs per 8 kB write \+ sync/);
    expect(r.stdout).toMatch(/transactions: [\d,.]+\/s/);
    expect(r.stdout).toContain(`monitor@127.0.0.1:${cfg.postgres.port}`);
    expect(r.stdout).not.toContain(PASSWORD);
    // Every pgbench transaction updates a row, taking one transaction id; diagnose's read-only ones take none.
    expect(pgbench.failedTransactions).toBe(0);
    expect(Number(after.xid) - Number(before.xid)).toBe(pgbench.transactions);
    // The probe wrote beside the data directory, not inside it, and removed its file.
    const dataParent = path.dirname(cfg.dataDir);
    expect(r.stdout).toContain(`in ${dataParent}`);
    expect(readdirSync(dataParent).filter((f) => f.startsWith('storage-lab-fsync-probe'))).toEqual([]);
    expect(readdirSync(cfg.dataDir).filter((f) => f.startsWith('storage-lab-fsync-probe'))).toEqual([]);
    const page = readFileSync(html, 'utf8');
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain('<svg');
    expect(page).toContain('Storage Lab diagnosis');
  });

  it('on an idle server: verdict idle, JSON capture, and neither the next transaction id nor the WAL moved', async () => {
    await query('CHECKPOINT');
    const before = await writeCounters();
    const r = await diagnose(['--seconds', '3', '--json', '--no-fsync-probe']);
    const after = await writeCounters();
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/^verdict: idle/m);
    const capture = JSON.parse(r.stdout) as DiagnoseCapture;
    expect(capture.kind).toBe(CAPTURE_KIND);
    expect(capture.verdict).toBe('idle');
    expect(capture.settings.default_transaction_read_only).toBe('on');
    expect(capture.privileges).toEqual({ pgMonitor: true, superuser: false });
    expect(capture.diagnostics.samplesPerSecond).toBeGreaterThanOrEqual(10);
    expect(capture.diagnostics.ownTransactions).toBeGreaterThan(0);
    expect(capture.local?.dataDirectory).toBe(host.deps.config.dataDir);
    expect(JSON.stringify(capture)).not.toContain(PASSWORD);
    expect(after).toEqual(before);
  });

  it('refuses a DSN or a password it cannot use with exit code 2 and no stack trace; takes the password from a named variable', async () => {
    const r = await runProcess(process.execPath, [cli, 'diagnose', '--dsn', 'mysql://x@db/app', '--seconds', '1'], { okExitCodes: [0, 1, 2] });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/dsn: must be a postgresql:\/\/ URL/);
    const wrong = await runProcess(process.execPath, [cli, 'diagnose', '--dsn', dsn, '--seconds', '1'], { env: { ...process.env, PGPASSWORD: 'wrong' }, okExitCodes: [0, 1, 2] });
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toMatch(/cannot connect to postgresql:\/\/monitor@127\.0\.0\.1:\d+\/\w+: password authentication failed/);
    const noPassword = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'PGPASSWORD'));
    const missing = await runProcess(process.execPath, [cli, 'diagnose', '--dsn', dsn, '--seconds', '1'], { env: { ...noPassword, PGPASSFILE: '/nonexistent' }, okExitCodes: [0, 1, 2] });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/the server asks for a password and none was given: set PGPASSWORD/);
    // The password from a variable the caller names (as a worker's environment holds it for diagnoseWorkflow).
    const named = await runProcess(process.execPath, [cli, 'diagnose', '--dsn', dsn, '--seconds', '1', '--no-fsync-probe', '--password-env', 'REPLICA_PW'], {
      env: { ...noPassword, PGPASSFILE: '/nonexistent', REPLICA_PW: PASSWORD },
      okExitCodes: [0, 1, 2],
    });
    expect(named.exitCode).toBe(0);
    expect(named.stdout).toMatch(VERDICT_LINE);
  });
});

describe('storage-lab diagnose on a primary that commits to a synchronous standby (integration)', () => {
  // Two servers on loopback: a primary with synchronous_standby_names = 'ANY 1 (s1)' and s1 streaming from it.
  const settings = { shared_buffers: '16MB', track_io_timing: 'on', track_wal_io_timing: 'on', autovacuum: 'off', wal_level: 'replica', max_wal_senders: '4', max_connections: '40' };
  let primary: BenchHost;
  let standby: BenchHost;

  beforeAll(async () => {
    primary = await startBenchHost('diagnose-primary', settings);
    standby = await startBenchHost('diagnose-standby', settings);
    const p = primary.deps.config;
    const s = standby.deps.config;
    await withConnection(p, (c) => c.query(`CREATE ROLE monitor LOGIN PASSWORD '${PASSWORD}' IN ROLE pg_monitor`));
    await runProcess(clientTool(p, 'pgbench'), ['-i', '-s', '2', '-q'], { env: libpqEnv(p), timeoutMs: 120_000 });
    // The standby is the primary's clone: it connects with the primary's lab password.
    await standby.run(stopPostgres, { hostId: s.hostId });
    writeFileSync(s.passwordFile, readFileSync(p.passwordFile, 'utf8'));
    await standby.run(cloneStandby, { hostId: s.hostId, primary: { host: '127.0.0.1', port: p.postgres.port }, node: 's1' });
    await standby.run(configurePostgres, { hostId: s.hostId, ...hostSettings(settings) });
    await primary.run(setReplication, { hostId: p.hostId, primary: null, node: 'primary', synchronousStandbys: ['s1'] });
    for (let i = 0; ; i++) {
      const state = await withConnection(p, async (c) => (await c.query<{ sync_state: string }>("SELECT sync_state FROM pg_stat_replication WHERE application_name = 's1'")).rows[0]?.sync_state);
      if (state === 'quorum') break;
      if (i > 100) throw new Error(`standby s1 is not a quorum standby after 20 s (sync_state ${state ?? 'none'})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  afterAll(async () => {
    await standby?.close();
    await primary?.close();
  });

  it('records the standby and its flush lag, counts IPC:SyncRep in the commit wait, and hands predict the round trip', async () => {
    const p = primary.deps.config;
    const work = path.join(p.hostDir, 'test');
    await runProcess('mkdir', ['-p', work]);
    const script = path.join(work, 'update.sql');
    writeFileSync(script, RANDOM_UPDATE_SCRIPT);
    const load = runProcess(clientTool(p, 'pgbench'), ['-n', '-s', '2', '-c', '4', '-j', '2', '-T', '14', '-f', script], { env: libpqEnv(p), timeoutMs: 120_000 });
    await new Promise((r) => setTimeout(r, 2000));
    const dsn = `postgresql://monitor@127.0.0.1:${p.postgres.port}/${libpqEnv(p).PGDATABASE}`;
    const r = await runProcess(process.execPath, [cli, 'diagnose', '--dsn', dsn, '--seconds', '8', '--json', '--no-fsync-probe'], {
      env: { ...process.env, PGPASSWORD: PASSWORD },
      timeoutMs: 120_000,
      okExitCodes: [0, 1, 2],
    });
    const pgbench = parseSummary((await load).stdout);
    expect(r.stderr).toMatch(/^verdict: /m);
    expect(r.exitCode).toBe(0);
    expect(pgbench.failedTransactions).toBe(0);
    const capture = JSON.parse(r.stdout) as DiagnoseCapture;
    expect(capture.settings.synchronous_standby_names).toBe('ANY 1 (s1)');
    expect(capture.replication?.standbys).toEqual([{ name: 's1', syncState: 'quorum', state: 'streaming', flushLagMs: expect.any(Number), flushLagReadings: expect.any(Number) }]);
    // A reading a second over the 8 s window and one at its end (a reading with nothing recent to time has none).
    expect(capture.replication!.standbys[0].flushLagReadings).toBeGreaterThanOrEqual(5);
    expect(capture.replication!.standbys[0].flushLagReadings).toBeLessThanOrEqual(9);
    const lag = capture.replication!.standbys[0].flushLagMs!;
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThan(1000);
    // Every commit waited for s1: the wait is sampled, and the breakdown counts it with the WAL flush.
    expect(capture.diagnostics.waitEvents['IPC:SyncRep']).toBeGreaterThan(0);
    const d = demandsFromCapture(capture);
    expect(d.storage.syncStandbyRttMs).toBeGreaterThan(0);
    expect(d.storage.syncStandbyRttMs).toBeLessThanOrEqual(lag);
    expect(d.serverMs!.walFsync).toBeGreaterThan(0);
    const file = path.join(work, 'capture.json');
    writeFileSync(file, r.stdout);
    const predicted = await runProcess(process.execPath, [cli, 'predict', '--from', file, '--target', '{"kind":"local-disk","syncStandbyRttMs":0,"label":"no standby"}'], { timeoutMs: 60_000 });
    // Printed on purpose: what the capture says a commit waits for, and the model's self-check on it.
    console.log(predicted.stdout);
    expect(predicted.stdout).toMatch(/synchronous standbys: quorum: the fastest of 1 standby \(s1\)/);
    expect(predicted.stdout).toMatch(/^predicted: [\d,]+ TPS/m);
  });
});
