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
