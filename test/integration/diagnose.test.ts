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
import { startBenchHost, type BenchHost } from '../../bench/bench-host';
import { RANDOM_UPDATE_SCRIPT } from '../../common/presets';
import { CAPTURE_KIND, VERDICTS, type DiagnoseCapture } from '../../common/diagnose';
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
