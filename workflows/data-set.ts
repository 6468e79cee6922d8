/**
 * A cluster's data through data sets (issue 31): the key of the data it needs, then load and publish (the first host
 * that needs the set), restore (every other host, of this run or a later one), or wait for another builder and then
 * restore (two runs needing one set at once build it once). The host loads its own, saying why, when the set cannot
 * be had within the builder's bound. Steps of the load phase: one activity each, heartbeating, bounded, with the
 * builder's claim released by the compensation unless its manifest was written.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { DataSetClaim } from '../activities/control/data-sets';
import { FAILURE_TYPES } from '../common/core/errors';
import {
  DEFAULT_KEEP_DAYS,
  compareDataSet,
  dataSetKey,
  dataSetKeyParts,
  dataSetsOff,
  expiresAt,
  type DataSetKeyParts,
  type DataSetManifest,
} from '../common/input/data-set';
import { labPostgresSettings, userPostgresSettings } from '../common/input/postgres-settings';
import { configure, loadAndVerify, step, type ClusterRun } from './cluster-steps';
import { currentClaimant } from './owner';
import { dataSetCalls, dataSetWaitCalls } from './proxies';

/** The patch that gates data sets in the cluster workflow: runs begun before it configure and load every host. */
export const DATA_SETS_PATCH = 'data-sets';

/** The patch that gates data sets in an S3 store: runs begun before it load every host of an S3-store spec. */
export const DATA_SETS_S3_PATCH = 'data-sets-s3';

export { dataSetsOff };

/** The host's data: restored from a published set, or loaded (and published when this run claimed the set). */
export async function prepareData(c: ClusterRun): Promise<void> {
  const { spec, hostId, host, input } = c;
  const store = spec.durability.backupStore;
  const server = await host.setup.describeServer.executeWithOptions({ summary: 'the server binary\'s major version (part of the data set\'s key)' }, [{ hostId }]);
  const parts = dataSetKeyParts(spec, server.major);
  const key = dataSetKey(parts);
  const claimIt = () =>
    dataSetCalls.claimDataSet.executeWithOptions({ summary: `data set ${key}: restore it if published, else claim it to build` }, [
      { store, key, runId: input.runId, owner: currentClaimant() },
    ]);
  let claim: DataSetClaim = await claimIt();
  let waitedSeconds: number | undefined;
  let reason: string | undefined;
  if (claim.state === 'building') {
    // One heartbeating activity as long as the builder's own load bound: the history does not grow with the wait.
    const bound = Math.ceil(c.timeouts.loadHours * 3600);
    c.board.step(hostId, 'wait for data set');
    const waited = await dataSetWaitCalls(bound).waitForDataSet.executeWithOptions({ summary: `wait, at most ${bound} s, for ${claim.by} to publish data set ${key}` }, [
      { store, key, timeoutSeconds: bound },
    ]);
    waitedSeconds = waited.waitedSeconds;
    if (waited.state === 'published') claim = { state: 'published', key, store: claim.store, manifest: waited.manifest };
    else if (waited.state === 'released') claim = await claimIt();
    else reason = waited.detail;
    if (claim.state === 'building') reason ??= `${claim.by} claimed data set ${key} again after its first builder gave up; this host loads its own`;
  }
  if (claim.state === 'published') {
    const published = claim;
    await step(c, 'restore', () => restoreFromSet(c, published, waitedSeconds));
    return;
  }
  // Registered before the publish: a run that ends before its manifest leaves nothing a later run could take.
  if (claim.state === 'claimed') c.undo.dataSet(key, store);
  await step(c, 'configure', () => configure(c));
  await step(c, 'load', () => loadAndVerify(c, { freeze: true }));
  if (claim.state === 'claimed') {
    const claimed = claim;
    await step(c, 'publish', () => publish(c, claimed, parts));
  } else c.result.dataSet = { key, prepared: 'loaded', reason, waitedSeconds, heapBytes: c.result.load?.heapBytes };
}

