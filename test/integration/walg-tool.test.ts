/**
 * WAL-G as the backup tool, for real at tiny sizes: PostgreSQL 15 archiving with wal-push, a full and a delta base
 * backup, restores to an LSN and a time between marker rows and to the end of the archive, wal-verify, and a removed
 * archived segment failing both the restore and the check in bounded time. Once on a folder store and once on moto's
 * S3 (plain HTTP, which WAL-G accepts); the time target on the folder store only. Bare hosts in temporary folders driven by the lab's own host activities in a
 * mock activity context (bench/bench-host.ts), as the phases test does: the drill workflow is not under test here.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hostSettings, startBenchHost, type BenchHost } from '../../bench/bench-host';
import {
  checkArchive,
  configureBackups,
  initBackupRepository,
  recoverFromBackup,
  removeArchivedSegment,
  restoreBackup,
  takeBackup,
} from '../../activities/host/backup';
import { markTarget, verifyRestore, waitForArchive, writeHistory } from '../../activities/host/restore-drill';
import { loadData } from '../../activities/host/load';
import { configurePostgres, stopPostgres } from '../../activities/host/postgres';
import { withConnection } from '../../lib/pg';
import type { RecoveryTarget } from '../../common/input/backup-store';
import { findWalg, WalG } from '../../lib/walg';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupInfo, RestoreTarget } from '../../common/results/drill-result';
import { parseSegmentName, segmentOfLsn } from '../../common/core/lsn';
import { registerLabRoot } from '../../lib/lab-fs';
import { postgresOsUser } from '../../lib/postgres-binaries';
import { startMoto, type Moto } from '../helpers/moto';

const SETTINGS = { shared_buffers: '32MB', max_connections: '40', wal_level: 'replica', log_line_prefix: '%m [%p] ', log_timezone: 'UTC' };
// The restore host serves fewer clients than the source: each tool's recovery must not need the source's
// max_connections (it runs without hot standby, RECOVERY_HOT_STANDBY; with it, PostgreSQL refuses to recover).
const RESTORE_SETTINGS = { ...SETTINGS, max_connections: '24' };
const TABLES = ['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history'];
/** Recovery of a few segments takes seconds; a missing segment must end it well within this. */
const RECOVERY_TIMEOUT_SECONDS = 60;
const tool = 'wal-g' as const;

// moto accepts any keys; WAL-G (run by the agent and by the server's archive_command) takes them from the environment.
process.env.AWS_ACCESS_KEY_ID = 'testing';
process.env.AWS_SECRET_ACCESS_KEY = 'testing';

/** A store and its two hosts: the source, and the restore host (its cluster stopped and its data folder removed). */
interface Setup {
  store: ResolvedBackupStore;
  source: BenchHost;
  restore: BenchHost;
  close(): Promise<void>;
}

