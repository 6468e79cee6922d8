/**
 * Published data sets on the control side (issue 31; lib/data-sets.ts says where they are): the claim that makes one
 * run the builder of a key, the wait of every other host (or run) for its manifest, the manifest written last, the
 * release of a set whose publish failed, and the removal of expired or unwanted sets (sweeper, `datasets rm`). The same
 * steps for a folder store and an S3 store (its calls are loaded on first use: a folder store never loads the AWS SDK).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { describeClaimant, ownedBy, type Claimant, type OwnerRecord } from '../../common/core/claims';
import { FAILURE_TYPES } from '../../common/core/errors';
import type { DataSetManifest } from '../../common/input/data-set';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import { BackupStoreSchema, type BackupStoreSpec } from '../../common/input/spec';
import { checkedKey, dataSetCatalog, listDataSets, recordS3DataSetStore, recordedS3DataSetStores, removeDataSet, type DataSetCatalog, type DataSetEntry, type DataSetRecords } from '../../lib/data-sets';
import { LabPathError } from '../../lib/lab-fs';
import { checkedClaimant } from './owner';
import type { ControlDeps } from './types';

/** What a claim found: a published set to restore, the key now ours to build, or another run building it. */
export type DataSetClaim =
  | { state: 'published'; key: string; store: ResolvedBackupStore; manifest: DataSetManifest }
  | { state: 'claimed'; key: string; store: ResolvedBackupStore }
  | { state: 'building'; key: string; store: ResolvedBackupStore; by: string; claimedAt: string };

/** What a wait for another builder ended with. */
export type DataSetWait =
  | { state: 'published'; manifest: DataSetManifest; waitedSeconds: number }
  | { state: 'released'; waitedSeconds: number; detail: string }
  | { state: 'timeout'; waitedSeconds: number; detail: string };

const WAIT_POLL_MS = 2_000;

function refused(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FAILURE_TYPES.invalidSpec);
}

/**
 * The sets of a store, a store that cannot be one refused (non-retryable): checked by the spec's own rules first (a
 * bucket, prefix, region and endpoint the spec accepts), whichever workflow sent it.
 */
async function catalogOf(deps: Pick<ControlDeps, 'hostsDir'>, store: BackupStoreSpec): Promise<DataSetCatalog> {
  const checked = BackupStoreSchema.safeParse(store);
  if (!checked.success) throw refused(`the data sets' store ${checked.error.issues.map((i) => `${['backupStore', ...i.path].join('.')}: ${i.message}`).join('; ')}`);
  try {
    return await dataSetCatalog(checked.data, deps.hostsDir);
  } catch (err) {
    if (err instanceof LabPathError) throw refused(err.message);
    throw err;
  }
}

/** One set's records, a key that is not one refused before it becomes a name (non-retryable). */
async function recordsOf(deps: Pick<ControlDeps, 'hostsDir'>, store: BackupStoreSpec, key: unknown): Promise<{ catalog: DataSetCatalog; records: DataSetRecords }> {
  const catalog = await catalogOf(deps, store);
  try {
    return { catalog, records: catalog.records(checkedKey(key)) };
  } catch (err) {
    if (err instanceof LabPathError) throw refused(err.message);
    throw err;
  }
}

