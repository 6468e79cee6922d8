/**
 * Data sets in an S3 store (issue 31, on AWS), against moto's S3 server on 127.0.0.1 with real Postgres and WAL-G at
 * scale 1: a loaded host publishes into `<prefix>/_datasets/<key>` (claim and manifest put with If-None-Match: *),
 * a fresh host restores it and the comparison passes; a set whose manifest does not match its backup fails it; another
 * run's workflow may neither publish into a claimed set nor write its manifest; a released set and an expired one
 * leave no object behind; a host refuses any repository that is not a published set's. Host and control activities run
 * in mock activity contexts (bench/bench-host.ts), as in data-sets.test.ts (the folder store's).
 */
import { manifestOf as sharedManifestOf } from '../helpers/data-set-manifest';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { MockActivityEnvironment } from '@temporalio/testing';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostSettings, startBenchHost, type BenchHost } from '../../bench/bench-host';
import { createDataSetActivities, type DataSetClaim } from '../../activities/control/data-sets';
import { describeServer, publishDataSet, restoreDataSet, type PublishOutcome } from '../../activities/host/data-set';
import { loadData } from '../../activities/host/load';
import { stopPostgres } from '../../activities/host/postgres';
import { compareDataSet, dataSetKey, dataSetKeyParts, type DataSetKeyParts, type DataSetManifest } from '../../common/input/data-set';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupStoreSpec } from '../../common/input/spec';
import { recordS3DataSetStore, recordedS3DataSetStores, type DataSetEntry } from '../../lib/data-sets';
import { registerLabRoot } from '../../lib/lab-fs';
import { withConnection } from '../../lib/pg';
import { findWalg } from '../../lib/walg';
import { startMoto, type Moto } from '../helpers/moto';
import { datasetsListCommand, datasetsRmCommand, storeOf } from '../../client/commands/datasets';
import type { ExperimentResult } from '../../common/results/result';
import { runFolderName } from '../../lib/results-store';
import { startTestLab, type TestLab } from '../helpers/lab';
import { NO_PHASES } from '../helpers/phases';
import { patchesOf } from '../helpers/patches';
import { clusterWorkflowId } from '../../workflows/cluster-door';
import { DATA_SETS_PATCH, DATA_SETS_S3_PATCH } from '../../workflows/data-set';

const SETTINGS = { shared_buffers: '32MB', max_connections: '40', wal_level: 'replica', log_line_prefix: '%m [%p] ', log_timezone: 'UTC' };
const BUCKET = 'lab-datasets';

