/**
 * One diagnose capture of any PostgreSQL 12+: read-only (a role with pg_monitor is enough), the sampler over every
 * client backend of the DSN's database for a window, then, when the server runs on this machine, pg_test_fsync
 * beside its data directory; then the verdict with its evidence and what to turn on for a better one.
 */
import os from 'node:os';
import type { Client } from 'pg';
import { CAPTURE_KIND, CAPTURE_SCHEMA_VERSION, classify, medianFlushLags, verdictEvidence, type CapturedStandby, type DiagnoseCapture, type FsyncProbe } from '../../common/results/diagnose-capture';
import { redactDsn, type DiagnoseOrigin } from '../../common/input/diagnose';
import { HostCounters, startSampling } from '../sampler';
import { connectReadOnly } from './connect';
import { probeFsync } from './fsync-probe';
import { findLocalServer } from './local-server';

export interface CaptureOptions {
  /** postgresql:// URL; a password in it (CLI only) is used but never stored or printed. */
  dsn: string;
  /** Whose rules the DSN and the password follow (parseDsn, connectReadOnly). */
  origin: DiagnoseOrigin;
  seconds: number;
  intervalMs: number;
  /** Run pg_test_fsync beside the data directory when the server is on this machine. */
  fsyncProbe: boolean;
  /** Name of an environment variable holding the password. */
  passwordEnv?: string;
  signal?: AbortSignal;
  /** Called about once a second while sampling, and before the probe (heartbeats, progress). */
  onProgress?: (what: string, percent: number) => void;
}

/** Settings a capture records: what the verdict and a prediction depend on. */
const SETTINGS = [
  'server_version',
  'track_io_timing',
  'track_wal_io_timing',
  'shared_buffers',
  'effective_cache_size',
  'block_size',
  'max_connections',
  'wal_sync_method',
  'synchronous_commit',
  'synchronous_standby_names',
  'full_page_writes',
  'checkpoint_timeout',
  'max_wal_size',
  'debug_io_direct',
  'io_method',
  'default_transaction_read_only',
];

export async function captureDiagnosis(opts: CaptureOptions): Promise<DiagnoseCapture> {
  // Proven read-only before it is handed back (connectReadOnly's first query).
  const client = await connectReadOnly(opts.dsn, { origin: opts.origin, passwordEnv: opts.passwordEnv });
  let handedOver = false;
  try {
    const settings = await readSettings(client);
    const role = (
      await client.query<{ monitor: boolean; superuser: boolean; name: string }>(
        "SELECT pg_has_role(current_user, 'pg_monitor', 'USAGE') AS monitor, rolsuper AS superuser, current_user AS name FROM pg_roles WHERE rolname = current_user",
      )
    ).rows[0];
    const { server: local, reason: remoteReason } = await findLocalServer(client);
    const capturedAt = new Date().toISOString();
    const sampling = await startSampling(client, {
      intervalMs: opts.intervalMs,
      sessions: { allClientBackends: true },
      counters: local ? new HostCounters({ device: local.device, cgroup: null }) : null,
      databaseSize: 'all',
    });
    handedOver = true;
    let replication: { standbys: CapturedStandby[] };
    try {
      // The standbys' flush lag once a second: one reading is one recent commit's, and they vary several-fold.
      const readings: CapturedStandby[][] = [];
      await sampleFor(opts, async () => void readings.push(await readStandbys(client)));
      // Read while the window's load still runs (the sampler's own connection; stop() closes it).
      readings.push(await readStandbys(client));
      replication = { standbys: medianFlushLags(readings) };
    } catch (err) {
      await sampling.stop().catch(() => undefined);
      throw err;
    }
    const diagnostics = await sampling.stop();

    let fsync: FsyncProbe | null = null;
    const advice: string[] = [];
    if (!local) advice.push(`${remoteReason}; run diagnose on the database host for CPU, device and fsync figures`);
    else if (opts.fsyncProbe) {
      opts.onProgress?.('pg_test_fsync beside the data directory', 100);
      const probed = await probeFsync(local.dataDirectory, local.device, settings.wal_sync_method || 'fdatasync', opts.signal);
      fsync = probed.probe;
      if (probed.reason) advice.push(`no fsync probe: ${probed.reason}`);
    }
    const trackIoTiming = settings.track_io_timing === 'on';
    if (!trackIoTiming)
      advice.push('track_io_timing is off, so ms per block read is unknown: ALTER SYSTEM SET track_io_timing = on; SELECT pg_reload_conf(); (as a superuser; pg_test_timing shows what timing costs on this machine)');
    if (settings.track_wal_io_timing === 'off')
      advice.push('track_wal_io_timing is off, so WAL write and sync times are unknown: ALTER SYSTEM SET track_wal_io_timing = on; SELECT pg_reload_conf();');
    if (!role.monitor && !role.superuser)
      advice.push(`role ${role.name} lacks pg_monitor: other roles' sessions show no state or wait event, so the verdict can miss them; GRANT pg_monitor TO ${role.name};`);
    advice.push(...diagnostics.notes.filter((n) => !/another machine/.test(n)));

    const evidence = verdictEvidence(diagnostics, { trackIoTiming, fsyncMs: fsync ? fsync.usecsPerOp / 1000 : null });
    const { verdict, reason } = classify(evidence);
    const transactions = diagnostics.database.xactCommit + diagnostics.database.xactRollback - (diagnostics.ownTransactions ?? 0);
    return {
      kind: CAPTURE_KIND,
      schemaVersion: CAPTURE_SCHEMA_VERSION,
      capturedAt,
      target: describeTarget(client, opts.dsn),
      serverVersion: settings.server_version,
      privileges: { pgMonitor: role.monitor, superuser: role.superuser },
      settings,
      local: local ? { dataDirectory: local.dataDirectory, device: local.device, memoryMiB: local.memoryMiB, pageCacheMiB: local.pageCacheMiB } : null,
      diagnostics,
      tps: diagnostics.seconds > 0 ? Math.max(0, transactions) / diagnostics.seconds : 0,
      fsync,
      replication,
      evidence,
      verdict,
      reason,
      advice,
    };
  } finally {
    if (!handedOver) await client.end().catch(() => undefined);
  }
}

