/**
 * The power-cut drill's host steps: on the primary, PostgreSQL started again on what the power cut left (its crash
 * recovery timed and read from the server's log) and the cluster checked (pg_amcheck over every database, heap and
 * B-tree indexes with --heapallindexed, and the server's data checksums); on the client, the ledger of acknowledged
 * commits looked up on the recovered primary. Each returns what it found, a cluster that does not come back or does
 * not answer included: the drill reports that as the round's outcome (a corrupt cluster), it does not retry it away.
 */
import { Context } from '@temporalio/activity';
import path from 'node:path';
import { labFileSize, readLabFile, removeLabFile } from '../../lib/lab-fs';
import { parseAmcheck } from '../../lib/parsers/pg-amcheck';
import { parseRecoveryLog, type RecoveryLog } from '../../lib/parsers/recovery-log';
import { clientTool } from '../../lib/postgres-binaries';
import { libpqEnv, withConnection } from '../../lib/pg';
import { runProcess } from '../../lib/process-runner';
import type { DurabilitySettings, PowerCutClusterCheck } from '../../common/results/drill-result';
import { every } from '../progress';
import { asPostgresUser, assertHost, closeSocketDir, type HostDeps, type HostInput } from './deps';
import { countLostCommits, type LedgerCount } from './failover-writer';
import { isRunning, pgCtl, serverLog, tail } from './postgres';
import type { PeerAddress } from './replication';

/** Bytes of the server log read for the recovery's lines: the last start's lines are at its end. */
const RECOVERY_LOG_BYTES = 64 * 1024;

/** The server's last start in its log: whether it ran crash recovery, and the recovery's steps by the server's clock. */
export interface CrashRecoveryLog extends Pick<RecoveryLog, 'startedAt' | 'redoStartAt' | 'redoDoneAt' | 'redoDoneLsn' | 'readyAt' | 'fatal'> {
  /** "database system was not properly shut down; automatic recovery in progress": the server knew it had crashed. */
  crashRecovery: boolean;
  /** Seconds of WAL replay by the server's clock (redo start to redo done); null without redo. */
  redoSeconds: number | null;
}

/** Reads the last start of a server log (log_line_prefix '%m [%p] ', UTC): its crash recovery, or the FATAL/PANIC that ended it. */
export function crashRecoveryLog(text: string): CrashRecoveryLog {
  const lines = text.split('\n');
  let start = 0;
  for (let i = lines.length - 1; i >= 0; i--)
    if (/ LOG:\s+starting PostgreSQL /.test(lines[i])) {
      start = i;
      break;
    }
  // A client turned away while the server starts ("the database system is starting up") is logged as a FATAL of its
  // own connection: not the server's.
  const last = lines
    .slice(start)
    .filter((l) => !/ FATAL:\s+the database system is (starting up|in recovery mode|shutting down|not yet accepting connections)/.test(l))
    .join('\n');
  const r = parseRecoveryLog(last);
  const redoSeconds = r.redoStartAt && r.redoDoneAt ? (Date.parse(r.redoDoneAt) - Date.parse(r.redoStartAt)) / 1000 : null;
  return {
    startedAt: r.startedAt,
    redoStartAt: r.redoStartAt,
    redoDoneAt: r.redoDoneAt,
    redoDoneLsn: r.redoDoneLsn,
    readyAt: r.readyAt,
    fatal: r.fatal,
    crashRecovery: /database system was not properly shut down; automatic recovery in progress/.test(last),
    redoSeconds,
  };
}

/** PostgreSQL back after a power cut: how long its start took, what its crash recovery did, or why it did not come back. */
export interface PowerCutRecovery {
  started: boolean;
  /** Seconds from pg_ctl start to the server accepting connections (crash recovery included). */
  seconds: number;
  log: CrashRecoveryLog;
  /** Why it did not come back (pg_ctl's failure and the log's last lines); empty when it did. */
  detail: string;
  /** A postmaster.pid the cut left naming no process (empty, or zeros), removed before the start; null when none was. */
  lockFile?: string | null;
}

