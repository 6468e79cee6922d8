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

export function createDrillControlActivities(deps: DrillControlDeps) {
  return {
    /** The run's own prefix in the spec's store; a local folder is created for the Postgres OS user. */
    async prepareBackupStore(input: { runId: string; store: BackupStoreSpec }): Promise<ResolvedBackupStore> {
      const run = runFolderName(input.runId);
      if (input.store.kind === 's3') {
        const prefix = input.store.prefix.replace(/^\/+|\/+$/g, '');
        return {
          kind: 's3',
          bucket: input.store.bucket,
          path: `/${prefix ? `${prefix}/` : ''}${run}`,
          region: input.store.region,
          ...(input.store.endpoint ? { endpoint: input.store.endpoint } : {}),
        };
      }
      const dir = path.join(input.store.path ? path.resolve(input.store.path) : backupsDirFor(deps.hostsDir), run);
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      const user = postgresOsUser();
      if (user) chownSync(dir, user.uid, user.gid);
      return { kind: 'folder', path: dir };
    },

    /** Removes a run's local backup folder; an S3 prefix is left to the bucket's lifecycle rules. Says what it did. */
    async removeBackupStore(input: { store: ResolvedBackupStore }): Promise<string> {
      if (input.store.kind === 's3') return `left s3://${input.store.bucket}${input.store.path} in place (the bucket's lifecycle rules expire it)`;
      rmSync(input.store.path, { recursive: true, force: true });
      return `removed ${input.store.path}`;
    },

    /** The drill's result.json and report.md; returns where they are. */
    async saveDrillResult(input: { runId: string; result: DrillResult }): Promise<string> {
      await deps.results.put(input.runId, 'result.json', JSON.stringify(input.result, null, 2));
      await deps.results.put(input.runId, 'report.md', renderDrillMarkdown(input.result));
      return deps.results.location(input.runId);
    },
  };
}
