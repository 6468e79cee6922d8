/**
 * The backup tool of a host and the WAL archiving it implies. configureBackups leaves a record of the tool it
 * configured in the host folder; configurePostgres reads it and writes archive_command from it: the command a
 * server runs is always the lab's own, never a value that travelled in an activity's input.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { readLabFile } from '../../lib/lab-fs';
import path from 'node:path';
import { BACKUP_TOOLS, type BackupToolName, type ResolvedBackupStore } from '../../common/input/backup-store';
import { FAILURE_TYPES } from '../../common/core/errors';
import type { BackupTool } from '../../lib/backup-tool';
import { PgBackRest } from '../../lib/pgbackrest';
import { WalG } from '../../lib/walg';
import { asPostgresUser, type HostDeps } from './deps';

/** What configureBackups records: the tool and the store it was configured for. */
export interface BackupToolRecord {
  tool: BackupToolName;
  store: ResolvedBackupStore;
}

/** The backup tool of this host for a store. */
export function backupTool(deps: HostDeps, store: ResolvedBackupStore, tool: BackupToolName = 'pgbackrest'): BackupTool {
  const { config } = deps;
  const host = { hostDir: config.hostDir, dataDir: config.dataDir, socketDir: config.socketDir, postgres: config.postgres, runAs: asPostgresUser(deps) };
  return tool === 'wal-g' ? new WalG(host, store) : new PgBackRest(host, store);
}

/** Where configureBackups leaves its record (the host folder: it outlives a restored or re-cloned data folder). */
export function backupRecordFile(deps: HostDeps): string {
  return path.join(deps.config.hostDir, 'backup-tool.json');
}

/** The record configureBackups left, or null when it has not run on this host. */
export function readBackupRecord(deps: HostDeps): BackupToolRecord | null {
  const file = backupRecordFile(deps);
  const text = readLabFile(file);
  if (text === null) return null;
  const record = JSON.parse(text) as BackupToolRecord;
  if (!BACKUP_TOOLS.includes(record.tool)) throw new Error(`${file}: unknown backup tool ${JSON.stringify(record.tool)}`);
  return record;
}

/** archive_mode, archive_command and archive_timeout for the tool configureBackups set up on this host. */
export function archiveSettings(deps: HostDeps, archiveTimeoutSeconds: number): Record<string, string> {
  const record = readBackupRecord(deps);
  if (!record)
    throw ApplicationFailure.nonRetryable(
      `archiving: host ${deps.config.hostId} has no backup tool configured; configureBackups runs before configurePostgres asks for archiving`,
      FAILURE_TYPES.invalidSpec,
    );
  return backupTool(deps, record.store, record.tool).archiveSettings(archiveTimeoutSeconds);
}