/**
 * Removes a postmaster.pid that names no process, as the cut left it when it was never flushed (fsync = off: the server
 * flushes its lock file through pg_fsync, a no-op then). PostgreSQL refuses to start on one ("lock file
 * \"postmaster.pid\" is empty"), and its hint is to remove it; Debian's pg_ctlcluster removes a stale one at start.
 * Here the host's power was cut, so no server of it runs. One that names a PID is left to pg_ctl and the server: a
 * dead one is replaced, a live one refused. Returns what was removed, or null.
 */
export function clearLockFileLeftByCut(dataDir: string): string | null {
  const file = path.join(dataDir, 'postmaster.pid');
  const text = readLabFile(file, { maxBytes: 4096 });
  if (text === null) return null;
  const pid = Number(text.split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0) return null;
  removeLabFile(file);
  const what = text.length === 0 ? 'empty' : /^\0+$/.test(text) ? `${text.length} bytes of zeros` : `no PID in its first line (${JSON.stringify(text.slice(0, 40))})`;
  return `postmaster.pid came back ${text.length === 0 || /^\0+$/.test(text) ? what : `with ${what}`}: removed before the start (PostgreSQL refuses to start on it)`;
}

/**
 * Where a started server listens, from its postmaster.pid (line 4 its port, line 5 its socket folder): a server that
 * came back without the lab's settings listens where PostgreSQL's defaults say (port 5432, the distribution's socket
 * folder), and the lab's clients are refused. Null when the file is not there or says no port.
 */
export function listensAt(pidFile: string | null): { port: number; socketDir: string } | null {
  const lines = (pidFile ?? '').split('\n');
  const port = Number(lines[3]);
  return lines.length >= 5 && Number.isInteger(port) && port > 0 ? { port, socketDir: lines[4] } : null;
}

/** Starts PostgreSQL on the data folder a power cut left, within `timeoutSeconds`, and times its crash recovery. */
export async function recoverAfterPowerCut(deps: HostDeps, input: HostInput & { timeoutSeconds: number }): Promise<PowerCutRecovery> {
  assertHost(deps, input);
  const { config } = deps;
  closeSocketDir(deps);
  const lockFile = clearLockFileLeftByCut(config.dataDir);
  if (await isRunning(deps)) throw new Error(`host ${config.hostId}: PostgreSQL runs already; a power cut leaves none running`);
  // This start's lines only: a start that fails before it logs "starting PostgreSQL" (its configuration refused)
  // must not be read as the start before the cut, which was ready.
  const logFrom = labFileSize(serverLog(deps)) ?? 0;
  const started = Date.now();
  let detail = '';
  try {
    await pgCtl(deps, ['start', '-w', '-t', String(Math.max(1, Math.round(input.timeoutSeconds))), '-l', serverLog(deps)]);
  } catch (err) {
    detail = `${(err as Error).message.split('\n')[0]}\n${tail(serverLog(deps), 15)}`;
  }
  const seconds = (Date.now() - started) / 1000;
  const text = readLabFile(serverLog(deps), { maxBytes: RECOVERY_LOG_BYTES, tail: true, from: logFrom }) ?? '';
  if (detail === '') {
    // Up, but where? Without the lab's settings it listens where no lab client looks.
    const at = listensAt(readLabFile(path.join(config.dataDir, 'postmaster.pid'), { maxBytes: 4096 }));
    if (at && at.port !== config.postgres.port) {
      detail = `the server started, but listening on port ${at.port} (sockets in ${at.socketDir}), not on the lab's port ${config.postgres.port}: without the lab's settings (storage-lab.conf, or postgresql.conf's include of it, lost)\n${tail(serverLog(deps), 5)}`;
      // Stopped cleanly, so its socket and lock files outside the host's folder go with it (a kill would leave them).
      await pgCtl(deps, ['stop', '-m', 'fast', '-w', '-t', '60']);
    }
  }
  return { started: detail === '', seconds, log: crashRecoveryLog(text), detail, lockFile };
}

/** pg_amcheck's findings (exit code 0 clean, 2 corruption found, 1 it could not check), the checksums, the settings. */
export type ClusterCheck = PowerCutClusterCheck;