/** Waits out the sampling window a second at a time, so a cancel or a progress report is never far off. */
async function sampleFor(opts: CaptureOptions, everySecond: () => Promise<void>): Promise<void> {
  const end = Date.now() + opts.seconds * 1000;
  while (Date.now() < end) {
    if (opts.signal?.aborted) throw new Error('diagnose cancelled');
    await new Promise((r) => setTimeout(r, Math.min(1000, end - Date.now())));
    await everySecond();
    const done = opts.seconds - Math.max(0, end - Date.now()) / 1000;
    opts.onProgress?.(`sampled ${Math.round(done)} of ${opts.seconds} s`, Math.round((100 * done) / opts.seconds));
  }
}

async function readSettings(client: Client): Promise<Record<string, string>> {
  const rows = (await client.query<{ name: string; value: string }>('SELECT name, current_setting(name) AS value FROM pg_settings WHERE name = ANY($1)', [SETTINGS])).rows;
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

/**
 * The standbys streaming from the server now, with how long after a local flush each reported its own
 * (pg_stat_replication, which pg_monitor may read in full; a standby with nothing recent to time has none).
 */
async function readStandbys(client: Client): Promise<CapturedStandby[]> {
  const rows = (
    await client.query<{ name: string; sync_state: string; state: string; flush_lag_ms: number | null }>(
      'SELECT application_name AS name, sync_state, state, (EXTRACT(epoch FROM flush_lag) * 1000)::float8 AS flush_lag_ms FROM pg_stat_replication ORDER BY application_name',
    )
  ).rows;
  return rows.map((r) => ({ name: r.name, syncState: r.sync_state, state: r.state, flushLagMs: r.flush_lag_ms }));
}

/** user@host:port/database of a connection: what a report shows of its target (no password, ever). */
function describeTarget(client: Client, dsn: string): string {
  const c = client as unknown as { user?: string; host?: string; port?: number; database?: string };
  return c.host ? `${c.user ?? os.userInfo().username}@${c.host}:${c.port}/${c.database}` : redactDsn(dsn);
}
