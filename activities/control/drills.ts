/**
 * Control-plane activities of the durability drills: the run's backup store (a folder every local host reaches,
 * or an S3 prefix), and the drill's result.json and report, saved before its hosts are torn down.
 */
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedBackupStore } from '../../common/backup-store';
import type { DrillResult } from '../../common/drill-result';
import type { BackupStoreSpec } from '../../common/spec';
import { postgresOsUser } from '../../infra/postgres-binaries';
import { renderDrillMarkdown } from './report/drills-markdown';
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

export function createDrillControlActivities(deps: DrillControlDeps) {
  return {
    /** The run's own prefix in the spec's store; a local folder is created for the Postgres OS user. */
    async prepareBackupStore(input: { runId: string; store: BackupStoreSpec }): Promise<ResolvedBackupStore> {
      const store = resolveBackupStore(input.runId, input.store, deps.hostsDir);
      if (store.kind === 'folder') {
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
      return `removed ${store.path}`;
    },

    /** The drill's result.json and report.md; returns where they are. */
    async saveDrillResult(input: { runId: string; result: DrillResult }): Promise<string> {
      await deps.results.put(input.runId, 'result.json', JSON.stringify(input.result, null, 2));
      await deps.results.put(input.runId, 'report.md', renderDrillMarkdown(input.result));
      return deps.results.location(input.runId);
    },
  };
}
