/**
 * Backup stores of the durability drills and of experiments that archive WAL: the run's own prefix of the spec's
 * store, made for the Postgres OS user before a host writes there, and removed with the run (lib/backup-stores.ts
 * says where it is).
 */
import path from 'node:path';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupStoreSpec } from '../../common/input/spec';
import { backupLabelFile, resolveBackupStore, type BackupStoreLabel } from '../../lib/backup-stores';
import { makeLabDir, removeLabFile, removeLabTree, writeLabFile } from '../../lib/lab-fs';
import { postgresOsUser } from '../../lib/postgres-binaries';
import type { ControlDeps } from './types';

export function createBackupStoreActivities(deps: Pick<ControlDeps, 'hostsDir'>) {
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
  };
}
