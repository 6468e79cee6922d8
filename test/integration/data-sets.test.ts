/**
 * Data sets for real at a tiny scale (issue 31): a load on one bare host, published with WAL-G into a claimed set
 * (manifest last), restored onto a fresh host and compared with the manifest (rows, checksums, sizes, freeze state,
 * pg_amcheck). The comparison fails on a set whose manifest does not match its backup; a second claimant waits for
 * the builder's manifest and times out with a reason; a failed publish leaves nothing a later run could take; a
 * restore reads nothing but a published set's repository. Host and control activities run in mock activity contexts
 * (bench/bench-host.ts), with real Postgres and WAL-G.
 */
import { manifestOf as sharedManifestOf } from '../helpers/data-set-manifest';
import { MockActivityEnvironment } from '@temporalio/testing';
import { chmodSync, closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostSettings, startBenchHost, type BenchHost } from '../../bench/bench-host';
import { createDataSetActivities, type DataSetClaim } from '../../activities/control/data-sets';
import { dataSetFacts, preallocateWal, publishDataSet, restoreDataSet, describeServer, stageWalSegments, walAheadDir, type PublishOutcome } from '../../activities/host/data-set';
import { loadData, startCold } from '../../activities/host/load';
import { execFileSync } from 'node:child_process';
import { stopPostgres } from '../../activities/host/postgres';
import { compareDataSet, dataSetKey, dataSetKeyParts, type DataSetKeyParts, type DataSetManifest } from '../../common/input/data-set';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import { registerLabRoot } from '../../lib/lab-fs';
import { dataSetPathsAt, type DataSetEntry } from '../../lib/data-sets';
import { withConnection } from '../../lib/pg';
import { findWalg } from '../../lib/walg';

const SETTINGS = { shared_buffers: '32MB', max_wal_size: '128MB', max_connections: '40', wal_level: 'replica', log_line_prefix: '%m [%p] ', log_timezone: 'UTC' };
// The restoring host serves fewer clients than the publisher (a 16-client run restoring a 64-client run's set): with
// hot standby on, PostgreSQL would refuse to recover the backup ("insufficient parameter settings").
const FEWER_CONNECTIONS = { ...SETTINGS, max_connections: '24' };
const folder = { kind: 'folder' as const };