describe('data sets in an S3 store: publish once, restore elsewhere, compare (integration, moto)', () => {
  let moto: Moto;
  let root: string;
  let store: Extract<BackupStoreSpec, { kind: 's3' }>;
  let source: BenchHost;
  let target: BenchHost;
  let activities: ReturnType<typeof createDataSetActivities>;
  let parts: DataSetKeyParts;
  let key: string;
  let claimed: DataSetClaim;
  let published: PublishOutcome;
  let manifest: DataSetManifest;
  let tamperedKey: string;
  const as = (workflowId: string, execution = 'e1') => new MockActivityEnvironment({ workflowExecution: { workflowId, runId: execution } });
  const owner = (workflowId: string, execution = 'e1') => ({ workflowId, execution });
  const s3Of = (c: DataSetClaim) => c.store as Extract<ResolvedBackupStore, { kind: 's3' }>;

  /** Every object name below `<prefix>/_datasets/` (paginated). */
  async function objects(): Promise<string[]> {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await moto.clients.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'lab/sets/_datasets/', ContinuationToken: token }));
      names.push(...(page.Contents ?? []).map((o) => o.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return names;
  }
  const of = async (k: string) => (await objects()).filter((n) => n.startsWith(`lab/sets/_datasets/${k}`));

  beforeAll(async () => {
    expect(findWalg()).not.toBeNull();
    moto = await startMoto();
    await moto.createBucket(BUCKET);
    // The control worker's S3 client and the hosts' WAL-G config take moto's keys from the environment (on EC2: roles).
    process.env.AWS_ACCESS_KEY_ID = 'testing';
    process.env.AWS_SECRET_ACCESS_KEY = 'testing';
    store = { kind: 's3', bucket: BUCKET, prefix: 'lab/sets', region: 'us-east-1', endpoint: moto.endpoint };
    root = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-datasets-s3-'));
    chmodSync(root, 0o755);
    registerLabRoot(root);
    activities = createDataSetActivities({ hostsDir: path.join(root, 'hosts') });
    source = await startBenchHost('ds3-source', SETTINGS);
    target = await startBenchHost('ds3-target', SETTINGS);
    await target.run(stopPostgres, { hostId: target.deps.config.hostId, mode: 'immediate' });
    rmSync(target.deps.config.dataDir, { recursive: true, force: true });
    const server = await source.run(describeServer, { hostId: source.deps.config.hostId });
    parts = dataSetKeyParts({ data: { scale: 1 }, postgres: { settings: {} } }, server.major);
    key = dataSetKey(parts);
  });
  afterAll(async () => {
    await source?.close();
    await target?.close();
    await moto?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const manifestOf = (p: PublishOutcome, k: string, keyParts: DataSetKeyParts, facts = p.facts): DataSetManifest =>
    sharedManifestOf(source.deps.config.hostId, p, k, keyParts, facts);

  it('claims the key in S3 for its first builder (a conditional put); a second run finds it being built', async () => {
    claimed = await as('run-a/gp3-0').run(activities.claimDataSet, { store, key, runId: 'run-a', owner: owner('run-a/gp3-0') });
    expect(claimed).toMatchObject({ state: 'claimed', store: { kind: 's3', bucket: BUCKET, path: `/lab/sets/_datasets/${key}`, endpoint: moto.endpoint } });
    expect(await of(key)).toEqual([`lab/sets/_datasets/${key}.claim.json`]);
    // A retry of the builder finds its own claim; another run's workflow finds it taken and waits, bounded.
    expect(((await as('run-a/gp3-0').run(activities.claimDataSet, { store, key, runId: 'run-a', owner: owner('run-a/gp3-0') })) as DataSetClaim).state).toBe('claimed');
    expect(await as('run-b/gp3-0').run(activities.claimDataSet, { store, key, runId: 'run-b', owner: owner('run-b/gp3-0') })).toMatchObject({
      state: 'building',
      by: expect.stringContaining('run-a/gp3-0'),
    });
    expect(await as('run-b/gp3-0').run(activities.waitForDataSet, { store, key, timeoutSeconds: 1 })).toMatchObject({ state: 'timeout' });
    await expect(as('run-b/x').run(activities.claimDataSet, { store, key: '../../x', runId: 'run-b', owner: owner('run-b/x') })).rejects.toThrow(/not a data set key/);
    // A store the spec's rules refuse (an endpoint elsewhere than https:// or this machine) is refused before any call.
    await expect(
      as('run-b/x').run(activities.claimDataSet, { store: { ...store, endpoint: 'http://169.254.169.254' }, key, runId: 'run-b', owner: owner('run-b/x') }),
    ).rejects.toThrow(/the data sets' store backupStore.endpoint: /);
  });

  it('publishes into S3 for the claim\'s owner only; the manifest is written last, by the owner only', async () => {
    const hostId = source.deps.config.hostId;
    await source.run(loadData, { hostId, scale: 1, chunkRows: 25_000, writers: 2, freeze: true });
    // Another run's workflow is refused before WAL-G writes anything.
    await expect(source.run(publishDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), owner: owner('run-b/gp3-0') })).rejects.toThrow(
      /data set .* belongs to .*run-a\/gp3-0.*may not publish into it/,
    );
    expect(await of(`${key}/`)).toEqual([]);
    published = await source.run(publishDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), owner: owner('run-a/gp3-0') });
    expect(published.facts.relations.pgbench_accounts.rows).toBe(100_000);
    const repository = await of(`${key}/`);
    expect(repository.filter((n) => n.includes('/basebackups_005/') && n.endsWith('_backup_stop_sentinel.json'))).toHaveLength(1);
    expect(repository.some((n) => /\/wal_005\/[0-9A-F]{24}\.lz4$/.test(n))).toBe(true);
    manifest = manifestOf(published, key, parts);
    await expect(as('run-b/gp3-0').run(activities.publishDataSetManifest, { store, manifest, owner: owner('run-b/gp3-0') })).rejects.toThrow(/only its builder publishes it/);
    expect(await of(`${key}.manifest.json`)).toEqual([]);
    expect(await as('run-a/gp3-0').run(activities.publishDataSetManifest, { store, manifest, owner: owner('run-a/gp3-0') })).toBe(`s3://${BUCKET}/lab/sets/_datasets/${key}.manifest.json`);
    // A retry finds its own manifest (the put is conditional); a published set is never written into again.
    await as('run-a/gp3-0').run(activities.publishDataSetManifest, { store, manifest, owner: owner('run-a/gp3-0') });
    await expect(source.run(publishDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), owner: owner('run-a/gp3-0') })).rejects.toThrow(/published already/);
    expect(await as('run-b/gp3-0').run(activities.claimDataSet, { store, key, runId: 'run-b', owner: owner('run-b/gp3-0') })).toMatchObject({ state: 'published', manifest: { key } });
    expect(await as('run-a/gp3-0').run(activities.releaseDataSet, { store, key, owner: owner('run-a/gp3-0') })).toMatch(/kept/);
  });

  it('restores the set from S3 onto a fresh host in the same state: the comparison passes', async () => {
    const hostId = target.deps.config.hostId;
    const restored = await target.run(restoreDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 120, amcheck: true });
    const checks = compareDataSet(manifest, restored.facts, restored.amcheck, restored.keys ?? null);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.map((c) => c.name)).toEqual(['row counts', 'checksums', 'relation sizes', 'freeze state', 'pg_amcheck', 'index entries']);
    expect(restored.facts.relations.pgbench_accounts.heapBytes).toBe(published.facts.relations.pgbench_accounts.heapBytes);
    const counted = await withConnection(target.deps.config, async (c) => (await c.query<{ n: string }>('SELECT count(*) AS n FROM public.pgbench_accounts')).rows[0].n);
    expect(Number(counted)).toBe(100_000);
  });

  it('fails the comparison on a set whose manifest does not match its backup', async () => {
    const hostId = source.deps.config.hostId;
    const tamperedParts = { ...parts, loaderVersion: parts.loaderVersion + 1000 };
    tamperedKey = dataSetKey(tamperedParts);
    const claim: DataSetClaim = await as('run-c/gp3-0').run(activities.claimDataSet, { store, key: tamperedKey, runId: 'run-c', owner: owner('run-c/gp3-0') });
    await withConnection(source.deps.config, (c) => c.query('UPDATE public.pgbench_accounts SET abalance = 1 WHERE aid = 4242'));
    const p = await source.run(publishDataSet, { hostId, key: tamperedKey, store: claim.store, ...hostSettings(SETTINGS), owner: owner('run-c/gp3-0') });
    const lying = manifestOf(p, tamperedKey, tamperedParts, published.facts);
    await as('run-c/gp3-0').run(activities.publishDataSetManifest, { store, manifest: lying, owner: owner('run-c/gp3-0') });
    const restored = await target.run(restoreDataSet, { hostId: target.deps.config.hostId, key: tamperedKey, store: claim.store, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 120, amcheck: false });
    const failed = compareDataSet(lying, restored.facts, restored.amcheck).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual(['checksums']);
    expect(failed[0].detail).toMatch(/pgbench_accounts: checksum/);
  });

  it('releases an unpublished set (every object of it), and a host reads only a published set\'s repository', async () => {
    const brokenParts = { ...parts, loaderVersion: parts.loaderVersion + 2000 };
    const brokenKey = dataSetKey(brokenParts);
    const claim: DataSetClaim = await as('run-d/gp3-0').run(activities.claimDataSet, { store, key: brokenKey, runId: 'run-d', owner: owner('run-d/gp3-0') });
    // Half a backup (more objects than one page of a listing holds: 1,000), then the builder fails.
    const repo = s3Of(claim).path.slice(1);
    for (let i = 0; i < 1005; i += 67)
      await Promise.all(Array.from({ length: Math.min(67, 1005 - i) }, (_, j) => moto.clients.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${repo}/basebackups_005/part_${i + j}`, Body: 'x' }))));
    expect(await of(`${brokenKey}/`)).toHaveLength(1005);
    const hostId = target.deps.config.hostId;
    await expect(target.run(restoreDataSet, { hostId, key: brokenKey, store: claim.store, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 30, amcheck: false })).rejects.toThrow(
      /has no manifest.*not published/,
    );
    expect(await as('run-e/x').run(activities.releaseDataSet, { store, key: brokenKey, owner: owner('run-e/x') })).toMatch(/left data set .* alone/);
    expect(await as('run-d/gp3-0').run(activities.releaseDataSet, { store, key: brokenKey, owner: owner('run-d/gp3-0') })).toMatch(/released .*1005 objects/);
    expect(await of(brokenKey)).toEqual([]);
    expect(((await as('run-f/x').run(activities.waitForDataSet, { store, key: brokenKey, timeoutSeconds: 5 })) as { state: string }).state).toBe('released');

    const restoreFrom = (s: ResolvedBackupStore, k = key) => target.run(restoreDataSet, { hostId, key: k, store: s, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 30, amcheck: false });
    const good = s3Of(claimed);
    // A run's own prefix, a path that climbs, a non-key, another key's repository: refused before anything is read.
    await expect(restoreFrom({ ...good, path: '/lab/sets/exp-1' })).rejects.toThrow(/is not that set's repository/);
    await expect(restoreFrom({ ...good, path: `/lab/sets/_datasets/../_datasets/${key}` })).rejects.toThrow(/is not that set's repository/);
    await expect(restoreFrom(good, '../x')).rejects.toThrow(/not a data set key/);
    await expect(restoreFrom({ ...good, path: `/lab/sets/_datasets/${brokenKey}` })).rejects.toThrow(/is not that set's repository/);
    // A published set's manifest copied below another prefix, with no claim beside it, is not a set the lab published.
    await moto.clients.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `elsewhere/_datasets/${key}.manifest.json`, Body: JSON.stringify(manifest) }));
    await expect(restoreFrom({ ...good, path: `/elsewhere/_datasets/${key}` })).rejects.toThrow(/has a manifest but no claim/);
    // ... nor with the real claim copied beside it: the claim names the location it was made for.
    const claimText = JSON.stringify({ kind: 'data-set', resource: `s3://${BUCKET}/lab/sets/_datasets/${key}`, runId: 'run-a', workflowId: 'run-a/gp3-0', execution: 'e1', claimedAt: new Date().toISOString() });
    await moto.clients.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `elsewhere/_datasets/${key}.claim.json`, Body: claimText }));
    await expect(restoreFrom({ ...good, path: `/elsewhere/_datasets/${key}` })).rejects.toThrow(/claims "s3:\/\/lab-datasets\/lab\/sets\/_datasets\/ds-.*not the data set/);
  });

  it('storage-lab datasets list|rm --s3-*: the store\'s sets, a building one left alone, a published one removed whole', async () => {
    const flags = { s3Bucket: BUCKET, s3Prefix: 'lab/sets', s3Endpoint: moto.endpoint };
    const printed: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void printed.push(a.join(' ')));
    const err = jest.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void printed.push(a.join(' ')));
    const home = process.env.STORAGE_LAB_HOME;
    process.env.STORAGE_LAB_HOME = path.join(root, 'lab');
    try {
      const building = dataSetKey({ ...parts, loaderVersion: parts.loaderVersion + 3000 });
      await as('run-g/x').run(activities.claimDataSet, { store, key: building, runId: 'run-g', owner: owner('run-g/x') });
      const sets = await datasetsListCommand(flags);
      expect(Object.fromEntries(sets.map((x) => [x.key, x.state]))).toEqual({ [key]: 'published', [tamperedKey]: 'published', [building]: 'building' });
      expect(printed.join('\n')).toMatch(new RegExp(`${key}  published  PostgreSQL \\d+, scale 1, 100,\\d+ rows`));
      const tamperedObjects = (await of(`${tamperedKey}/`)).length;
      await datasetsRmCommand([building, tamperedKey, '../x'], flags);
      expect(process.exitCode).toBe(1);
      process.exitCode = 0;
      expect(printed.join('\n')).toContain(`data set ${building} is being built by run-g/x; left alone`);
      expect(printed.join('\n')).toContain(`removed data set ${tamperedKey} from s3://${BUCKET}/lab/sets/_datasets (asked for): its manifest, ${tamperedObjects} objects of its repository, its claim`);
      expect(printed.join('\n')).toContain('"../x" is not a data set key');
      expect(await of(tamperedKey)).toEqual([]);
      expect(await of(building)).toEqual([`lab/sets/_datasets/${building}.claim.json`]);
      await as('run-g/x').run(activities.releaseDataSet, { store, key: building, owner: owner('run-g/x') });
      // A flag the spec's rules refuse names the flag.
      expect(() => storeOf({ s3Bucket: 'Bad_Bucket' })).toThrow(/--s3-bucket: /);
      expect(() => storeOf({ s3Bucket: BUCKET, s3Prefix: '../up' })).toThrow(/--s3-prefix: /);
      expect(() => storeOf({ s3Bucket: BUCKET, storePath: 'x' })).toThrow(/give one of them/);
    } finally {
      log.mockRestore();
      err.mockRestore();
      if (home === undefined) delete process.env.STORAGE_LAB_HOME;
      else process.env.STORAGE_LAB_HOME = home;
    }
  });

  it('lists the sets in S3 and removes expired ones: manifest, every object of the repository, claim', async () => {
    const sets: DataSetEntry[] = await as('sweeper').run(activities.listDataSets, { store });
    expect(sets.find((s) => s.key === key)).toMatchObject({ state: 'published', manifest: { key } });
    const before = (await of(`${key}/`)).length;
    expect(before).toBeGreaterThan(3);
    expect(await as('sweeper').run(activities.removeExpiredDataSets, { store })).toEqual([]);
    // The sweeper's call: the lab's default folder store, and every S3 store a set was claimed in (recorded at the
    // claim); a recorded store that cannot be read is named, and the others are still swept.
    recordS3DataSetStore({ ...store, bucket: 'no-such-bucket' }, path.join(root, 'hosts'));
    expect(recordedS3DataSetStores(path.join(root, 'hosts')).map((x) => `${x.bucket}/${x.prefix}`).sort()).toEqual([`${BUCKET}/lab/sets`, 'no-such-bucket/lab/sets']);
    const sweep = { store: { kind: 'folder' as const }, recordedS3Stores: true, now: new Date(Date.now() + 8 * 86_400_000).toISOString() };
    const removed: string[] = await as('sweeper').run(activities.removeExpiredDataSets, sweep);
    expect(removed.filter((l) => l.startsWith('could not sweep'))).toEqual([expect.stringMatching(/^could not sweep the data sets of s3:\/\/no-such-bucket\/lab\/sets\/_datasets: /)]);
    expect(removed.join('\n')).toContain(`removed data set ${key} from s3://${BUCKET}/lab/sets/_datasets (expired at`);
    expect(removed.join('\n')).toContain(`${before} objects of its repository`);
    expect(await of(key)).toEqual([]);
    expect(((await as('sweeper').run(activities.listDataSets, { store })) as DataSetEntry[]).find((s) => s.key === key)).toBeUndefined();
  });
});

