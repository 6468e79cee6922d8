/**
 * Backups on a host, through the BackupTool interface (WAL-G or pgBackRest): configure the tool and WAL archiving,
 * create the repository, take a base backup, restore one into an empty data folder, replay to the recovery target
 * and promote (timed by the server's own log), and look at the archive (continuity, repository check).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_BACKUP_COMPRESSION, type BackupCompression, type BackupKind, type BackupToolName, type ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupInfo } from '../../common/results/drill-result';
import { FAILURE_TYPES } from '../../common/core/errors';
import { DEFAULT_WAL_SEGMENT_BYTES, parseSegmentName, segmentName } from '../../common/core/lsn';
import { readLabFile, removeLabFile } from '../../lib/lab-fs';
import type { RecoveryTarget } from '../../common/input/backup-store';
import type { ArchivedWal, BackupTool, RepositoryCheck } from '../../lib/backup-tool';
import { heartbeatWhile } from '../progress';
import { WalgUnavailable, waitForWalg } from '../../lib/walg-build';
import { parseRecoveryLog } from '../../lib/parsers/recovery-log';
import { backupRecordFile, backupTool, type BackupToolRecord } from './archiving';
import { assertHost, closeSocketDir, type HostDeps, type HostInput } from './deps';
import { isRunning, labConfig, pgCtl, stopPostgres, tail, writeLabConfig, writeOwned, type LabConfigInput } from './postgres';

/**
 * Waits for WAL-G where the demo's bootstrap still builds it (lib/walg-build.ts), heartbeating; a build that failed
 * or ran past its bound fails the step with why, not retried (another attempt would find the same).
 */
export async function walgReady(): Promise<{ waited: boolean }> {
  let waited = false;
  try {
    await heartbeatWhile("waiting for WAL-G's build beside this run", (signal) => waitForWalg({ signal, onWait: () => (waited = true) }));
    return { waited };
  } catch (err) {
    if (err instanceof WalgUnavailable) throw ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.preflight);
    throw err;
  }
}

export interface BackupStoreInput extends HostInput {
  store: ResolvedBackupStore;
  /** The tool that writes and reads the store (pgBackRest when absent: what runs before the spec names one). */
  tool?: BackupToolName;
}

/**
 * Writes the tool's config on this host and records which tool it configured: configurePostgres writes the archive
 * commands from that record when asked to archive.
 */
export async function configureBackups(
  deps: HostDeps,
  input: BackupStoreInput & { compression?: BackupCompression },
): Promise<{ tool: string; version: string }> {
  assertHost(deps, input);
  if (input.tool === 'wal-g') await walgReady();
  const tool = backupTool(deps, input.store, input.tool);
  await tool.configure({ compression: input.compression ?? DEFAULT_BACKUP_COMPRESSION });
  const record: BackupToolRecord = { tool: tool.name, store: input.store };
  writeOwned(deps, backupRecordFile(deps), `${JSON.stringify(record)}\n`);
  return { tool: tool.name, version: await tool.version() };
}

/** Creates the repository for this cluster and checks that archiving reaches it (the server must be running). */
export async function initBackupRepository(deps: HostDeps, input: BackupStoreInput): Promise<void> {
  assertHost(deps, input);
  await heartbeatWhile('backup repository', (signal) => backupTool(deps, input.store, input.tool).initRepository(signal));
}

/** A base backup of this host's running server: full (the default), or a delta of the previous backup. */
export async function takeBackup(deps: HostDeps, input: BackupStoreInput & { kind?: BackupKind }): Promise<BackupInfo> {
  assertHost(deps, input);
  return heartbeatWhile('base backup', (signal) => backupTool(deps, input.store, input.tool).backup(input.kind ?? 'full', signal));
}

/** Fetch: restores the newest backup into this host's empty data folder, with recovery settings for the target. */
export async function restoreBackup(
  deps: HostDeps,
  input: BackupStoreInput & { target: RecoveryTarget },
): Promise<{ backupLabel: string; fetchSeconds: number }> {
  assertHost(deps, input);
  if (existsSync(path.join(deps.config.dataDir, 'PG_VERSION')))
    throw ApplicationFailure.nonRetryable(
      `host ${deps.config.hostId} already has a data folder; a restore drill restores onto a fresh host only`,
      FAILURE_TYPES.verification,
    );
  const { backupLabel, seconds } = await heartbeatWhile('restore (fetch)', (signal) =>
    backupTool(deps, input.store, input.tool).restore(input.target, signal),
  );
  return { backupLabel, fetchSeconds: seconds };
}

