/**
 * Backup stores of the durability drills and of experiments that archive WAL: the run's own prefix of the spec's
 * store, claimed for the workflow that asks before anything is made there (an owner record: a label file linked into
 * place with O_EXCL, or an S3 object put with If-None-Match: *), made for the Postgres OS user before a host writes
 * there, and removed with the run by its owner only (lib/backup-stores.ts says where it is).
 */
import path from 'node:path';
import { describeClaimant, ownedBy, ownerRefusal, type Claimant, type OwnerRecord } from '../../common/core/claims';
import { backupStoreLocation, type ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupStoreSpec } from '../../common/input/spec';
import {
  backupLabelFile,
  legacyBackupFolder,
  readBackupLabel,
  resolveBackupStore,
  s3OwnerKey,
  type BackupStoreLabel,
} from '../../lib/backup-stores';
import { claimFile, ownedByAnotherRun } from '../../lib/claims';
import { makeLabDir, removeLabFile, removeLabTree } from '../../lib/lab-fs';
import { postgresOsUser } from '../../lib/postgres-binaries';
import { checkedClaimant } from './owner';
import type { ControlDeps } from './types';

/** A store's owner record (with whether its run keeps it). */
function storeRecord(runId: string, store: ResolvedBackupStore, owner: Claimant, keep: boolean): OwnerRecord & { keep: boolean } {
  return { kind: 'backup-store', resource: backupStoreLocation(store), runId, ...owner, claimedAt: new Date().toISOString(), keep };
}

/**
 * The S3 client of a store's region and endpoint, with the control worker's credentials (its role, or its keys), and
 * the owner-record calls on S3. Loaded on first use: a local store never needs the AWS SDK (~0.4 s of CPU in every
 * control worker and test file).
 */
async function s3Of(store: Extract<ResolvedBackupStore, { kind: 's3' }>) {
  const [{ awsClients }, claims] = await Promise.all([import('../../lib/aws-clients'), import('../../lib/s3-claims')]);
  return { s3: awsClients({ region: store.region, ...(store.endpoint ? { endpoint: store.endpoint } : {}) }).s3, ...claims };
}

/** Why `owner` may not act on a store whose label is `label` (naming both runs), or null when it may. */
function labelRefusal(where: string, label: BackupStoreLabel, runId: string, owner: Claimant | undefined, action: string): string | null {
  if (label.workflowId === undefined)
    // A label from before owner records: its run's workflow and children only.
    return label.runId === runId && (!owner || owner.workflowId === runId || owner.workflowId.startsWith(`${runId}/`))
      ? null
      : `the backup store ${where} belongs to run ${JSON.stringify(label.runId)} (labelled before owner records); ${owner ? describeClaimant({ ...owner, runId }) : `run ${JSON.stringify(runId)}`} may not ${action} it`;
  if (!owner) return `the backup store ${where} belongs to ${describeClaimant(label)}; a request that names no owner may not ${action} it`;
  return ownedBy(label, owner) ? null : ownerRefusal(`the backup store ${where}`, label, { ...owner, runId }, action);
}

export function createBackupStoreActivities(deps: Pick<ControlDeps, 'hostsDir'>) {
  return {
    /**
     * The run's own prefix in the spec's store, claimed for the workflow that asks before anything is made: another
     * run's store is refused (non-retryable, naming both runs) and left untouched; a local folder is then created for
     * the Postgres OS user.
     */
    async prepareBackupStore(input: { runId: string; store: BackupStoreSpec; keep?: boolean; owner?: Claimant }): Promise<ResolvedBackupStore> {
      const owner = checkedClaimant(input.owner);
      const store = resolveBackupStore(input.runId, input.store, deps.hostsDir);
      const where = backupStoreLocation(store);
      if (store.kind === 's3') {
        if (owner) {
          const { s3, claimS3Object } = await s3Of(store);
          const inForce = await claimS3Object(s3, store.bucket, s3OwnerKey(store), storeRecord(input.runId, store, owner, Boolean(input.keep)));
          if (!ownedBy(inForce, owner)) throw ownedByAnotherRun(ownerRefusal(`the backup store ${where}`, inForce, { ...owner, runId: input.runId }, 'use'));
        }
        return store;
      }
      makeLabDir(path.dirname(store.path));
      // The claim first: a folder the sweeper finds is always one it can attribute to a run, and of two runs that ask
      // for one store (a new run under a finished run's id) exactly one gets it.
      if (owner) {
        const inForce = claimFile(backupLabelFile(store.path), storeRecord(input.runId, store, owner, Boolean(input.keep)));
        if (!ownedBy(inForce, owner)) throw ownedByAnotherRun(ownerRefusal(`the backup store ${where}`, inForce, { ...owner, runId: input.runId }, 'use'));
      } else {
        const label = readBackupLabel(store.path);
        const refusal = label && labelRefusal(where, label, input.runId, undefined, 'use');
        if (refusal) throw ownedByAnotherRun(refusal);
        if (!label) claimFile(backupLabelFile(store.path), { ...storeRecord(input.runId, store, { workflowId: input.runId, execution: '(before owner records)' }, Boolean(input.keep)) });
      }
      // Marked as the lab's (beside it: the Postgres user owns and writes the folder), so only it is ever deleted.
      makeLabDir(store.path, { marker: true, owner: postgresOsUser() });
      return store;
    },

    /**
     * Removes a run's backups when the workflow that asks owns them (idempotent: nothing there is fine); another
     * run's store, or a folder nobody claimed, is left alone. A local folder is deleted; an S3 prefix is left to the
     * bucket's lifecycle rules. Says what it did.
     */
    async removeBackupStore(input: { runId: string; store: BackupStoreSpec; owner?: Claimant }): Promise<string> {
      const owner = checkedClaimant(input.owner);
      const store = resolveBackupStore(input.runId, input.store, deps.hostsDir);
      const where = backupStoreLocation(store);
      if (store.kind === 's3') {
        const { s3, readS3Claim } = await s3Of(store);
        const record = await readS3Claim(s3, store.bucket, s3OwnerKey(store));
        const refusal = record && labelRefusal(where, { ...record, keep: false }, input.runId, owner, 'remove');
        if (refusal) return `left ${where} alone: ${refusal}`;
        return `left ${where} in place (the bucket's lifecycle rules expire it)`;
      }
      // A run started before folders were escaped injectively has its store under the old name.
      const legacy = legacyBackupFolder(input.runId, input.store, deps.hostsDir);
      const folder = !readBackupLabel(store.path) && legacy && readBackupLabel(legacy) ? legacy : store.path;
      const label = readBackupLabel(folder);
      if (!label) return `nothing of run ${input.runId} at ${folder}: no label claims it`;
      const refusal = labelRefusal(folder, label, input.runId, owner, 'remove');
      if (refusal) return `left ${folder} alone: ${refusal}`;
      await removeLabTree(folder);
      removeLabFile(backupLabelFile(folder));
      return `removed ${folder}`;
    },
  };
}
