/**
 * What the drills and experiments need from a backup tool: an archive command for archive_command, a base backup,
 * a restore into an empty data folder at a recovery target, a check of the repository, and a look at the archived
 * WAL. Two implementations: WAL-G (activities/lib/walg.ts) and pgBackRest (activities/lib/pgbackrest.ts).
 */
import type { BackupCompression, BackupKind } from '../../common/backup-store';
import type { BackupInfo } from '../../common/drill-result';
import type { HostConfig } from '../../infra/providers/host-provider';

/** Where recovery stops: at a time, at an LSN, or at the end of the archived WAL. */
export type RecoveryTarget = { type: 'time'; time: string } | { type: 'lsn'; lsn: string } | { type: 'latest' };

/**
 * The repository check, as the tool does it. pgBackRest's verify reads back every archived WAL file and every
 * backup file; WAL-G's wal-verify checks that the archived WAL is continuous and on the right timeline.
 */
export interface RepositoryCheck {
  ok: boolean;
  /** The tool's own verdict words ("ok", "integrity OK, timeline OK"). */
  status: string;
  /** One line a person reads: the tool, what it checked and what it found. */
  detail: string;
  walChecked: number;
  walInvalid: number;
  /** Backup files read back and checked; null when the tool checks WAL only (WAL-G). */
  backupFilesChecked: number | null;
  backupFilesInvalid: number | null;
  /** Segments the tool itself found missing from the archive; null when it does not look for gaps (pgBackRest). */
  missingWal: string[] | null;
}

/** One archived WAL segment, by name, as the tool stores it. */
export interface ArchivedWal {
  segment: string;
  /** The tool's own name for the file (what removeArchivedSegment deletes). */
  file: string;
  bytes: number;
}

/** The host a tool runs on: its folders, its server, and the OS user that runs the tool (root agents). */
export interface BackupToolHost extends Pick<HostConfig, 'hostDir' | 'dataDir' | 'socketDir' | 'postgres'> {
  runAs: { uid?: number; gid?: number };
}

/** How the tool writes: the compression of archived WAL and base backups alike. */
export interface BackupToolSettings {
  compression: BackupCompression;
}

export interface BackupTool {
  readonly name: string;
  version(): Promise<string>;
  /** Writes the tool's configuration for this host; idempotent. */
  configure(settings: BackupToolSettings): Promise<void>;
  /** Server settings that archive every completed WAL segment with the tool. */
  archiveSettings(archiveTimeoutSeconds: number): Record<string, string>;
  /** Creates the repository for this cluster (idempotent) and checks that the server's archiving reaches it. */
  initRepository(signal?: AbortSignal): Promise<void>;
  /** A base backup of the running server: everything, or what changed since the previous backup. */
  backup(kind: BackupKind, signal?: AbortSignal): Promise<BackupInfo>;
  /** Restores the newest backup into the host's (empty) data folder with recovery settings for the target; times the copy. */
  restore(target: RecoveryTarget, signal?: AbortSignal): Promise<{ backupLabel: string; seconds: number }>;
  /** Checks the repository; a restore will need every archived segment up to `throughSegment`. */
  checkRepository(throughSegment: string, signal?: AbortSignal): Promise<RepositoryCheck>;
  archivedWal(signal?: AbortSignal): Promise<ArchivedWal[]>;
  /** Deletes one archived segment (fault injection: proves a broken archive is caught). */
  removeArchivedSegment(wal: ArchivedWal): Promise<void>;
}

/** The user a tool runs as, as a file owner; null when it runs as the agent's own user. */
export function ownerOf(runAs: BackupToolHost['runAs']): { uid: number; gid: number } | null {
  return runAs.uid === undefined ? null : { uid: runAs.uid, gid: runAs.gid ?? runAs.uid };
}
