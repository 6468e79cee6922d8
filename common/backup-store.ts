/**
 * A backup store resolved for one run: the spec's store (a folder, or an S3 bucket) plus the run's own prefix, so
 * every run's backups and archived WAL live apart. Holds no secret: hosts reach S3 with their own credentials.
 */

export type ResolvedBackupStore =
  | { kind: 'folder'; /** Absolute folder every host of the run can reach. */ path: string }
  | { kind: 's3'; bucket: string; /** Key prefix of the run inside the bucket, starting with "/". */ path: string; region: string; endpoint?: string };

/** The backup tool's name for the cluster being backed up; one per repository, and each run has its own repository. */
export const BACKUP_STANZA = 'storage-lab';

/** Where the store is, for people: a folder path or an s3:// URL. */
export function backupStoreLocation(store: ResolvedBackupStore): string {
  return store.kind === 'folder' ? store.path : `s3://${store.bucket}${store.path}`;
}

/** The backup tools a host can run: WAL-G (the reference's) and Debian's pgBackRest. */
export const BACKUP_TOOLS = ['wal-g', 'pgbackrest'] as const;
export type BackupToolName = (typeof BACKUP_TOOLS)[number];

/** Compression methods by one name for both tools (each tool spells some differently in its own config). */
export const BACKUP_COMPRESSIONS = ['lz4', 'zstd', 'lzma', 'gzip', 'bzip2', 'none'] as const;
export type BackupCompression = (typeof BACKUP_COMPRESSIONS)[number];
export const DEFAULT_BACKUP_COMPRESSION: BackupCompression = 'lz4';

/** What each tool can write: WAL-G as built here has no brotli (cgo only) and writes no gzip or bzip2. */
export const TOOL_COMPRESSIONS: Record<BackupToolName, readonly BackupCompression[]> = {
  'wal-g': ['lz4', 'zstd', 'lzma', 'none'],
  pgbackrest: ['lz4', 'zstd', 'gzip', 'bzip2', 'none'],
};

/** A base backup of everything (full) or of what changed since the previous backup (delta: pgBackRest's "incr"). */
export type BackupKind = 'full' | 'delta';
