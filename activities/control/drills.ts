/**
 * Control-plane activities of the durability drills: the run's backup store (a folder every local host reaches,
 * or an S3 prefix), and the drill's result.json and report, saved before its hosts are torn down.
 */
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedBackupStore } from '../../common/backup-store';
import type { DrillResult, RestoreToolComparison } from '../../common/drill-result';
import type { BackupStoreSpec } from '../../common/spec';
import { postgresOsUser } from '../../infra/postgres-binaries';
import { renderDrillMarkdown, renderToolComparisonMarkdown } from './report/drills-markdown';
import { runFolderName, type ResultsStore } from './results-store';

export interface DrillControlDeps {
  results: ResultsStore;
  /** Folder the local provider puts hosts in; local backups go beside it unless STORAGE_LAB_BACKUPS_DIR says where. */
  hostsDir: string;
}

/** Where local backup stores live: beside the hosts folder, so the Postgres OS user can reach them too. */
export function backupsDirFor(hostsDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.STORAGE_LAB_BACKUPS_DIR) return path.resolve(env.STORAGE_LAB_BACKUPS_DIR);
  const base = path.basename(hostsDir);
  return base === 'hosts' ? path.join(path.dirname(hostsDir), 'backups') : `${hostsDir}-backups`;
}

/** The run's own prefix in a store: a folder below the store's (or the lab's backups folder), or a key prefix in S3. */
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
  return { kind: 'folder', path: path.join(store.path ? path.resolve(store.path) : backupsDirFor(hostsDir), run) };
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
        mkdirSync(path.dirname(store.path), { recursive: true, mode: 0o755 });
        const label: BackupStoreLabel = { runId: input.runId, keep: Boolean(input.keep) };
        writeFileSync(backupLabelFile(store.path), JSON.stringify(label));
        mkdirSync(store.path, { recursive: true, mode: 0o755 });
        const user = postgresOsUser();
        if (user) chownSync(store.path, user.uid, user.gid);
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
      rmSync(store.path, { recursive: true, force: true });
      rmSync(backupLabelFile(store.path), { force: true });
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
