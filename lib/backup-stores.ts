/**
 * Where a run's backup store is: its own prefix of the spec's store, a folder below the lab's backups folder (never
 * anywhere else, whatever the input says) or a key prefix in S3; and the labels that tie a local store to its run.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedBackupStore } from '../common/input/backup-store';
import type { SpecProblem } from '../common/core/errors';
import { runFolderName } from '../common/core/ids';
import type { BackupStoreSpec } from '../common/input/spec';
import { LabPathError } from './lab-fs';
import { backupsDirFor } from './lab-paths';

/**
 * The folder a folder store's `path` names: the lab's backups folder, or a folder below it (a relative path is taken
 * from there). Anything that resolves elsewhere is refused, whatever the input says: the lab deletes that folder.
 */
export function backupStoreFolder(store: { path?: string }, hostsDir: string): string {
  const base = backupsDirFor(hostsDir);
  if (store.path === undefined) return base;
  const folder = path.resolve(base, store.path);
  if (folder !== base && !folder.startsWith(base + path.sep))
    throw new LabPathError(`backup store path ${JSON.stringify(store.path)} resolves to ${folder}, outside the lab's backups folder ${base}; use a sub-folder of it (a relative path) or leave path out`);
  return folder;
}

/** The problem of a folder store's path for a spec field (`<field>.path`), or null; the preflight reports it. */
export function backupStoreProblem(store: BackupStoreSpec, hostsDir: string, field: string): SpecProblem | null {
  if (store.kind !== 'folder') return null;
  try {
    backupStoreFolder(store, hostsDir);
    return null;
  } catch (err) {
    if (!(err instanceof LabPathError)) throw err;
    return { path: `${field}.path`, message: err.message };
  }
}

/** The run's own prefix in a store: a folder below the store's (within the lab's backups folder), or a key prefix in S3. */
export function resolveBackupStore(runId: string, store: BackupStoreSpec, hostsDir: string): ResolvedBackupStore {
  const run = runFolderName(runId);
  if (store.kind === 's3') {
    const prefix = store.prefix.replace(/^\/+|\/+$/g, '');
    return {
      kind: 's3',
      bucket: store.bucket,
      path: `/${prefix ? `${prefix}/` : ''}${run}`,
      region: store.region,
      ...(store.endpoint ? { endpoint: store.endpoint } : {}),
    };
  }
  return { kind: 'folder', path: path.join(backupStoreFolder(store, hostsDir), run) };
}

/** Which run a local backup folder belongs to, written beside it so the sweeper can find orphans. */
export interface BackupStoreLabel {
  runId: string;
  keep: boolean;
}

/** The label file of a local backup folder, beside it. */
export function backupLabelFile(storePath: string): string {
  return `${storePath}.labels.json`;
}

/** Local backup folders with their labels (for the sweeper). */
export function listBackupFolders(hostsDir: string): { path: string; label: BackupStoreLabel }[] {
  const dir = backupsDirFor(hostsDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.labels.json'))
    .map((f) => ({
      path: path.join(dir, f.slice(0, -'.labels.json'.length)),
      label: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as BackupStoreLabel,
    }));
}
