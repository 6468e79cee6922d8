/**
 * Where published data sets live, and their records (issue 31), in either kind of store. In a folder store, below the
 * store's folder (within the lab's backups folder, backupStoreFolder); in an S3 store, below the store's key prefix;
 * both in `_datasets` (a name no run folder can take: ids.ts reserves it and escapeRunId never writes it):
 *
 *   _datasets/<key>.claim.json     the builder's owner record, made exclusively (O_EXCL, or a put with
 *                                  If-None-Match: *): one builder per key
 *   _datasets/<key>/               the WAL-G repository (a folder the Postgres OS user writes, or WALG_S3_PREFIX)
 *   _datasets/<key>.manifest.json  written LAST by the control worker, exclusively: only then is the set usable
 *
 * The key is the only name that comes from outside, and it must be a key dataSetKey makes (a hash, one safe segment).
 * The S3 calls live in lib/s3-data-sets.ts, loaded on first use: a folder store never loads the AWS SDK.
 */
import path from 'node:path';
import type { OwnerRecord } from '../common/core/claims';
import { DATA_SETS_FOLDER, isDataSetKey, s3DataSetsPrefix } from '../common/core/ids';
import type { DataSetManifest } from '../common/input/data-set';
import { backupStoreLocation, type ResolvedBackupStore } from '../common/input/backup-store';
import { canonicalJsonText } from '../common/input/data-set';
import { hex, sha256 } from '../common/core/sha256';
import { BackupStoreSchema, type BackupStoreSpec } from '../common/input/spec';
import { backupStoreFolder } from './backup-stores';
import { claimFile, readClaimFile } from './claims';
import { LabPathError, listLabDir, makeLabDir, readLabFile, removeLabFile, removeLabTree, writeLabFile } from './lab-fs';
import { postgresOsUser } from './postgres-binaries';
import {
  MANIFEST_MAX_BYTES,
  checkedKey,
  parseManifest,
  s3DataSetPathsAt,
  s3DataSetStore,
  type DataSetCatalog,
  type DataSetRecords,
  type S3DataSetPaths,
} from './data-set-layout';

export { MANIFEST_MAX_BYTES, checkedKey, parseManifest, s3DataSetPathsAt, s3DataSetStore, type DataSetCatalog, type DataSetRecords, type S3DataSetPaths };

export { DATA_SETS_FOLDER, s3DataSetsPrefix };

/** The data sets' folder of a folder store. */
export function dataSetsDir(store: BackupStoreSpec, hostsDir: string): string {
  if (store.kind !== 'folder') throw new LabPathError(`an ${store.kind} store has no data sets folder (its sets are S3 objects: s3DataSetPathsAt)`);
  return path.join(backupStoreFolder(store, hostsDir), DATA_SETS_FOLDER);
}

/** The files of one set. */
export interface DataSetPaths {
  repository: string;
  claim: string;
  manifest: string;
}

export function dataSetPaths(store: BackupStoreSpec, hostsDir: string, key: string): DataSetPaths {
  return dataSetPathsAt(path.join(dataSetsDir(store, hostsDir), checkedKey(key)), key);
}

/**
 * The files of the set whose repository a host is handed (it knows the folder, not the store): refused unless the
 * folder is `<...>/_datasets/<key>`, normalized, for a key dataSetKey could have made. The one place the records'
 * names are made.
 */
export function dataSetPathsAt(repository: string, key: string): DataSetPaths {
  const k = checkedKey(key);
  if (path.basename(repository) !== k || path.basename(path.dirname(repository)) !== DATA_SETS_FOLDER || path.normalize(repository) !== repository || !path.isAbsolute(repository))
    throw new LabPathError(`${JSON.stringify(repository)} is not that set's repository (an absolute <store>/${DATA_SETS_FOLDER}/${k})`);
  const dir = path.dirname(repository);
  return { repository, claim: path.join(dir, `${k}.claim.json`), manifest: path.join(dir, `${k}.manifest.json`) };
}

/** The set's repository as the backup tool takes it. */
export function dataSetStore(paths: DataSetPaths): ResolvedBackupStore {
  return { kind: 'folder', path: paths.repository };
}

/** A manifest as read and checked, or null when there is none; one that is not well formed is an error (never used). */
export function readManifest(paths: DataSetPaths, key: string): DataSetManifest | null {
  const text = readLabFile(paths.manifest, { maxBytes: MANIFEST_MAX_BYTES });
  return text === null ? null : parseManifest(text, key, paths.manifest);
}

/** The builder's claim, or null. */
export function readDataSetClaim(paths: DataSetPaths): OwnerRecord | null {
  return readClaimFile(paths.claim);
}

/** One folder set's records (the host's and the control worker's). */
export function folderDataSetRecords(paths: DataSetPaths, key: string): DataSetRecords {
  const store = dataSetStore(paths);
  return {
    key,
    store,
    location: backupStoreLocation(store),
    manifestLocation: paths.manifest,
    claimLocation: paths.claim,
    readManifest: async () => readManifest(paths, key),
    hasManifest: async () => readLabFile(paths.manifest, { maxBytes: 1 }) !== null,
    readClaim: async () => readDataSetClaim(paths),
    claim: async (record) => claimFile(paths.claim, record),
    async writeManifest(manifest) {
      try {
        writeLabFile(paths.manifest, `${JSON.stringify(manifest, null, 2)}\n`, { exclusive: true, mode: 0o644 });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        return false;
      }
    },
    async prepareRepository() {
      makeLabDir(paths.repository, { marker: true, owner: postgresOsUser(), mode: 0o750 });
    },
    removeManifest: async () => removeLabFile(paths.manifest),
    async removeRepository() {
      await removeLabTree(paths.repository);
      return 'its backup folder';
    },
    removeClaim: async () => removeLabFile(paths.claim),
  };
}

