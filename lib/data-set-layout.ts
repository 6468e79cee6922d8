/**
 * The names of a published data set's records in either kind of store, and the interface both kinds implement
 * (issue 31; lib/data-sets.ts says the layout). Pure of any store: lib/data-sets.ts (folders) and lib/s3-data-sets.ts
 * (S3, loaded on first use) both build on it.
 */
import type { OwnerRecord } from '../common/core/claims';
import { DATA_SETS_FOLDER, isDataSetKey, s3DataSetsPrefix } from '../common/core/ids';
import { manifestProblems, type DataSetManifest } from '../common/input/data-set';
import type { ResolvedBackupStore } from '../common/input/backup-store';
import { AwsRegionField, EndpointField, KeyPrefixField, S3BucketField } from '../common/input/fields';
import type { BackupStoreSpec } from '../common/input/spec';
import { LabPathError } from './lab-fs';

/** A key that came in, refused unless dataSetKey could have made it (it becomes a path segment). */
export function checkedKey(key: unknown): string {
  if (!isDataSetKey(key)) throw new LabPathError(`${JSON.stringify(key)} is not a data set key (ds- and 26 base-32 characters)`);
  return key;
}

/** A manifest's text as read from `where` (input like any other), checked; one that is not well formed is an error. */
export function parseManifest(text: string, key: string, where: string): DataSetManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${where} is not JSON; remove the set (storage-lab datasets rm ${key})`);
  }
  const problems = manifestProblems(parsed, key);
  if (problems.length) throw new Error(`${where} ${problems.join('; ')}; remove the set (storage-lab datasets rm ${key})`);
  return parsed as DataSetManifest;
}

/** The most a manifest may hold (it is read whole). */
export const MANIFEST_MAX_BYTES = 1024 * 1024;

/** An S3 set's objects: the bucket, its repository's key prefix (no leading or trailing "/"), its records' keys. */
export interface S3DataSetPaths {
  bucket: string;
  repositoryPrefix: string;
  claimKey: string;
  manifestKey: string;
}

/** The repository of set `key` in an S3 store, as a host's backup tool takes it (WALG_S3_PREFIX s3://bucket/path). */
export function s3DataSetStore(store: Extract<BackupStoreSpec, { kind: 's3' }>, key: string): Extract<ResolvedBackupStore, { kind: 's3' }> {
  return {
    kind: 's3',
    bucket: store.bucket,
    path: `/${s3DataSetsPrefix(store.prefix)}/${checkedKey(key)}`,
    region: store.region,
    ...(store.endpoint ? { endpoint: store.endpoint } : {}),
  };
}

/**
 * The objects of the S3 set whose repository a host is handed (it knows the store, not the spec): refused unless the
 * path is exactly `/<prefix>/_datasets/<key>` for a key dataSetKey could have made, with a prefix the spec's rules
 * accept (no "." or ".." segment, no empty one), and a bucket, region and endpoint the spec's fields accept.
 */
export function s3DataSetPathsAt(store: Extract<ResolvedBackupStore, { kind: 's3' }>, key: string): S3DataSetPaths {
  const k = checkedKey(key);
  const fields: [string, { safeParse(v: unknown): { success: boolean } }, unknown][] = [
    ['bucket', S3BucketField, store.bucket],
    ['region', AwsRegionField, store.region],
    ...(store.endpoint === undefined ? [] : ([['endpoint', EndpointField, store.endpoint]] as [string, typeof EndpointField, unknown][])),
  ];
  for (const [name, field, value] of fields)
    if (!field.safeParse(value).success) throw new LabPathError(`the S3 store's ${name} ${JSON.stringify(value)} is not one the spec accepts`);
  const where = typeof store.path === 'string' ? store.path : '';
  const tail = `/${DATA_SETS_FOLDER}/${k}`;
  const prefix = where.endsWith(tail) ? where.slice(1, -tail.length) : null;
  if (!where.startsWith('/') || prefix === null || (prefix !== '' && !KeyPrefixField.safeParse(prefix).success))
    throw new LabPathError(`${JSON.stringify(where)} is not that set's repository (/<prefix>/${DATA_SETS_FOLDER}/${k}, a prefix of safe segments)`);
  const base = s3DataSetsPrefix(prefix);
  return { bucket: store.bucket, repositoryPrefix: `${base}/${k}`, claimKey: `${base}/${k}.claim.json`, manifestKey: `${base}/${k}.manifest.json` };
}

/**
 * One set's records in its store, whatever the kind: the manifest (written last), the builder's claim, and the
 * repository the host's backup tool writes and reads. Every method is a call on the store: nothing is cached.
 */
export interface DataSetRecords {
  key: string;
  /** The repository as the backup tool takes it (what a host is handed). */
  store: ResolvedBackupStore;
  /** Where the repository is, for people and owner records: a folder or an s3:// URL. */
  location: string;
  manifestLocation: string;
  claimLocation: string;
  /** The manifest as read and checked, or null; one that is not well formed is an error. */
  readManifest(): Promise<DataSetManifest | null>;
  /** Whether a manifest is there, well formed or not (the builder's undo keeps whatever is published). */
  hasManifest(): Promise<boolean>;
  readClaim(): Promise<OwnerRecord | null>;
  /** Claims the key exclusively; the record in force (ours, or the one there already). */
  claim(record: OwnerRecord): Promise<OwnerRecord>;
  /** Writes the manifest exclusively; false when one was there already. */
  writeManifest(manifest: DataSetManifest): Promise<boolean>;
  /** Makes the repository ready for the host (a folder for the Postgres OS user; nothing in S3). */
  prepareRepository(): Promise<void>;
  removeManifest(): Promise<void>;
  /**
   * Removes every file or object of the repository; says how many objects went, where it counts them. `progress` is
   * called after each page of objects removed (the caller heartbeats).
   */
  removeRepository(progress?: (removedSoFar: number) => void): Promise<string>;
  removeClaim(): Promise<void>;
}

/** The data sets of one store: the keys it holds and each one's records. */
export interface DataSetCatalog {
  /** Where the store's sets are, for people. */
  where: string;
  /** Makes the sets' folder (a folder store's; nothing in S3). */
  prepare(): Promise<void>;
  /** Every key with a record or a repository there (names that are not keys are ignored). */
  keys(): Promise<string[]>;
  records(key: string): DataSetRecords;
}