export function createDataSetActivities(deps: Pick<ControlDeps, 'hostsDir'>) {
  return {
    /**
     * Claims `key` for the workflow that asks, unless a manifest says the set is published already: the first claimant
     * (O_EXCL) builds it, and a retry of the same owner finds its own claim. The repository folder is made for the
     * Postgres OS user only after the claim, so every folder there is one a claim names.
     */
    async claimDataSet(input: { store: BackupStoreSpec; key: string; runId: string; owner?: Claimant }): Promise<DataSetClaim> {
      const owner = checkedClaimant(input.owner);
      if (!owner) throw refused('claimDataSet: the request names no owner');
      const { catalog, records } = await recordsOf(deps, input.store, input.key);
      const { store } = records;
      await catalog.prepare();
      // Before anything is made there: the sweeper learns of every S3 store that may hold an expired set.
      if (input.store.kind === 's3') recordS3DataSetStore(input.store, deps.hostsDir);
      const manifest = await records.readManifest();
      if (manifest) return { state: 'published', key: input.key, store, manifest };
      const record: OwnerRecord = { kind: 'data-set', resource: records.location, runId: input.runId, ...owner, claimedAt: new Date().toISOString() };
      const inForce = await records.claim(record);
      if (!ownedBy(inForce, owner)) {
        // Published between the look and the claim: restore it.
        const now = await records.readManifest();
        if (now) return { state: 'published', key: input.key, store, manifest: now };
        return { state: 'building', key: input.key, store, by: describeClaimant(inForce), claimedAt: inForce.claimedAt };
      }
      await records.prepareRepository();
      return { state: 'claimed', key: input.key, store };
    },

    /**
     * Waits, at most timeoutSeconds, for another builder's manifest; heartbeats what it waits for. Ends early when the
     * claim is released (the builder failed: the caller may claim it itself). Bounded: a builder that hangs costs the
     * waiter its bound, then the waiter loads its own host, and says why.
     */
    async waitForDataSet(input: { store: BackupStoreSpec; key: string; timeoutSeconds: number }): Promise<DataSetWait> {
      const { records } = await recordsOf(deps, input.store, input.key);
      const ctx = Context.current();
      const started = Date.now();
      const waited = () => Math.round((Date.now() - started) / 100) / 10;
      for (;;) {
        const manifest = await records.readManifest();
        if (manifest) return { state: 'published', manifest, waitedSeconds: waited() };
        const claim = await records.readClaim();
        if (!claim) return { state: 'released', waitedSeconds: waited(), detail: `the builder of ${input.key} released it without publishing` };
        if (Date.now() - started > input.timeoutSeconds * 1000)
          return {
            state: 'timeout',
            waitedSeconds: waited(),
            detail: `${describeClaimant(claim)} has been building data set ${input.key} since ${claim.claimedAt}; not published within ${input.timeoutSeconds} s, so this host loads its own`,
          };
        ctx.heartbeat({ phase: 'wait for data set', key: input.key, builder: claim.workflowId, waitedSeconds: waited() });
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, WAIT_POLL_MS);
          ctx.cancellationSignal.addEventListener('abort', () => (clearTimeout(t), reject(ctx.cancellationSignal.reason)), { once: true });
        });
      }
    },

    /**
     * Writes the manifest, last and exclusively, for the claim's owner only: from now on the set is usable. A retry
     * that finds its own manifest is done; anyone else's claim is refused.
     */
    async publishDataSetManifest(input: { store: BackupStoreSpec; manifest: DataSetManifest; owner?: Claimant }): Promise<string> {
      const owner = checkedClaimant(input.owner);
      const key = input.manifest.key;
      const { records } = await recordsOf(deps, input.store, key);
      const claim = await records.readClaim();
      if (!claim || !owner || !ownedBy(claim, owner))
        throw refused(`data set ${key}: ${claim ? `claimed by ${describeClaimant(claim)}` : 'not claimed'}; only its builder publishes it`);
      await records.writeManifest(input.manifest);
      // Read back through the same check every restore makes: a manifest that would be refused is never left behind.
      await records.readManifest();
      return records.manifestLocation;
    },

    /**
     * The builder's undo: a set whose manifest was never written is removed with its claim (nothing half made stays to
     * be taken); a published set stays. Another run's claim is left alone.
     */
    async releaseDataSet(input: { store: BackupStoreSpec; key: string; owner?: Claimant }): Promise<string> {
      const owner = checkedClaimant(input.owner);
      const { records } = await recordsOf(deps, input.store, input.key);
      if (await records.hasManifest()) return `kept data set ${input.key}: published`;
      const claim = await records.readClaim();
      if (!claim) return `nothing to release for data set ${input.key}`;
      if (!owner || !ownedBy(claim, owner)) return `left data set ${input.key} alone: claimed by ${describeClaimant(claim)}`;
      const ctx = Context.current();
      const repository = await records.removeRepository((n) => ctx.heartbeat({ phase: 'release data set', key: input.key, objectsRemoved: n }));
      await records.removeClaim();
      return `released data set ${input.key}: removed its unpublished backup (${repository}) and its claim`;
    },

    /** The sets of a store (the CLI's `datasets list`, and the sweeper). */
    async listDataSets(input: { store: BackupStoreSpec }): Promise<DataSetEntry[]> {
      return listDataSets(await catalogOf(deps, input.store));
    },

    /**
     * Removes expired published sets (the sweeper): each named, the manifest first so no run starts restoring it. With
     * `recordedS3Stores`, also those of every S3 store this lab claimed a set in (recordS3DataSetStore); a store that
     * cannot be read is named in the list and the others are still swept.
     */
    async removeExpiredDataSets(input: { store: BackupStoreSpec; now?: string; recordedS3Stores?: boolean }): Promise<string[]> {
      const now = Date.parse(input.now ?? new Date().toISOString());
      const removed: string[] = [];
      const stores = [input.store, ...(input.recordedS3Stores ? recordedS3DataSetStores(deps.hostsDir) : [])];
      for (const [i, store] of stores.entries()) {
        let where = store.kind === 's3' ? `s3://${store.bucket}/${store.prefix}` : 'the folder store';
        try {
          const catalog = await catalogOf(deps, store);
          where = catalog.where;
          for (const set of await listDataSets(catalog)) {
            if (set.state !== 'published' || Date.parse(set.manifest!.expiresAt) > now) continue;
            removed.push(
              await removeDataSet(catalog, set.key, `expired at ${set.manifest!.expiresAt}`, (n) => Context.current().heartbeat({ phase: 'expired data sets', key: set.key, objectsRemoved: n })),
            );
          }
        } catch (err) {
          // The store the sweeper names is its own to fail on; a recorded one (a bucket gone, no rights) only says why.
          if (i === 0) throw err;
          removed.push(`could not sweep the data sets of ${where}: ${(err as Error).message}`);
        }
        Context.current().heartbeat({ phase: 'expired data sets', stores: stores.length, swept: i + 1 });
      }
      return removed;
    },
  };
}
