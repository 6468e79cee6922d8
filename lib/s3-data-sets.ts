/**
 * Published data sets in an S3 store (issue 31; lib/data-sets.ts says the layout): the claim and the manifest are
 * objects put with If-None-Match: * (only the first put of each succeeds), the repository is the WAL-G prefix the
 * hosts write and read. Apart from lib/data-sets.ts so that a folder store never loads the AWS SDK: the control worker
 * and a host agent import this module only for an S3 store.
 */
import { DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { OwnerRecord } from '../common/core/claims';
import { backupStoreLocation, type ResolvedBackupStore } from '../common/input/backup-store';
import type { DataSetManifest } from '../common/input/data-set';
import type { BackupStoreSpec } from '../common/input/spec';
import { awsClients } from './aws-clients';
import { awsErrorCode } from './aws-errors';
import { isDataSetKey, s3DataSetsPrefix } from '../common/core/ids';
import { MANIFEST_MAX_BYTES, parseManifest, s3DataSetPathsAt, s3DataSetStore, type DataSetCatalog, type DataSetRecords, type S3DataSetPaths } from './data-set-layout';
import { claimS3Object, readS3Claim } from './s3-claims';

type S3Store = Extract<ResolvedBackupStore, { kind: 's3' }>;

/** The client of a store's region and endpoint, with this process's credentials (its role, or its keys). */
function clientOf(store: { region: string; endpoint?: string }): S3Client {
  return awsClients({ region: store.region, ...(store.endpoint ? { endpoint: store.endpoint } : {}) }).s3;
}

/** The text of an object at most `maxBytes` long, or null when there is none. */
async function readObject(s3: S3Client, bucket: string, key: string, maxBytes: number): Promise<string | null> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    if ((out.ContentLength ?? 0) > maxBytes) {
      out.Body?.transformToWebStream().cancel().catch(() => undefined);
      throw new Error(`s3://${bucket}/${key} holds ${out.ContentLength} bytes, more than a manifest may (${maxBytes})`);
    }
    return (await out.Body?.transformToString('utf8')) ?? '';
  } catch (err) {
    if (awsErrorCode(err) === 'NoSuchKey') return null;
    throw err;
  }
}

async function deleteObject(s3: S3Client, bucket: string, key: string): Promise<void> {
  // S3 answers a delete of a key that is not there with success: removal is idempotent.
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
}

/** Removes every object below `prefix` ("<...>/<key>/"), a page (at most 1,000) at a time; how many went. */
async function deletePrefix(s3: S3Client, bucket: string, prefix: string, progress?: (removedSoFar: number) => void): Promise<number> {
  let removed = 0;
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    const keys = (page.Contents ?? []).map((o) => o.Key!).filter((k) => k.startsWith(prefix));
    if (keys.length) {
      const out = await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }));
      if (out.Errors?.length)
        throw new Error(`could not remove ${out.Errors.length} objects below s3://${bucket}/${prefix}, e.g. ${out.Errors[0].Key}: ${out.Errors[0].Code} ${out.Errors[0].Message ?? ''}`.trim());
      removed += keys.length;
      progress?.(removed);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return removed;
}

/** One S3 set's records (paths already checked: s3DataSetPathsAt). */
export function s3DataSetRecords(store: S3Store, paths: S3DataSetPaths, key: string, s3: S3Client = clientOf(store)): DataSetRecords {
  const { bucket } = paths;
  const url = (k: string) => `s3://${bucket}/${k}`;
  return {
    key,
    store,
    location: backupStoreLocation(store),
    manifestLocation: url(paths.manifestKey),
    claimLocation: url(paths.claimKey),
    async readManifest() {
      const text = await readObject(s3, bucket, paths.manifestKey, MANIFEST_MAX_BYTES);
      return text === null ? null : parseManifest(text, key, url(paths.manifestKey));
    },
    async hasManifest() {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: paths.manifestKey, MaxKeys: 1 }));
      return (page.Contents ?? []).some((o) => o.Key === paths.manifestKey);
    },
    readClaim: () => readS3Claim(s3, bucket, paths.claimKey),
    claim: (record: OwnerRecord) => claimS3Object(s3, bucket, paths.claimKey, record),
    async writeManifest(manifest: DataSetManifest) {
      try {
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: paths.manifestKey,
            Body: `${JSON.stringify(manifest, null, 2)}\n`,
            ContentType: 'application/json',
            IfNoneMatch: '*',
            ServerSideEncryption: 'AES256',
          }),
        );
        return true;
      } catch (err) {
        const code = awsErrorCode(err);
        // 412: a manifest is there already (a retry of ours: the caller reads it back); 409: a put of it is in flight.
        if (code === 'PreconditionFailed') return false;
        if (code === 'ConditionalRequestConflict') throw new Error(`another put of ${url(paths.manifestKey)} is in flight; try again`);
        throw err;
      }
    },
    // S3 has no folders: WAL-G creates the objects below the prefix.
    prepareRepository: async () => undefined,
    removeManifest: () => deleteObject(s3, bucket, paths.manifestKey),
    async removeRepository(progress) {
      const n = await deletePrefix(s3, bucket, `${paths.repositoryPrefix}/`, progress);
      return `${n} object${n === 1 ? '' : 's'} of its repository`;
    },
    removeClaim: () => deleteObject(s3, bucket, paths.claimKey),
  };
}

/** The sets of an S3 store: `<prefix>/_datasets/` in its bucket. */
export function s3DataSetCatalog(spec: Extract<BackupStoreSpec, { kind: 's3' }>): DataSetCatalog {
  const s3 = clientOf(spec);
  const base = s3DataSetsPrefix(spec.prefix);
  return {
    where: `s3://${spec.bucket}/${base}`,
    prepare: async () => undefined,
    async keys() {
      const keys = new Set<string>();
      let token: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket: spec.bucket, Prefix: `${base}/`, Delimiter: '/', ContinuationToken: token }));
        const names = [...(page.Contents ?? []).map((o) => o.Key ?? ''), ...(page.CommonPrefixes ?? []).map((p) => (p.Prefix ?? '').replace(/\/$/, ''))];
        for (const name of names) {
          const key = name.slice(base.length + 1).replace(/\.(claim|manifest)\.json$/, '');
          if (isDataSetKey(key)) keys.add(key);
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return [...keys].sort();
    },
    records(key: string) {
      const store = s3DataSetStore(spec, key);
      return s3DataSetRecords(store, s3DataSetPathsAt(store, key), key, s3);
    },
  };
}