/** How a recovery went, timed by the server's log: replay from start to "redo done", promote from there to ready. */
export interface RecoveryOutcome {
  ok: boolean;
  detail: string;
  replaySeconds: number | null;
  promoteSeconds: number | null;
  stoppedAt: string | null;
  lastTransactionAt: string | null;
  restoredSegments: number;
  /**
   * The server's FATAL where recovery ended with one (a missing segment, settings the backup cannot recover under):
   * the same backup and settings end so again, so it is not retried. Absent in outcomes recorded before it.
   */
  fatal?: string | null;
}

const POLL_MS = 100;

/** What a restored server starts with: the lab's and the spec's settings, apart; and how long recovery may take. */
export interface RecoverInput extends HostInput, Pick<LabConfigInput, 'server' | 'user'> {
  timeoutSeconds: number;
}

/** Bytes of the recovery log parsed at most: its start (the restored segments) and far beyond a drill's recovery. */
const RECOVERY_LOG_BYTES = 16 * 1024 * 1024;

/**
 * The restored server's log so far, parsed. It is in the postgres user's log folder: read through the file guard, so
 * a link planted in its place is refused (LabPathError, non-retryable), never followed.
 */
export function readRecoveryLog(logFile: string): ReturnType<typeof parseRecoveryLog> {
  return parseRecoveryLog(readLabFile(logFile, { maxBytes: RECOVERY_LOG_BYTES }) ?? '');
}

/**
 * What a recovery whose server is gone says: the log's FATAL when it has one, as a failed recovery says it (the server
 * can write its FATAL and exit between the poll's read of the log and its check that the server runs: a drill on a
 * loaded machine then said "the server exited during recovery" without the reason, CI 2026-12-05), else the log's last
 * lines (`lastLines`).
 */
export function exitedRecoveryDetail(logText: string, lastLines: string): string {
  const fatal = parseRecoveryLog(logText).fatal;
  return fatal ? `recovery failed: ${fatal.message}` : `the server exited during recovery:\n${lastLines}`;
}

/**
 * Starts the restored server and waits, at most timeoutSeconds, until recovery has reached its target and the
 * server accepts writes, or until recovery fails (the server exits: a missing WAL segment ends recovery before
 * its target). Returns the outcome either way; a failed recovery is a verdict, not an error to retry.
 */
export async function recoverFromBackup(deps: HostDeps, input: RecoverInput): Promise<RecoveryOutcome> {
  assertHost(deps, input);
  const ctx = Context.current();
  // The restored server archives nothing (the tool's recovery settings turn archiving off) and has no peers.
  const lab = labConfig(deps, { server: input.server, user: input.user });
  closeSocketDir(deps);
  writeLabConfig(deps, lab);
  const logFile = path.join(deps.config.hostDir, 'logs', 'recovery.log');
  removeLabFile(logFile);
  const started = Date.now();
  await pgCtl(deps, ['start', '-W', '-l', logFile]);
  const deadline = started + input.timeoutSeconds * 1000;
  let lastAliveCheck = 0;
  for (;;) {
    const log = readRecoveryLog(logFile);
    ctx.heartbeat({ step: 'recovery', restoredSegments: log.restoredSegments.length });
    const base = {
      stoppedAt: log.stopped?.at ?? null,
      lastTransactionAt: log.lastTransactionAt,
      restoredSegments: new Set(log.restoredSegments).size,
    };
    if (log.readyAt && log.redoDoneAt) {
      return {
        ok: true,
        detail: [log.stopped?.message ?? `replayed the archive to ${log.redoDoneLsn}`, `new timeline ${log.newTimeline ?? '?'}`].join('; '),
        replaySeconds: (Date.parse(log.redoDoneAt) - started) / 1000,
        promoteSeconds: (Date.parse(log.readyAt) - Date.parse(log.redoDoneAt)) / 1000,
        ...base,
      };
    }
    if (log.fatal) {
      await stopPostgres(deps, { hostId: input.hostId, mode: 'immediate' }).catch(() => undefined);
      return { ok: false, detail: `recovery failed: ${log.fatal.message}`, replaySeconds: null, promoteSeconds: null, ...base, fatal: log.fatal.message };
    }
    if (Date.now() - lastAliveCheck > 1_000) {
      lastAliveCheck = Date.now();
      if (Date.now() - started > 2_000 && !(await isRunning(deps))) {
        const text = readLabFile(logFile, { maxBytes: RECOVERY_LOG_BYTES }) ?? '';
        return {
          ok: false,
          detail: exitedRecoveryDetail(text, tail(logFile, 10)),
          replaySeconds: null,
          promoteSeconds: null,
          ...base,
          fatal: parseRecoveryLog(text).fatal?.message ?? null,
        };
      }
    }
    if (Date.now() > deadline) {
      await stopPostgres(deps, { hostId: input.hostId, mode: 'immediate' }).catch(() => undefined);
      return {
        ok: false,
        detail: `recovery did not finish within ${input.timeoutSeconds} s (restoreTimeoutSeconds); last log lines:\n${tail(logFile, 10)}`,
        replaySeconds: null,
        promoteSeconds: null,
        ...base,
      };
    }
    await ctx.sleep(POLL_MS);
  }
}