describe('an experiment whose data sets live in S3 (integration, moto): the workflow, the control worker and the host agents', () => {
  let moto: Moto;
  let lab: TestLab;
  beforeAll(async () => {
    moto = await startMoto();
    await moto.createBucket(BUCKET);
    // The local agents of a run whose sets are in S3 get these keys (hostAgentEnv, s3Backups) for WAL-G and the SDK.
    process.env.AWS_ACCESS_KEY_ID = 'testing';
    process.env.AWS_SECRET_ACCESS_KEY = 'testing';
    lab = await startTestLab('datasets-s3');
  });
  afterAll(async () => {
    await lab?.close();
    await moto?.stop();
  });

  it('loads and publishes on one host, restores on the other, compared; the set stays in S3 after the run', async () => {
    const store = { kind: 's3', bucket: BUCKET, prefix: 'lab/run-sets', region: 'us-east-1', endpoint: moto.endpoint };
    const handle = await lab.startExperiment({ preset: 'ci', data: { reuse: 'auto' }, phases: NO_PHASES, durability: { enabled: false, backupStore: store } });
    const summary = (await handle.result()) as { status: string };
    expect(summary.status).toBe('completed');
    const result = JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(handle.workflowId), 'result.json'), 'utf8')) as ExperimentResult;
    const clusters = Object.values(result.classes).map((cls) => cls.clusters[0]);
    expect(clusters.map((c) => c.dataSet?.prepared).sort()).toEqual(['loaded-and-published', 'restored']);
    const restored = clusters.find((c) => c.dataSet?.prepared === 'restored')!;
    expect(restored.dataSet!.checks!.map((x) => x.name)).toEqual(['row counts', 'checksums', 'relation sizes', 'freeze state', 'pg_amcheck', 'index entries']);
    expect(restored.dataSet!.checks!.filter((x) => !x.ok)).toEqual([]);
    expect(restored.rows).toBe(200_000);
    expect(restored.load).toBeUndefined();
    const key = restored.dataSet!.key;
    const listed = await moto.clients.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `lab/run-sets/_datasets/${key}` }));
    const names = (listed.Contents ?? []).map((o) => o.Key!);
    expect(names).toEqual(expect.arrayContaining([`lab/run-sets/_datasets/${key}.claim.json`, `lab/run-sets/_datasets/${key}.manifest.json`]));
    expect(names.some((n) => n.startsWith(`lab/run-sets/_datasets/${key}/basebackups_005/`))).toBe(true);
    expect(lab.leftovers(clusters.map((c) => c.hostId))).toEqual([]);
    // The cluster took the S3 data sets patch (a run begun before it loads every host of an S3-store spec).
    const history = await lab.client.workflow.getHandle(clusterWorkflowId(handle.workflowId, restored.className, 0)).fetchHistory();
    expect(patchesOf(history)).toEqual(expect.arrayContaining([DATA_SETS_PATCH, DATA_SETS_S3_PATCH]));
  });
});