describe('data sets: publish once, restore elsewhere, compare (integration)', () => {
  let root: string;
  let source: BenchHost;
  let target: BenchHost;
  let activities: ReturnType<typeof createDataSetActivities>;
  let parts: DataSetKeyParts;
  let key: string;
  let claimed: DataSetClaim;
  let published: PublishOutcome;
  let manifest: DataSetManifest;
  const as = (workflowId: string, execution = 'e1') => new MockActivityEnvironment({ workflowExecution: { workflowId, runId: execution } });
  const owner = (workflowId: string, execution = 'e1') => ({ workflowId, execution });

  beforeAll(async () => {
    expect(findWalg()).not.toBeNull();
    root = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-datasets-'));
    chmodSync(root, 0o755);
    registerLabRoot(root);
    process.env.STORAGE_LAB_BACKUPS_DIR = path.join(root, 'backups');
    activities = createDataSetActivities({ hostsDir: path.join(root, 'hosts') });
    source = await startBenchHost('ds-source', SETTINGS);
    target = await startBenchHost('ds-target', SETTINGS);
    await target.run(stopPostgres, { hostId: target.deps.config.hostId, mode: 'immediate' });
    rmSync(target.deps.config.dataDir, { recursive: true, force: true });
    const server = await source.run(describeServer, { hostId: source.deps.config.hostId });
    parts = dataSetKeyParts({ data: { scale: 1 }, postgres: { settings: {} } }, server.major);
    key = dataSetKey(parts);
  });
  afterAll(async () => {
    await source?.close();
    await target?.close();
    delete process.env.STORAGE_LAB_BACKUPS_DIR;
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const manifestOf = (p: PublishOutcome, k: string, keyParts: DataSetKeyParts, facts = p.facts): DataSetManifest =>
    sharedManifestOf(source.deps.config.hostId, p, k, keyParts, facts);

  it('claims the key for its first builder; a second run finds it being built and waits, bounded, with a reason', async () => {
    claimed = await as('run-a/gp3-0').run(activities.claimDataSet, { store: folder, key, runId: 'run-a', owner: owner('run-a/gp3-0') });
    expect(claimed.state).toBe('claimed');
    expect(path.basename(claimed.store.path)).toBe(key);
    // A retry of the builder finds its own claim.
    expect(((await as('run-a/gp3-0').run(activities.claimDataSet, { store: folder, key, runId: 'run-a', owner: owner('run-a/gp3-0') })) as { state: string }).state).toBe('claimed');
    const other = await as('run-b/gp3-0').run(activities.claimDataSet, { store: folder, key, runId: 'run-b', owner: owner('run-b/gp3-0') });
    expect(other).toMatchObject({ state: 'building', by: expect.stringContaining('run-a/gp3-0') });
    const waited = await as('run-b/gp3-0').run(activities.waitForDataSet, { store: folder, key, timeoutSeconds: 1 });
    expect(waited).toMatchObject({ state: 'timeout', detail: expect.stringMatching(/run-a\/gp3-0.*not published within 1 s/) });
    // A key that is not one is refused before it becomes a path.
    await expect(as('run-b/x').run(activities.claimDataSet, { store: folder, key: '../../etc', runId: 'run-b', owner: owner('run-b/x') })).rejects.toThrow(/not a data set key/);
  });

  it('loads and publishes: facts of a frozen set, a WAL-G base backup, the manifest written last', async () => {
    const hostId = source.deps.config.hostId;
    await source.run(loadData, { hostId, scale: 1, chunkRows: 25_000, writers: 2, freeze: true });
    // Only the set's builder writes into its folder: another run's workflow is refused before anything is written.
    await expect(source.run(publishDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), owner: owner('run-b/gp3-0') })).rejects.toThrow(
      /data set .* belongs to .*run-a\/gp3-0.*may not publish into it/,
    );
    expect(readdirSync(claimed.store.path)).toEqual([]);
    published = await source.run(publishDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), owner: owner('run-a/gp3-0') });
    expect(published.backup.tool).toBe('wal-g');
    expect(published.facts.relations.pgbench_accounts.rows).toBe(100_000);
    // VACUUM (FREEZE, ANALYZE): every page that holds a row is all-frozen. Not every page of the file: two writers
    // extending the table at once make Postgres add blocks in bulk, and a block no row reached stays all-zero, which
    // VACUUM does not mark (CI once saw 1,646 pages, 1,640 with rows).
    const acc = published.facts.relations.pgbench_accounts;
    // Which pages hold rows is read in the cold test below, after it has seen the publish end cold.
    expect(acc.allFrozen).toBeGreaterThan(0);
    expect(acc.allFrozen).toBe(acc.allVisible);
    expect(acc.allFrozen).toBeLessThanOrEqual(acc.heapBytes / 8192);
    // Archiving is off again after the publish.
    const mode = await withConnection(source.deps.config, async (c) => (await c.query<{ v: string }>("SELECT current_setting('archive_mode') AS v")).rows[0].v);
    expect(mode).toBe('off');
    // Not usable before its manifest: a second run still waits.
    expect(((await as('run-b/gp3-0').run(activities.claimDataSet, { store: folder, key, runId: 'run-b', owner: owner('run-b/gp3-0') })) as { state: string }).state).toBe('building');
    manifest = manifestOf(published, key, parts);
    // Only the builder writes the manifest.
    await expect(as('run-b/gp3-0').run(activities.publishDataSetManifest, { store: folder, manifest, owner: owner('run-b/gp3-0') })).rejects.toThrow(/only its builder publishes it/);
    await as('run-a/gp3-0').run(activities.publishDataSetManifest, { store: folder, manifest, owner: owner('run-a/gp3-0') });
    const now = await as('run-b/gp3-0').run(activities.claimDataSet, { store: folder, key, runId: 'run-b', owner: owner('run-b/gp3-0') });
    expect(now).toMatchObject({ state: 'published', manifest: { key } });
    expect(await as('run-b/gp3-0').run(activities.waitForDataSet, { store: folder, key, timeoutSeconds: 5 })).toMatchObject({ state: 'published' });
    // The builder's undo keeps a published set.
    expect(await as('run-a/gp3-0').run(activities.releaseDataSet, { store: folder, key, owner: owner('run-a/gp3-0') })).toMatch(/kept/);
  });

  it('restores the set onto a fresh host in the same state: the comparison passes', async () => {
    const hostId = target.deps.config.hostId;
    const restored = await target.run(restoreDataSet, { hostId, key, store: claimed.store, ...hostSettings(FEWER_CONNECTIONS), recoveryTimeoutSeconds: 120, amcheck: true });
    const checks = compareDataSet(manifest, restored.facts, restored.amcheck, restored.keys ?? null);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.map((c) => c.name)).toEqual(expect.arrayContaining(['pg_amcheck', 'index entries']));
    // The index keys were read from each primary key alone, as many as the heap's rows.
    expect(restored.keys?.pgbench_accounts).toMatchObject({ index: { scan: 'Index Only Scan', entries: restored.facts.relations.pgbench_accounts.rows } });
    // Same pages: the restored sizes are the source's exactly, not only within 1 %.
    expect(restored.facts.relations.pgbench_accounts.heapBytes).toBe(published.facts.relations.pgbench_accounts.heapBytes);
    expect(restored.restoreSeconds).toBeGreaterThan(0);
    // The restore's recovery settings are gone: the durability step's archive_mode would otherwise be overridden.
    const auto = await withConnection(target.deps.config, async (c) => (await c.query<{ v: string }>("SELECT current_setting('archive_mode') AS v, current_setting('restore_command') AS r")).rows[0]);
    expect(auto).toMatchObject({ v: 'off' });
    expect((auto as unknown as { r: string }).r).toBe('');
    // It runs with its own max_connections, fewer than the publisher's, having recovered the publisher's backup.
    expect(await withConnection(target.deps.config, async (c) => (await c.query<{ v: string }>("SELECT current_setting('max_connections') AS v")).rows[0].v)).toBe('24');
    // A workload role can use the tables on the restored host (its grants came with the set).
    const counted = await withConnection(target.deps.config, async (c) => (await c.query<{ n: string }>('SELECT count(*) AS n FROM public.pgbench_accounts')).rows[0].n);
    expect(Number(counted)).toBe(100_000);
    // A retry of a finished restore checks again without restoring again.
    const again = await target.run(restoreDataSet, { hostId, key, store: claimed.store, ...hostSettings(FEWER_CONNECTIONS), recoveryTimeoutSeconds: 120, amcheck: false });
    expect(again.backupLabel).toBe(restored.backupLabel);
    expect(compareDataSet(manifest, again.facts, null).every((c) => c.ok)).toBe(true);
    // Every relation file is the publisher's byte for byte (read after its backup): the rows were not scanned again.
    expect(Object.keys(published.facts.files ?? {})).toEqual(expect.arrayContaining(['pgbench_accounts', 'pgbench_accounts_pkey', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history']));
    expect(Object.keys(published.facts.files!.pgbench_accounts)).toEqual(expect.arrayContaining(['main', 'fsm', 'vm']));
    expect(published.facts.files!.pgbench_accounts.main.bytes).toBe(published.facts.relations.pgbench_accounts.heapBytes);
    expect(restored.facts.files).toEqual(published.facts.files);
    expect(restored.facts.relations.pgbench_accounts).toMatchObject({ rows: 100_000, checksum: null });
    expect(checks.find((c) => c.name === 'checksums')?.detail).toMatch(/^every relation file the publisher's byte for byte/);
    // Each part of the checks timed apart: the relation files, then no row scan, beside pg_amcheck.
    expect(restored.facts.checksumMethod).toBe('hash-record-64');
    expect(restored.checkParts).toMatchObject({ rowsScanned: false, relationFilesSeconds: expect.any(Number), checksumSeconds: 0, amcheckSeconds: expect.any(Number) });
    expect(again.checkParts?.amcheckSeconds).toBeNull();
    // The WAL segments ahead were written during the fetch (staged) and linked in; the staging folder is gone.
    expect(restored.checkParts).toMatchObject({ walSegments: expect.any(Number), walStaged: restored.checkParts?.walSegments, walStagedSeconds: expect.any(Number) });
    expect(restored.checkParts?.walStageError).toBeUndefined();
    expect(existsSync(walAheadDir(target.deps))).toBe(false);
    expect(published.parts).toMatchObject({ checksumSeconds: expect.any(Number), backupSeconds: expect.any(Number) });
  });

  it('every preparation ends cold: the data set out of shared_buffers and out of the page cache (startCold)', async () => {
    // Pages of pgbench_accounts' files the kernel holds (util-linux's fincore), and its buffers in shared_buffers.
    const accounts = (host: BenchHost) =>
      withConnection(host.deps.config, async (c) => {
        await c.query('CREATE EXTENSION IF NOT EXISTS pg_buffercache SCHEMA public');
        const r = await c.query<{ file: string; buffers: string }>(
          `SELECT pg_relation_filepath('public.pgbench_accounts') AS file,
                  (SELECT count(*) FROM public.pg_buffercache WHERE relfilenode = pg_relation_filenode('public.pgbench_accounts')) AS buffers`,
        );
        const file = path.join(host.deps.config.dataDir, r.rows[0].file);
        const resident = Number(execFileSync('fincore', ['--raw', '--noheadings', '--output', 'PAGES', file]).toString().trim());
        return { resident, buffers: Number(r.rows[0].buffers) };
      });
    // shared_buffers are emptied on PostgreSQL 17 (pg_buffercache_evict); an older server keeps what it holds.
    const major = (await target.run(describeServer, { hostId: target.deps.config.hostId })).major;
    const cold = major >= 17 ? { resident: 0, buffers: 0 } : { resident: 0, buffers: expect.any(Number) };
    // The restore (the test before) and the publish ended cold, and nothing has read the table since.
    expect(await accounts(target)).toEqual(cold);
    expect(await accounts(source)).toEqual(cold);
    // The publish's VACUUM (FREEZE) left every page that holds a row all-frozen (read here: it warms the source).
    const pages = await withConnection(source.deps.config, async (c) => {
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_visibility SCHEMA public');
      try {
        const r = await c.query<{ used: string; unfrozen: string }>(
          `WITH used AS (SELECT DISTINCT (ctid::text::point)[0]::bigint AS blkno FROM public.pgbench_accounts)
           SELECT (SELECT count(*) FROM used) AS used,
                  (SELECT count(*) FROM public.pg_visibility('public.pgbench_accounts'::regclass) v JOIN used USING (blkno) WHERE NOT v.all_frozen) AS unfrozen`,
        );
        return { used: Number(r.rows[0].used), unfrozen: Number(r.rows[0].unfrozen) };
      } finally {
        await c.query('DROP EXTENSION IF EXISTS pg_visibility');
      }
    });
    expect(pages.used).toBeGreaterThan(0);
    expect(pages.unfrozen).toBe(0);
    expect(published.facts.relations.pgbench_accounts.allFrozen).toBeGreaterThanOrEqual(pages.used);
    // A scan brings it back into both; startCold takes it out of both again.
    await withConnection(target.deps.config, (c) => c.query('SELECT sum(abalance) FROM public.pgbench_accounts'));
    const warm = await accounts(target);
    expect(warm.resident).toBeGreaterThan(0);
    if (major >= 17) expect(warm.buffers).toBeGreaterThan(0);
    const { filesDropped } = await withConnection(target.deps.config, (c) => startCold(target.deps, c));
    // The four tables and three primary keys, each with its forks.
    expect(filesDropped).toBeGreaterThanOrEqual(7);
    expect(await accounts(target)).toEqual(cold);
  });

  it("a restored host has the WAL segments a loaded one keeps: whole, zero-filled, up to max_wal_size ahead", async () => {
    const ahead = (host: BenchHost) =>
      withConnection(host.deps.config, async (c) =>
        Number(
          (
            await c.query<{ n: string }>(
              `SELECT count(*) AS n FROM pg_ls_waldir() WHERE name > pg_walfile_name(pg_current_wal_insert_lsn()) AND name ~ '^[0-9A-F]{24}$' AND size = 16 * 1024 * 1024`,
            )
          ).rows[0].n,
        ),
      );
    // As many as the publisher had once ready (its manifest says), at most max_wal_size's (128MB: 8 of 16 MiB).
    const published = manifest.facts.walSegmentsAhead!;
    expect(published).toBe(await ahead(source));
    console.log(`WAL segments ahead: the publisher ${published}, the restored host ${await ahead(target)}`);
    expect(await ahead(target)).toBeGreaterThanOrEqual(Math.min(8, published));
    // Made once: a second call finds them all there.
    expect(await withConnection(target.deps.config, (c) => preallocateWal(target.deps, c, published))).toEqual({ segments: 0, staged: 0 });
    // Asked for more (a publisher whose load recycled more), it makes the rest, never beyond max_wal_size's 8.
    const before = await ahead(target);
    expect(await withConnection(target.deps.config, (c) => preallocateWal(target.deps, c, 20))).toEqual({ segments: 8 - before, staged: 0 });
    expect(await ahead(target)).toBe(8);
    // Each made segment is whole and holds only zeros, as one PostgreSQL makes itself (wal_init_zero).
    const walDir = path.join(target.deps.config.dataDir, 'pg_wal');
    const last = readdirSync(walDir).filter((n) => /^[0-9A-F]{24}$/.test(n)).sort().at(-1)!;
    const bytes = readFileSync(path.join(walDir, last));
    expect(bytes.length).toBe(16 * 2 ** 20);
    expect(bytes.every((b) => b === 0)).toBe(true);
    // The server writes into them: a segment switch lands in the next one, which keeps its size.
    await withConnection(target.deps.config, async (c) => {
      await c.query('CREATE TABLE public.wal_probe AS SELECT g FROM generate_series(1, 1000) g');
      await c.query('SELECT pg_switch_wal()');
      await c.query('DROP TABLE public.wal_probe');
    });
    expect(await ahead(target)).toBeGreaterThanOrEqual(7);
    // Segments staged during a fetch (here, by hand) are linked in first, the rest written; the staging folder goes.
    // The two last segments ahead removed first (unused yet: the server would make them again), so some are missing.
    const stageDir = walAheadDir(target.deps);
    const segments = () => readdirSync(walDir).filter((n) => /^[0-9A-F]{24}$/.test(n)).sort();
    for (const n of segments().slice(-2)) rmSync(path.join(walDir, n));
    const missingNow = 8 - (await ahead(target));
    expect(missingNow).toBeGreaterThanOrEqual(2);
    const staged = await stageWalSegments(target.deps, missingNow + 2);
    expect(staged).toMatchObject({ dir: stageDir, count: missingNow + 2, error: null });
    expect(readdirSync(stageDir).sort()).toEqual(Array.from({ length: missingNow + 2 }, (_, i) => String(i)).sort());
    const stagedInodes = Array.from({ length: missingNow }, (_, i) => statSync(path.join(stageDir, String(i))).ino);
    expect(await withConnection(target.deps.config, (c) => preallocateWal(target.deps, c, 20, staged))).toEqual({ segments: missingNow, staged: missingNow });
    expect(existsSync(stageDir)).toBe(false);
    expect(await ahead(target)).toBe(8);
    // The missing segments are the staged files themselves (linked, not copied), whole and zero-filled.
    const walInodes = new Set(segments().map((n) => statSync(path.join(walDir, n)).ino));
    expect(stagedInodes.filter((ino) => walInodes.has(ino))).toEqual(stagedInodes);
    const newest = readFileSync(path.join(walDir, segments().at(-1)!));
    expect(newest.length === 16 * 2 ** 20 && newest.every((b) => b === 0)).toBe(true);
    // Staged files of another size than the server's segments are never used, and go too.
    const odd = { ...(await stageWalSegments(target.deps, 1)), segmentBytes: 8 * 2 ** 20 };
    expect(await withConnection(target.deps.config, (c) => preallocateWal(target.deps, c, 20, odd))).toEqual({ segments: 0, staged: 0 });
    expect(existsSync(stageDir)).toBe(false);
    // A manifest's count is capped by what the volume holds beside the set: here, room for about two and a half.
    const volume = statfsSync(path.dirname(target.deps.config.dataDir));
    const capped = await stageWalSegments(target.deps, 5, volume.bavail * volume.bsize - 2.5 * 16 * 2 ** 20);
    expect(capped.count).toBeGreaterThanOrEqual(1);
    expect(capped.count).toBeLessThan(5);
    expect(await withConnection(target.deps.config, (c) => preallocateWal(target.deps, c, 20, capped))).toEqual({ segments: 0, staged: 0 });
    expect(existsSync(stageDir)).toBe(false);
  });

  it('a manifest of the first format (md5-64 checksums) is checked the way it was computed', async () => {
    // The same set, its manifest's facts computed with md5 as the first manifests were: the restored host computes md5.
    const md5Facts = await withConnection(source.deps.config, (c) => dataSetFacts(c, 'md5-64'));
    const firstFormat = manifestOf(published, key, parts, { ...md5Facts, checksumMethod: undefined });
    delete firstFormat.facts.checksumMethod;
    const manifestFile = dataSetPathsAt(claimed.store.path, key).manifest;
    const current = readFileSync(manifestFile, 'utf8');
    writeFileSync(manifestFile, JSON.stringify(firstFormat));
    try {
      const hostId = target.deps.config.hostId;
      const again = await target.run(restoreDataSet, { hostId, key, store: claimed.store, ...hostSettings(FEWER_CONNECTIONS), recoveryTimeoutSeconds: 120, amcheck: false });
      expect(again.facts.checksumMethod).toBe('md5-64');
      expect(again.facts.relations.pgbench_accounts.checksum).toBe(md5Facts.relations.pgbench_accounts.checksum);
      expect(compareDataSet(firstFormat, again.facts, null).filter((c) => !c.ok)).toEqual([]);
      // Checksums of the other method are never taken for a match.
      expect(compareDataSet(manifest, again.facts, null).filter((c) => !c.ok).map((c) => c.name)).toEqual(['checksums']);
    } finally {
      writeFileSync(manifestFile, current);
    }
  });

  it('fails the comparison on a restored heap tuple its index does not know: checksums and the index keys (pg_amcheck, plain, sees a sound heap and index)', async () => {
    const hostId = target.deps.config.hostId;
    const file = await withConnection(target.deps.config, async (c) => (await c.query<{ f: string }>("SELECT pg_relation_filepath('public.pgbench_accounts') AS f")).rows[0].f);
    await target.run(stopPostgres, { hostId, mode: 'fast' });
    // aid 4242 (bid 1, abalance 0) becomes 4243 on disk: a heap tuple with no index entry, a row that changed.
    const want = Buffer.alloc(12);
    want.writeInt32LE(4242, 0);
    want.writeInt32LE(1, 4);
    want.writeInt32LE(0, 8);
    const heap = path.join(target.deps.config.dataDir, file);
    const bytes = readFileSync(heap);
    const at = bytes.indexOf(want);
    expect(at).toBeGreaterThan(0);
    expect(bytes.indexOf(want, at + 1)).toBe(-1);
    const fd = openSync(heap, 'r+');
    try {
      writeSync(fd, Buffer.from([0x93]), 0, 1, at); // 4242 = 0x1092 -> 0x1093
    } finally {
      closeSync(fd);
    }
    const checked = await target.run(restoreDataSet, { hostId, key, store: claimed.store, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 120, amcheck: true });
    const failed = compareDataSet(manifest, checked.facts, checked.amcheck, checked.keys ?? null).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual(['checksums', 'index entries']);
    // The heap's file is not the publisher's: the rows were scanned, and their checksum differs.
    expect(checked.checkParts?.rowsScanned).toBe(true);
    expect(failed[0].detail).toMatch(/^pgbench_accounts: checksum .*; and 1 relation files differ from the publisher's: pgbench_accounts main: XXH128/);
    expect(failed[1].detail).toMatch(/^pgbench_accounts: the index's aid values differ from the heap's/);
    expect(checked.amcheck).toMatchObject({ ok: true });
  });

  it('fails the comparison on a set whose manifest does not match its backup', async () => {
    // A second set (its own key) whose backup holds one changed row, published with the facts from before the change.
    const hostId = source.deps.config.hostId;
    const tamperedParts = { ...parts, loaderVersion: parts.loaderVersion + 1000 };
    const tamperedKey = dataSetKey(tamperedParts);
    const claim: DataSetClaim = await as('run-c/gp3-0').run(activities.claimDataSet, { store: folder, key: tamperedKey, runId: 'run-c', owner: owner('run-c/gp3-0') });
    expect(claim.state).toBe('claimed');
    await withConnection(source.deps.config, (c) => c.query('UPDATE public.pgbench_accounts SET abalance = 1 WHERE aid = 4242'));
    const p = await source.run(publishDataSet, { hostId, key: tamperedKey, store: claim.store, ...hostSettings(SETTINGS), owner: owner('run-c/gp3-0') });
    expect(p.facts.relations.pgbench_accounts.checksum).not.toBe(published.facts.relations.pgbench_accounts.checksum);
    const lying = manifestOf(p, tamperedKey, tamperedParts, published.facts);
    await as('run-c/gp3-0').run(activities.publishDataSetManifest, { store: folder, manifest: lying, owner: owner('run-c/gp3-0') });
    const restored = await target.run(restoreDataSet, { hostId: target.deps.config.hostId, key: tamperedKey, store: claim.store, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 120, amcheck: false });
    const failed = compareDataSet(lying, restored.facts, restored.amcheck).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual(['checksums']);
    expect(failed[0].detail).toMatch(/pgbench_accounts: checksum/);
  });

  it('a failed publish leaves nothing a later run could take; a restore reads only a published set', async () => {
    const brokenParts = { ...parts, loaderVersion: parts.loaderVersion + 2000 };
    const brokenKey = dataSetKey(brokenParts);
    const claim: DataSetClaim = await as('run-d/gp3-0').run(activities.claimDataSet, { store: folder, key: brokenKey, runId: 'run-d', owner: owner('run-d/gp3-0') });
    // Half a backup, then the builder fails: its undo removes the set.
    writeFileSync(path.join(claim.store.path, 'half-a-backup'), 'x');
    const hostId = target.deps.config.hostId;
    await expect(
      target.run(restoreDataSet, { hostId, key: brokenKey, store: claim.store, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 30, amcheck: false }),
    ).rejects.toThrow(/has no manifest.*not published/);
    // Another run's undo leaves it alone; the builder's removes it.
    expect(await as('run-e/x').run(activities.releaseDataSet, { store: folder, key: brokenKey, owner: owner('run-e/x') })).toMatch(/left data set .* alone/);
    expect(await as('run-d/gp3-0').run(activities.releaseDataSet, { store: folder, key: brokenKey, owner: owner('run-d/gp3-0') })).toMatch(/released/);
    expect(existsSync(claim.store.path)).toBe(false);
    expect(readdirSync(path.dirname(claim.store.path)).filter((f) => f.startsWith(brokenKey))).toEqual([]);
    // A waiter learns the builder gave up; a later run claims the key afresh.
    expect(((await as('run-f/x').run(activities.waitForDataSet, { store: folder, key: brokenKey, timeoutSeconds: 5 })) as { state: string }).state).toBe('released');
    expect(((await as('run-f/x').run(activities.claimDataSet, { store: folder, key: brokenKey, runId: 'run-f', owner: owner('run-f/x') })) as { state: string }).state).toBe('claimed');
    // A store that is not the key's repository is refused before anything is read.
    const elsewhere: ResolvedBackupStore = { kind: 'folder', path: path.join(root, 'backups', 'some-run') };
    await expect(target.run(restoreDataSet, { hostId, key, store: elsewhere, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 30, amcheck: false })).rejects.toThrow(
      /is not that set's repository/,
    );
    await expect(
      target.run(restoreDataSet, { hostId, key, store: { kind: 'folder', path: `${path.dirname(claimed.store.path)}/../_datasets/${key}` }, ...hostSettings(SETTINGS), recoveryTimeoutSeconds: 30, amcheck: false }),
    ).rejects.toThrow(/is not that set's repository/);
  });

  it('lists the sets and removes expired ones, manifest first', async () => {
    const sets: DataSetEntry[] = await as('sweeper').run(activities.listDataSets, { store: folder });
    expect(sets.find((s) => s.key === key)).toMatchObject({ state: 'published' });
    expect(await as('sweeper').run(activities.removeExpiredDataSets, { store: folder })).toEqual([]);
    const removed: string[] = await as('sweeper').run(activities.removeExpiredDataSets, { store: folder, now: new Date(Date.now() + 8 * 86_400_000).toISOString() });
    expect(removed.join('\n')).toContain(key);
    expect(existsSync(claimed.store.path)).toBe(false);
    expect(((await as('sweeper').run(activities.listDataSets, { store: folder })) as DataSetEntry[]).find((s) => s.key === key)).toBeUndefined();
  });
});