const SETTINGS_QUERY = `SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS synchronous_commit,
  current_setting('full_page_writes') AS full_page_writes, current_setting('wal_sync_method') AS wal_sync_method,
  current_setting('data_checksums') AS data_checksums`;

/** Runs pg_amcheck over every database (heap, TOAST and B-tree indexes, every heap tuple looked up in its indexes). */
export async function checkClusterAfterPowerCut(deps: HostDeps, input: HostInput & { timeoutSeconds: number }): Promise<ClusterCheck> {
  assertHost(deps, input);
  const ctx = Context.current();
  const { config } = deps;
  const stop = every(5_000, () => ctx.heartbeat({ phase: 'pg_amcheck' }));
  let amcheck: ClusterCheck['amcheck'];
  try {
    // The lab's check, as the lab's role (it installs amcheck): the Postgres user, whom the peer map lets be that role.
    const r = await runProcess(clientTool(config, 'pg_amcheck'), ['--all', '--install-missing', '--heapallindexed', '--maintenance-db=postgres'], {
      ...asPostgresUser(deps),
      cwd: config.hostDir,
      env: libpqEnv(config, 'postgres'),
      okExitCodes: [0, 1, 2],
      timeoutMs: input.timeoutSeconds * 1000,
      signal: ctx.cancellationSignal,
    });
    amcheck = amcheckOutcome(r.exitCode, r.stdout, r.stderr);
    // It could not check: the server's own last words say why (it stopped, it refused).
    if (r.exitCode === 1) amcheck.detail = `${amcheck.detail}; the server log ends: ${tail(serverLog(deps), 6).split('\n').join(' | ')}`.slice(0, 3_000);
  } finally {
    stop();
  }
  let checksumFailures: number | null = null;
  let settings: DurabilitySettings | null = null;
  try {
    await withConnection(
      config,
      async (c) => {
        settings = (await c.query<DurabilitySettings>(SETTINGS_QUERY)).rows[0];
        checksumFailures = Number((await c.query<{ n: string | null }>('SELECT coalesce(sum(checksum_failures), 0) AS n FROM pg_stat_database')).rows[0].n);
      },
      { database: 'postgres' },
    );
  } catch {
    // A server that no longer answers: pg_amcheck's outcome says so already.
  }
  const s = settings as DurabilitySettings | null;
  return { amcheck, dataChecksums: s ? s.data_checksums === 'on' : null, checksumFailures, settings: s };
}

/** The ledger's count on the recovered primary, or why it could not be made (the ledger's table gone, the server down). */
export type PowerCutCount = { ok: true; count: LedgerCount } | { ok: false; error: string };

/** Looks every acknowledged commit of the given rounds up on the primary after its power cut. */
export async function countAfterPowerCut(deps: HostDeps, input: HostInput & { primary: PeerAddress; rounds: number[] }): Promise<PowerCutCount> {
  assertHost(deps, input);
  try {
    return { ok: true, count: await countLostCommits(deps, input) };
  } catch (err) {
    return { ok: false, error: (err as Error).message.split('\n')[0].slice(0, 500) };
  }
}

/** pg_amcheck's exit code and output as the round records them: clean (0), corruption found (2), or not checked (1). */
export function amcheckOutcome(exitCode: number, stdout: string, stderr: string): ClusterCheck['amcheck'] {
  const report = parseAmcheck(stdout);
  if (exitCode === 0 && report.problems === 0)
    return { exitCode, ok: true, problems: 0, relations: [], detail: 'no corruption found (every database: heap tables, TOAST, B-tree indexes, heapallindexed)' };
  if (report.problems > 0)
    return { exitCode, ok: false, problems: report.problems, relations: report.relations, detail: `${report.problems} problems in ${report.relations.join(', ')}: ${report.sample.join(' | ')}`.slice(0, 2_000) };
  const why = (stderr.trim() || stdout.trim() || `exit code ${exitCode}`).split('\n').slice(0, 5).join(' | ').slice(0, 1_000);
  return { exitCode, ok: false, problems: 0, relations: [], detail: `pg_amcheck could not check the cluster: ${why}` };
}
