/**
 * What the drills and experiments need from a backup tool: an archive command for archive_command, a base backup,
 * a restore into an empty data folder at a recovery target, a check of the repository, and a look at the archived
 * WAL. pgBackRest implements it (activities/lib/pgbackrest.ts); WAL-G could, behind the same interface.
 */
import type { BackupInfo } from '../../common/drill-result';

/** Where recovery stops: at a time, at an LSN, or at the end of the archived WAL. */
export type RecoveryTarget = { type: 'time'; time: string } | { type: 'lsn'; lsn: string } | { type: 'latest' };

/** The repository check: every archived WAL file and every backup file read back and checked. */
export interface RepositoryCheck {
  ok: boolean;
  status: string;
  walChecked: number;
  walInvalid: number;
  backupFilesChecked: number;
  backupFilesInvalid: number;
}

/** One archived WAL segment, by name, as the tool stores it. */
export interface ArchivedWal {
  segment: string;
  /** The tool's own name for the file (what removeArchivedSegment deletes). */
  file: string;
  bytes: number;
}

export interface BackupTool {
  readonly name: string;
  version(): Promise<string>;
  /** Writes the tool's configuration for this host; idempotent. */
  configure(): Promise<void>;
  /** Server settings that archive every completed WAL segment with the tool. */
  archiveSettings(archiveTimeoutSeconds: number): Record<string, string>;
  /** Creates the repository for this cluster (idempotent) and checks that the server's archiving reaches it. */
  initRepository(signal?: AbortSignal): Promise<void>;
  /** A full base backup of the running server. */
  backup(signal?: AbortSignal): Promise<BackupInfo>;
  /** Restores the newest backup into the host's (empty) data folder with recovery settings for the target; times the copy. */
  restore(target: RecoveryTarget, signal?: AbortSignal): Promise<{ backupLabel: string; seconds: number }>;
  checkRepository(signal?: AbortSignal): Promise<RepositoryCheck>;
  archivedWal(signal?: AbortSignal): Promise<ArchivedWal[]>;
  /** Deletes one archived segment (fault injection: proves a broken archive is caught). */
  removeArchivedSegment(wal: ArchivedWal): Promise<void>;
}
