/**
 * Where a run's backup store is: its own prefix of the spec's store, a folder below the lab's backups folder (never
 * anywhere else, whatever the input says) or a key prefix in S3; and the labels that tie a local store to its run.
 */
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import type { OwnerRecord } from '../common/core/claims';
import type { ResolvedBackupStore } from '../common/input/backup-store';
import type { SpecProblem } from '../common/core/errors';
import { RESERVED_RUN_FOLDERS, legacyRunFolderName, runFolderName } from '../common/core/ids';
import type { BackupStoreSpec } from '../common/input/spec';
import { LabPathError, listLabDir, readLabFile } from './lab-fs';
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

/**
 * The folder a run's local store had before run folders were escaped injectively, when it differs from today's (an
 * id with "_" or another character outside [A-Za-z0-9.-]); only ever removed where its label names that run.
 */
export function legacyBackupFolder(runId: string, store: BackupStoreSpec, hostsDir: string): string | null {
  if (store.kind !== 'folder') return null;
  const name = legacyRunFolderName(runId);
  const folder = name && path.join(backupStoreFolder(store, hostsDir), name);
  return folder && folder !== path.join(backupStoreFolder(store, hostsDir), runFolderName(runId)) ? folder : null;
}

/**
 * A local store's label: its owner record (lib/claims.ts), written with O_EXCL before the folder is made, and
 * whether its run keeps it. Labels written before owner records hold the run id and keep only.
 */
export type BackupStoreLabel = (OwnerRecord & { keep: boolean }) | { runId: string; keep: boolean; workflowId?: undefined };

/** The label file of a local backup folder, beside it (in the backups folder, which only the lab writes). */
export function backupLabelFile(storePath: string): string {
  return `${storePath}.labels.json`;
}

/** The S3 key of a store's owner record: beside the run's prefix, never inside the tool's repository. */
export function s3OwnerKey(store: Extract<ResolvedBackupStore, { kind: 's3' }>): string {
  return `${store.path.replace(/^\/+/, '')}.owner.json`;
}

/** A local store's label as read, or null when there is none. */
export function readBackupLabel(storePath: string): BackupStoreLabel | null {
  const text = readLabFile(backupLabelFile(storePath), { maxBytes: 64 * 1024 });
  return text === null ? null : (JSON.parse(text) as BackupStoreLabel);
}

/** A local backup folder the sweeper may judge: its label, or none (then when the folder was made). */
export interface BackupFolder {
  path: string;
  label: BackupStoreLabel | null;
  madeAt?: string;
}

/**
 * Local backup folders with their labels (for the sweeper), and the lab's folders there without one: a store whose
 * claim never got written (made by the lab: its marker is beside it), which nothing else would ever remove.
 */
export function listBackupFolders(hostsDir: string): BackupFolder[] {
  const dir = backupsDirFor(hostsDir);
  const names = listLabDir(dir) ?? [];
  const out: BackupFolder[] = names
    .filter((f) => f.endsWith('.labels.json'))
    .map((f) => {
      const folder = path.join(dir, f.slice(0, -'.labels.json'.length));
      return { path: folder, label: readBackupLabel(folder) };
    });
  const labelled = new Set(out.map((b) => path.basename(b.path)));
  for (const name of names) {
    // The lab's own folders there (published data sets, lib/data-sets.ts): no run's store, never an orphan.
    if ((RESERVED_RUN_FOLDERS as readonly string[]).includes(name)) continue;
    const marker = `.${name}.storage-lab`;
    if (labelled.has(name) || !names.includes(marker) || !lstatSync(path.join(dir, name)).isDirectory()) continue;
    const made = Math.min(lstatSync(path.join(dir, marker)).mtimeMs, lstatSync(path.join(dir, name)).mtimeMs);
    out.push({ path: path.join(dir, name), label: null, madeAt: new Date(made).toISOString() });
  }
  return out;
}

/** Whether a local store's folder exists. */
export function storeExists(storePath: string): boolean {
  return existsSync(storePath);
}