/** Makes a store and its two hosts, all at once (each host an initdb and a start, moto's server); on failure, undoes what it made. */
async function setUp(kind: 'folder' | 's3'): Promise<Setup> {
  let moto: Moto | undefined;
  let storeDir: string | undefined;
  const hosts = Promise.allSettled([startBenchHost(`walg-${kind}-source`, SETTINGS), startBenchHost(`walg-${kind}-restore`, SETTINGS)]);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const made of await hosts) if (made.status === 'fulfilled') await made.value.close();
      await moto?.stop();
      if (storeDir) rmSync(storeDir, { recursive: true, force: true });
    })());
  try {
    let store: ResolvedBackupStore;
    if (kind === 's3') {
      moto = await startMoto();
      await moto.createBucket('lab-backups');
      store = { kind: 's3', bucket: 'lab-backups', path: '/storage-lab/backups/walg-test', region: 'us-east-1', endpoint: moto.endpoint };
    } else {
      storeDir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-walg-store-'));
      chmodSync(storeDir, 0o755);
      // The store stands in for the lab's backups folder: the file guard lets the hosts write there.
      registerLabRoot(storeDir);
      store = { kind: 'folder', path: path.join(storeDir, 'run') };
    }
    const [source, restore] = (await hosts).map((made) => {
      if (made.status === 'rejected') throw made.reason;
      return made.value;
    });
    await emptyHost(restore);
    return { store, source, restore, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The bench host's cluster stopped and its data folder removed: a host to restore onto. */
async function emptyHost(host: BenchHost): Promise<void> {
  await host.run(stopPostgres, { hostId: host.deps.config.hostId, mode: 'immediate' });
  rmSync(host.deps.config.dataDir, { recursive: true, force: true });
}

// Both stores' setups start together, before the first case: the s3 store's is ready when the folder store's cases end.
const setups: Partial<Record<'folder' | 's3', Promise<Setup>>> = {};
beforeAll(() => {
  for (const kind of ['folder', 's3'] as const) {
    setups[kind] = setUp(kind);
    setups[kind].catch(() => undefined); // Awaited, and a failure reported, by that store's cases.
  }
});
// Each store's cases close theirs; this closes one whose cases did not run (a name filter).
afterAll(async () => {
  await Promise.all(Object.values(setups).map((made) => made.then((s) => s.close(), () => undefined)));
});

describe.each([['folder'], ['s3']] as const)('WAL-G backup tool on a %s store (integration)', (kind) => {
  let setup: Setup | undefined;
  let store: ResolvedBackupStore;
  let source: BenchHost;
  let restore: BenchHost;
  const ids = { source: '', restore: '' };
  let full: BackupInfo;
  let delta: BackupInfo;
  const targets: Partial<Record<'time' | 'lsn', { target: RestoreTarget; walLsn: string }>> = {};
  let lastMarker = 0;
  let lastArchivedSegment = '';

  beforeAll(async () => {
    setup = await setups[kind]!;
    ({ store, source, restore } = setup);
    ids.source = source.deps.config.hostId;
    ids.restore = restore.deps.config.hostId;
  });
  afterAll(async () => {
    await setup?.close();
  });


  /** Fetches the newest backup onto the empty restore host, replays to the target and promotes. */
  async function restoreTo(target: RecoveryTarget) {
    await emptyHost(restore);
    await restore.run(configureBackups, { hostId: ids.restore, store, tool });
    const fetched = await restore.run(restoreBackup, { hostId: ids.restore, store, tool, target });
    const started = Date.now();
    const recovery = await restore.run(recoverFromBackup, { hostId: ids.restore, ...hostSettings(RESTORE_SETTINGS), timeoutSeconds: RECOVERY_TIMEOUT_SECONDS });
    return { fetched, recovery, recoverySeconds: (Date.now() - started) / 1000 };
  }

  it('archives WAL with wal-push and takes a full and then a delta backup', async () => {
    const archiving = await source.run(configureBackups, { hostId: ids.source, store, tool, compression: 'lz4' });
    expect(archiving).toMatchObject({ tool: 'wal-g', version: '3.0.8' });
    await source.run(configurePostgres, { hostId: ids.source, ...hostSettings(SETTINGS), archiving: { archiveTimeoutSeconds: 1 } });
    // The host wrote archive_command itself, from the tool configureBackups recorded.
    const archiveCommand = await withConnection(source.deps.config, async (c) => (await c.query<{ v: string }>("SELECT current_setting('archive_command') AS v")).rows[0].v);
    expect(archiveCommand).toMatch(/wal-g --config \S+walg\.json wal-push %p$/);
    // Forces a segment switch and waits until wal-push archived it: fails when archive_command cannot reach the store.
    await source.run(initBackupRepository, { hostId: ids.source, store, tool });
    // wal-push keeps its marks of segments uploaded ahead with this host's data, not in a /tmp folder shared by all hosts.
    expect(existsSync(path.join(source.deps.config.dataDir, 'pg_wal', 'walg_data', 'walg_archive_status'))).toBe(true);
    await source.run(loadData, { hostId: ids.source, scale: 1, chunkRows: 50_000, writers: 1 });

    full = await source.run(takeBackup, { hostId: ids.source, store, tool, kind: 'full' });
    expect(full).toMatchObject({ tool: 'wal-g', toolVersion: '3.0.8', type: 'full' });
    expect(full.label).toBe(`base_${full.walStart}`);
    expect(full.databaseBytes).toBeGreaterThan(15 * 2 ** 20);
    expect(full.repositoryBytes).toBeGreaterThan(0);
    expect(full.repositoryBytes).toBeLessThan(full.databaseBytes);
    expect(full.seconds).toBeGreaterThan(0);

    await source.run(writeHistory, { hostId: ids.source, label: 'before delta', seconds: 2, clients: 2, markerIntervalMs: 50 });
    delta = await source.run(takeBackup, { hostId: ids.source, store, tool, kind: 'delta' });
    expect(delta.type).toBe('delta');
    expect(delta.label).toBe(`base_${delta.walStart}_D_${full.walStart}`);
    // A delta stores the pages that changed: far less than the full backup.
    expect(delta.repositoryBytes).toBeLessThan(full.repositoryBytes / 2);
    expect(parseSegmentName(delta.walStart)!.segno).toBeGreaterThan(parseSegmentName(full.walStop)!.segno);

    // History after the delta, with two targets between marker rows, then everything archived.
    await source.run(writeHistory, { hostId: ids.source, label: 'before time target', seconds: 2, clients: 2, markerIntervalMs: 50 });
    targets.time = await source.run(markTarget, { hostId: ids.source, type: 'time', tables: TABLES });
    await source.run(writeHistory, { hostId: ids.source, label: 'before lsn target', seconds: 2, clients: 2, markerIntervalMs: 50 });
    targets.lsn = await source.run(markTarget, { hostId: ids.source, type: 'lsn', tables: TABLES });
    const after = await source.run(writeHistory, { hostId: ids.source, label: 'after targets', seconds: 1.5, clients: 2, markerIntervalMs: 50 });
    lastMarker = after.lastId;
    // pg_switch_wal returns the end of the segment it closed: its last byte is in that segment.
    const lastByte = await withConnection(source.deps.config, async (c) => (await c.query<{ lsn: string }>('SELECT (pg_switch_wal() - 1)::text AS lsn')).rows[0].lsn);
    await source.run(waitForArchive, { hostId: ids.source, lsn: lastByte, timeoutSeconds: 60 });
    lastArchivedSegment = segmentOfLsn(lastByte, 1);
    // Stopped, as a drill's source dies: nothing is written after this.
    await source.run(stopPostgres, { hostId: ids.source });
  });

  it('passes wal-verify and the continuity check over the whole archive', async () => {
    const check = await source.run(checkArchive, { hostId: ids.source, store, tool, from: full.walStart, to: lastArchivedSegment });
    expect(check.continuity).toMatchObject({ ok: true, missing: [] });
    expect(check.repository).toMatchObject({ ok: true, status: 'integrity OK, timeline OK', walInvalid: 0, missingWal: [], backupFilesChecked: null });
    expect(check.repository.walChecked).toBeGreaterThanOrEqual(check.continuity.checked);
    expect(check.repository.detail).toContain(`..${lastArchivedSegment}`);
  });

  it('restores to an LSN between two marker rows, exactly', async () => {
    const { target, walLsn } = targets.lsn!;
    const { fetched, recovery } = await restoreTo({ type: 'lsn', lsn: walLsn });
    expect(fetched.backupLabel).toBe(delta.label);
    expect(fetched.fetchSeconds).toBeGreaterThan(0);
    expect(recovery).toMatchObject({ ok: true });
    expect(recovery.detail).toMatch(/recovery stopping after WAL location \(LSN\)/);
    const v = await restore.run(verifyRestore, { hostId: ids.restore, expectedThroughId: target.lastIdBefore, exact: true, tables: TABLES, expectedChecksums: target.checksums });
    expect(v.ledger).toMatchObject({ ok: true, maxPresentId: target.lastIdBefore, idsAfterTarget: 0 });
    expect(v.checksums.ok).toBe(true);
    expect(v.amcheck.ok).toBe(true);
  });

  // A time target differs from an LSN target only in the recovery settings, not in the store: once is enough.
  if (kind === 'folder')
    it('restores to a time between two marker rows, exactly', async () => {
      const { target } = targets.time!;
      const { recovery } = await restoreTo({ type: 'time', time: target.time! });
      expect(recovery).toMatchObject({ ok: true });
      expect(recovery.detail).toMatch(/recovery stopping before commit/);
      const v = await restore.run(verifyRestore, { hostId: ids.restore, expectedThroughId: target.lastIdBefore, exact: true, tables: TABLES, expectedChecksums: target.checksums });
      expect(v.ledger).toMatchObject({ ok: true, maxPresentId: target.lastIdBefore, idsAfterTarget: 0 });
      expect(v.checksums.ok).toBe(true);
    });

  it('restores to the end of the archive (latest): every marker row', async () => {
    const { recovery } = await restoreTo({ type: 'latest' });
    expect(recovery).toMatchObject({ ok: true });
    const v = await restore.run(verifyRestore, { hostId: ids.restore, expectedThroughId: lastMarker, exact: true, tables: TABLES, expectedChecksums: null });
    expect(v.ledger).toMatchObject({ ok: true, maxPresentId: lastMarker, missingIds: [] });
  });

  it('fails the restore and wal-verify in bounded time, naming the segment, when an archived segment is missing', async () => {
    const { target, walLsn } = targets.lsn!;
    const needed = segmentOfLsn(walLsn, 1);
    const removed = await restore.run(removeArchivedSegment, { hostId: ids.restore, store, tool, after: delta.walStop, upTo: needed });
    expect(removed > delta.walStop && removed <= needed).toBe(true);

    const { recovery, recoverySeconds } = await restoreTo({ type: 'lsn', lsn: walLsn });
    expect(recovery.ok).toBe(false);
    expect(recovery.detail).toContain('recovery ended before configured recovery target was reached');
    // Its FATAL, which a data set's restore does not retry.
    expect(recovery.fatal).toContain('recovery ended before configured recovery target was reached');
    expect(recoverySeconds).toBeLessThan(RECOVERY_TIMEOUT_SECONDS);

    const check = await restore.run(checkArchive, { hostId: ids.restore, store, tool, from: delta.walStart, to: needed });
    expect(check.continuity).toMatchObject({ ok: false, missing: [removed] });
    expect(check.repository.ok).toBe(false);
    expect(check.repository.missingWal).toEqual([removed]);
    expect(check.repository.detail).toContain(`missing: ${removed}`);
    expect(target.lastIdBefore).toBeGreaterThan(0);
  });
});

describe('the wal-g binary the Postgres OS user runs', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('is a copy in the host folder when the installed one is out of that user\'s reach (a tools cache under /root)', async () => {
    const installed = findWalg();
    expect(installed).not.toBeNull();
    const privateRoot = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-walg-private-')); // 0700: others cannot pass
    const hostDir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-walg-host-'));
    dirs.push(privateRoot, hostDir);
    chmodSync(hostDir, 0o755);
    registerLabRoot(hostDir);
    mkdirSync(path.join(privateRoot, 'bin'));
    const privateBinary = path.join(privateRoot, 'bin', 'wal-g');
    copyFileSync(installed!, privateBinary);
    chmodSync(privateBinary, 0o755);
    const osUser = postgresOsUser();
    const host = {
      hostDir,
      dataDir: path.join(hostDir, 'pgdata'),
      socketDir: path.join(hostDir, 'run'),
      postgres: { host: '127.0.0.1', port: 5432 },
      runAs: osUser ? { uid: osUser.uid, gid: osUser.gid } : {},
    };
    const tool = new WalG(host, { kind: 'folder', path: path.join(hostDir, 'store') }, privateBinary);
    // An agent that is not root runs wal-g as itself: the installed binary is reachable by definition.
    if (!osUser) return expect(tool.binary).toBe(privateBinary);
    expect(tool.binary).toBe(path.join(hostDir, 'wal-g', 'wal-g'));
    await tool.configure({ compression: 'lz4' });
    expect(statSync(tool.binary!).uid).toBe(osUser.uid);
    expect(tool.archiveSettings(60).archive_command).toBe(`${tool.binary} --config ${tool.configFile} wal-push %p`);
    // Runs as the Postgres user: this fails with EACCES on the private binary.
    expect(await tool.version()).toBe('3.0.8');
  });
});