/** The sets of a folder store. */
function folderCatalog(store: BackupStoreSpec, hostsDir: string): DataSetCatalog {
  const dir = dataSetsDir(store, hostsDir);
  return {
    where: dir,
    prepare: async () => void makeLabDir(dir, { marker: true }),
    async keys() {
      const keys = new Set<string>();
      for (const n of listLabDir(dir) ?? []) {
        const key = n.replace(/\.(claim|manifest)\.json$/, '');
        if (isDataSetKey(key)) keys.add(key);
      }
      return [...keys].sort();
    },
    records: (key) => folderDataSetRecords(dataSetPaths(store, hostsDir, key), key),
  };
}

/** The sets of the spec's store: a folder store's here, an S3 store's through the AWS SDK (loaded on first use). */
export async function dataSetCatalog(store: BackupStoreSpec, hostsDir: string): Promise<DataSetCatalog> {
  if (store.kind === 'folder') return folderCatalog(store, hostsDir);
  return (await import('./s3-data-sets')).s3DataSetCatalog(store);
}

/**
 * The records of the set whose repository a host is handed, after the path checks (dataSetPathsAt,
 * s3DataSetPathsAt): a LabPathError when the store is not a set's repository.
 */
export async function dataSetRecordsAt(store: ResolvedBackupStore, key: string): Promise<DataSetRecords> {
  if (store.kind === 'folder') return folderDataSetRecords(dataSetPathsAt(store.path, key), key);
  const paths = s3DataSetPathsAt(store, key);
  return (await import('./s3-data-sets')).s3DataSetRecords(store, paths, key);
}

/**
 * The S3 stores this lab has claimed data sets in, one file each below the default folder store's `_datasets` (a
 * name no key takes), written once at a claim: the sweeper removes their expired sets as it does the folder's.
 */
const S3_STORES_FOLDER = 's3-stores';

function s3StoresDir(hostsDir: string): string {
  return path.join(dataSetsDir({ kind: 'folder' }, hostsDir), S3_STORES_FOLDER);
}

/** Records an S3 store as one the lab keeps data sets in (idempotent: one file per store, made exclusively). */
export function recordS3DataSetStore(store: Extract<BackupStoreSpec, { kind: 's3' }>, hostsDir: string): void {
  const text = canonicalJsonText({ kind: 's3', bucket: store.bucket, prefix: store.prefix, region: store.region, ...(store.endpoint ? { endpoint: store.endpoint } : {}) });
  const dir = s3StoresDir(hostsDir);
  makeLabDir(path.dirname(dir), { marker: true });
  makeLabDir(dir);
  try {
    writeLabFile(path.join(dir, `${hex(sha256(text)).slice(0, 32)}.json`), `${text}\n`, { exclusive: true, mode: 0o644 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** The S3 stores recorded by recordS3DataSetStore, each checked by the spec's rules (a file that is not one is skipped). */
export function recordedS3DataSetStores(hostsDir: string): Extract<BackupStoreSpec, { kind: 's3' }>[] {
  const dir = s3StoresDir(hostsDir);
  const out: Extract<BackupStoreSpec, { kind: 's3' }>[] = [];
  for (const name of (listLabDir(dir) ?? []).filter((n) => /^[0-9a-f]{32}\.json$/.test(n)).sort()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readLabFile(path.join(dir, name), { maxBytes: 4096 }) ?? 'null');
    } catch {
      continue;
    }
    const store = BackupStoreSchema.safeParse(parsed);
    if (store.success && store.data.kind === 's3') out.push(store.data);
  }
  return out;
}

/** One set of a store as `datasets list` and the sweeper see it. */
export interface DataSetEntry {
  key: string;
  state: 'published' | 'building' | 'broken';
  manifest: DataSetManifest | null;
  claim: OwnerRecord | null;
  problem?: string;
}

/** Every set of a store: published (a manifest), building (a claim, no manifest yet) or broken (unreadable). */
export async function listDataSets(catalog: DataSetCatalog): Promise<DataSetEntry[]> {
  const out: DataSetEntry[] = [];
  for (const key of await catalog.keys()) {
    const records = catalog.records(key);
    try {
      const manifest = await records.readManifest();
      const claim = await records.readClaim();
      out.push({ key, state: manifest ? 'published' : 'building', manifest, claim });
    } catch (err) {
      out.push({ key, state: 'broken', manifest: null, claim: null, problem: (err as Error).message });
    }
  }
  return out;
}

/** Removes one set: the manifest first (no run starts restoring it), then its backup, then its claim. Says what it did. */
export async function removeDataSet(catalog: DataSetCatalog, key: string, why: string, progress?: (removedSoFar: number) => void): Promise<string> {
  const records = catalog.records(checkedKey(key));
  await records.removeManifest();
  const repository = await records.removeRepository(progress);
  await records.removeClaim();
  return `removed data set ${key} from ${catalog.where} (${why}): its manifest, ${repository}, its claim`;
}