/** Segments expected between two (inclusive) on one timeline that the archive does not hold. */
export function missingSegments(archived: string[], from: string, to: string, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): string[] {
  const a = parseSegmentName(from, segmentBytes);
  const b = parseSegmentName(to, segmentBytes);
  if (!a || !b) throw new Error(`not WAL segment names: ${from}, ${to}`);
  const have = new Set(archived);
  const missing: string[] = [];
  for (let s = a.segno; s <= b.segno; s++) {
    const name = segmentName(a.timeline, s, segmentBytes);
    if (!have.has(name)) missing.push(name);
  }
  return missing;
}

/** The tool's repository check and how long it took. */
export type TimedRepositoryCheck = RepositoryCheck & { seconds: number };

export interface ArchiveCheck {
  continuity: { ok: boolean; from: string; to: string; checked: number; missing: string[] };
  repository: TimedRepositoryCheck;
}

/** Runs the tool's repository check, timed. */
async function timedCheck(tool: BackupTool, throughSegment: string, signal: AbortSignal): Promise<TimedRepositoryCheck> {
  const started = Date.now();
  const check = await tool.checkRepository(throughSegment, signal);
  return { ...check, seconds: (Date.now() - started) / 1000 };
}

/**
 * The archive as a restore needs it: every segment from the backup's first to `to` present (the repository check
 * reads back the files that exist, not the ones that are missing), and the repository check itself.
 */
export async function checkArchive(deps: HostDeps, input: BackupStoreInput & { from: string; to: string }): Promise<ArchiveCheck> {
  assertHost(deps, input);
  const tool = backupTool(deps, input.store, input.tool);
  return heartbeatWhile('archive check', async (signal) => {
    const archived = (await tool.archivedWal(signal)).map((w) => w.segment);
    const missing = missingSegments(archived, input.from, input.to);
    const checked = Number(parseSegmentName(input.to)!.segno - parseSegmentName(input.from)!.segno + 1n);
    return {
      continuity: { ok: missing.length === 0, from: input.from, to: input.to, checked, missing },
      repository: await timedCheck(tool, input.to, signal),
    };
  });
}

/**
 * The tool's own check of the archive through one segment, across timelines (WAL-G's wal-verify follows the history
 * files back to the earliest backup): the failover drill's check after its rounds. Reads the store only.
 */
export async function checkRepository(deps: HostDeps, input: BackupStoreInput & { throughSegment: string }): Promise<TimedRepositoryCheck> {
  assertHost(deps, input);
  return heartbeatWhile('repository check', (signal) => timedCheck(backupTool(deps, input.store, input.tool), input.throughSegment, signal));
}

/**
 * Fault injection: removes the first archived segment after `after` (the backup's last) and not past `upTo`,
 * so a restore to the target needs a segment the archive no longer has.
 */
export async function removeArchivedSegment(
  deps: HostDeps,
  input: BackupStoreInput & { after: string; upTo: string },
): Promise<string> {
  assertHost(deps, input);
  const tool = backupTool(deps, input.store, input.tool);
  const candidates: ArchivedWal[] = (await tool.archivedWal()).filter((w) => w.segment > input.after && w.segment <= input.upTo);
  if (!candidates.length)
    throw ApplicationFailure.nonRetryable(
      `inject.missingWalSegment: no archived segment lies after the backup (${input.after}) and before the target (${input.upTo}); raise workload.beforeSeconds`,
      FAILURE_TYPES.invalidSpec,
    );
  await tool.removeArchivedSegment(candidates[0]);
  return candidates[0].segment;
}