/** Publishes the loaded host's data: the base backup and facts on the host, then the manifest, last. */
async function publish(c: ClusterRun, claim: Extract<DataSetClaim, { state: 'claimed' }>, parts: DataSetKeyParts): Promise<void> {
  const { spec, hostId, host, result, input } = c;
  const { key } = claim;
  const out = await host.load.publishDataSet.executeWithOptions({ summary: `publish data set ${key}: a WAL-G base backup of the loaded host` }, [
    { hostId, key, store: claim.store, server: labPostgresSettings(spec, 'load'), user: userPostgresSettings(spec.postgres.settings) },
  ]);
  const load = result.load!;
  const loadSeconds = load.loadSeconds + load.indexSeconds + load.vacuumSeconds;
  const publishedAt = new Date().toISOString();
  const owner = currentClaimant();
  const manifest: DataSetManifest = {
    formatVersion: 1,
    key,
    parts,
    rows: Object.values(out.facts.relations).reduce((sum, r) => sum + r.rows, 0),
    facts: out.facts,
    backup: { tool: 'wal-g', label: out.backup.label, repositoryBytes: out.backup.repositoryBytes ?? null, databaseBytes: out.backup.databaseBytes ?? null },
    loadSeconds,
    publishSeconds: out.seconds,
    source: { hostId, runId: input.runId, workflowId: owner.workflowId },
    publishedAt,
    expiresAt: expiresAt(publishedAt, spec.dataSets?.keepDays ?? DEFAULT_KEEP_DAYS),
  };
  await dataSetCalls.publishDataSetManifest.executeWithOptions({ summary: `write the manifest of data set ${key}, last` }, [{ store: spec.durability.backupStore, manifest, owner }]);
  result.dataSet = {
    key,
    prepared: 'loaded-and-published',
    loadSeconds,
    publishSeconds: out.seconds,
    ...(out.parts ? { publishParts: out.parts } : {}),
    heapBytes: load.heapBytes,
    preparedWithoutCap: out.preparedWithoutCap,
  };
}

/** Restores a published set onto this host instead of loading, then compares it with its manifest: a mismatch fails the cluster. */
async function restoreFromSet(c: ClusterRun, claim: Extract<DataSetClaim, { state: 'published' }>, waitedSeconds: number | undefined): Promise<void> {
  const { spec, hostId, host, result } = c;
  const { key, manifest } = claim;
  const out = await host.load.restoreDataSet.executeWithOptions({ summary: `restore data set ${key} (published by ${manifest.source.hostId}) instead of loading` }, [
    {
      hostId,
      key,
      store: claim.store,
      server: labPostgresSettings(spec, 'load'),
      user: userPostgresSettings(spec.postgres.settings),
      recoveryTimeoutSeconds: c.timeouts.bulkSeconds,
      amcheck: spec.data.verifyRows,
    },
  ]);
  const checks = compareDataSet(manifest, out.facts, out.amcheck, out.keys ?? null);
  result.postgresVersion = out.postgresVersion;
  result.rows = out.facts.relations.pgbench_accounts?.rows;
  result.dataSet = {
    key,
    prepared: 'restored',
    loadSeconds: manifest.loadSeconds,
    publishSeconds: manifest.publishSeconds,
    restore: {
      fetchSeconds: out.fetchSeconds,
      recoverSeconds: out.recoverSeconds,
      restoreSeconds: out.restoreSeconds,
      checkSeconds: out.checkSeconds,
      ...(out.checkParts ? { checkParts: out.checkParts } : {}),
    },
    waitedSeconds,
    checks,
    source: { runId: manifest.source.runId, hostId: manifest.source.hostId, publishedAt: manifest.publishedAt },
    heapBytes: out.facts.relations.pgbench_accounts?.heapBytes,
    preparedWithoutCap: out.preparedWithoutCap,
  };
  const failed = checks.filter((x) => !x.ok);
  if (failed.length)
    throw ApplicationFailure.nonRetryable(
      `data set ${key} restored on ${hostId} does not match its manifest (published by ${manifest.source.hostId} of run ${manifest.source.runId}): ${failed.map((x) => `${x.name}: ${x.detail}`).join('; ')}; remove it (storage-lab datasets rm ${key}) or run with data.reuse "never"`,
      FAILURE_TYPES.verification,
    );
}
