/**
 * Where published data sets live in a folder store, and their records (issue 31). Below the store's folder (within
 * the lab's backups folder, backupStoreFolder), in `_datasets` (a folder name no run folder can take: ids.ts reserves
 * it and escapeRunId never writes it):
 *
 *   _datasets/<key>.claim.json     the builder's owner record, linked into place with O_EXCL: one builder per key
 *   _datasets/<key>/               the WAL-G repository (the Postgres OS user's; hosts write it)
 *   _datasets/<key>.manifest.json  written LAST by the control worker, exclusively: only then is the set usable
 *
 * The key is the only name that comes from outside, and it must be a key dataSetKey makes (a hash, one safe segment).
 */
import path from 'node:path';
import type { OwnerRecord } from '../common/core/claims';
import { DATA_SETS_FOLDER, isDataSetKey } from '../common/core/ids';
import { manifestProblems, type DataSetManifest } from '../common/input/data-set';
import type { ResolvedBackupStore } from '../common/input/backup-store';
import type { BackupStoreSpec } from '../common/input/spec';
import { backupStoreFolder } from './backup-stores';
import { readClaimFile } from './claims';
import { LabPathError, listLabDir, readLabFile, removeLabFile, removeLabTree } from './lab-fs';

export { DATA_SETS_FOLDER };

/** The data sets' folder of a folder store. */
export function dataSetsDir(store: BackupStoreSpec, hostsDir: string): string {
  if (store.kind !== 'folder') throw new LabPathError('data sets are kept in folder stores in this version; an S3 store loads every host');
  return path.join(backupStoreFolder(store, hostsDir), DATA_SETS_FOLDER);
}

/** A key that came in, refused unless dataSetKey could have made it (it becomes a path segment). */
export function checkedKey(key: unknown): string {
  if (!isDataSetKey(key)) throw new LabPathError(`${JSON.stringify(key)} is not a data set key (ds- and 26 base-32 characters)`);
  return key;
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
  const text = readLabFile(paths.manifest, { maxBytes: 1024 * 1024 });
  if (text === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${paths.manifest} is not JSON; remove the set (storage-lab datasets rm ${key})`);
  }
  const problems = manifestProblems(parsed, key);
  if (problems.length) throw new Error(`${paths.manifest} ${problems.join('; ')}; remove the set (storage-lab datasets rm ${key})`);
  return parsed as DataSetManifest;
}

/** The builder's claim, or null. */
export function readDataSetClaim(paths: DataSetPaths): OwnerRecord | null {
  return readClaimFile(paths.claim);
}

/** One set of a store as `datasets list` and the sweeper see it. */
export interface DataSetEntry {
  key: string;
  state: 'published' | 'building' | 'broken';
  manifest: DataSetManifest | null;
  claim: OwnerRecord | null;
  problem?: string;
}

/** Every set of a folder store: published (a manifest), building (a claim, no manifest yet) or broken (unreadable). */
export function listDataSets(store: BackupStoreSpec, hostsDir: string): DataSetEntry[] {
  const dir = dataSetsDir(store, hostsDir);
  const names = listLabDir(dir) ?? [];
  const keys = new Set<string>();
  for (const n of names) {
    const key = n.replace(/\.(claim|manifest)\.json$/, '');
    if (isDataSetKey(key)) keys.add(key);
  }
  return [...keys].sort().map((key) => {
    const paths = dataSetPaths(store, hostsDir, key);
    try {
      const manifest = readManifest(paths, key);
      const claim = readDataSetClaim(paths);
      return { key, state: manifest ? 'published' : 'building', manifest, claim };
    } catch (err) {
      return { key, state: 'broken', manifest: null, claim: null, problem: (err as Error).message };
    }
  });
}

/** Removes one set: the manifest first (no run starts restoring it), then its backup, then its claim. Says what it did. */
export async function removeDataSet(store: BackupStoreSpec, hostsDir: string, key: string, why: string): Promise<string> {
  const paths = dataSetPaths(store, hostsDir, key);
  removeLabFile(paths.manifest);
  await removeLabTree(paths.repository);
  removeLabFile(paths.claim);
  return `removed data set ${key} (${why})`;
}
