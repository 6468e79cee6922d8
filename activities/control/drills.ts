/**
 * Control-plane activities of the durability drills: the run's backup store (a folder every local host reaches,
 * or an S3 prefix), and the drill's result.json and report, saved before its hosts are torn down.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedBackupStore } from '../../common/backup-store';
import type { DrillResult, RestoreToolComparison } from '../../common/drill-result';
import type { SpecProblem } from '../../common/errors';
import type { BackupStoreSpec } from '../../common/spec';
import { LabPathError, makeLabDir, removeLabFile, removeLabTree, writeLabFile } from '../../infra/lab-fs';
import { backupsDirFor } from '../../infra/lab-paths';
import { postgresOsUser } from '../../infra/postgres-binaries';
import { renderDrillMarkdown, renderToolComparisonMarkdown } from './report/drills-markdown';
import { runFolderName, type ResultsStore } from './results-store';

export interface DrillControlDeps {
  results: ResultsStore;
  /** Folder the local provider puts hosts in; local backups go beside it unless STORAGE_LAB_BACKUPS_DIR says where. */
  hostsDir: string;
}

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

export function createDrillControlActivities(deps: DrillControlDeps) {
  return {
    /** The run's own prefix in the spec's store; a local folder is created for the Postgres OS user. */
    async prepareBackupStore(input: { runId: string; store: BackupStoreSpec; keep?: boolean }): Promise<ResolvedBackupStore> {
      const store = resolveBackupStore(input.runId, input.store, deps.hostsDir);
      if (store.kind === 'folder') {
        // The label first: a folder the sweeper finds is always one it can attribute to a run.
        makeLabDir(path.dirname(store.path));
        const label: BackupStoreLabel = { runId: input.runId, keep: Boolean(input.keep) };
        writeLabFile(backupLabelFile(store.path), JSON.stringify(label), { atomic: true });
        // Marked as the lab's (beside it: the Postgres user owns and writes the folder), so only it is ever deleted.
        makeLabDir(store.path, { marker: true, owner: postgresOsUser() });
      }
      return store;
    },

    /**
     * Removes a run's backups (idempotent: nothing there is fine). A local folder is deleted; an S3 prefix is left
     * to the bucket's lifecycle rules. Says what it did.
     */
    async removeBackupStore(input: { runId: string; store: BackupStoreSpec }): Promise<string> {
      const store = resolveBackupStore(input.runId, input.store, deps.hostsDir);
      if (store.kind === 's3') return `left s3://${store.bucket}${store.path} in place (the bucket's lifecycle rules expire it)`;
      await removeLabTree(store.path);
      removeLabFile(backupLabelFile(store.path));
      return `removed ${store.path}`;
    },

    /** A tool comparison's result.json and report.md (the drills saved their own); returns where they are. */
    async saveToolComparison(input: { runId: string; comparison: RestoreToolComparison }): Promise<string> {
      await deps.results.put(input.runId, 'result.json', JSON.stringify(input.comparison, null, 2));
      await deps.results.put(input.runId, 'report.md', renderToolComparisonMarkdown(input.comparison));
      return deps.results.location(input.runId);
    },

    /** The drill's result.json and report.md; returns where they are. */
    async saveDrillResult(input: { runId: string; result: DrillResult }): Promise<string> {
      await deps.results.put(input.runId, 'result.json', JSON.stringify(input.result, null, 2));
      await deps.results.put(input.runId, 'report.md', renderDrillMarkdown(input.result));
      return deps.results.location(input.runId);
    },
  };
}
