/**
 * Data sets on a host (issue 31): the facts that describe a loaded set (rows, checksums, relation sizes, the freeze
 * state), the publish of a loaded host (a WAL-G base backup into the set's repository, the WAL it needs archived
 * beside it), and the restore of a set onto a fresh host instead of a load. Both are preparation: they run with the
 * emulated cap lifted, as the load does, and heartbeat while they run. The manifest is the control worker's to write
 * (activities/control/data-sets.ts), after the publish returns.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import type { OwnerRecord } from '../../common/core/claims';
import { FAILURE_TYPES } from '../../common/core/errors';
import { DATA_SET_TABLES, type DataSetFacts, type RelationFacts } from '../../common/input/data-set';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupInfo } from '../../common/results/drill-result';
import { checkClaim, ownedByAnotherRun } from '../../lib/claims';
import { DATA_SETS_FOLDER, dataSetRecordsAt, type DataSetRecords } from '../../lib/data-sets';
import { LabPathError, readLabFile, removeTreeAs, writeLabFile } from '../../lib/lab-fs';
import { withConnection } from '../../lib/pg';
import { runProcess } from '../../lib/process-runner';
import { ownerOf } from '../../lib/backup-tool';
import { heartbeatWhile } from '../progress';
import { configureBackups, initBackupRepository, recoverFromBackup, takeBackup } from './backup';
import { backupTool } from './archiving';
import { asPostgresUser, assertHost, type HostDeps, type HostInput } from './deps';
import { emptySharedBuffers } from './load';
import { configurePostgres, isRunning, stopPostgres, type LabConfigInput } from './postgres';
import { amcheck, tableChecksums } from './restore-drill';

/** Archiving while the publish's base backup runs: the WAL between its start and stop must reach the repository. */
const PUBLISH_ARCHIVE_TIMEOUT_SECONDS = 60;

/** The server binary's major version (`postgres --version`), before any cluster exists: part of a data set's key. */
export async function describeServer(deps: HostDeps, input: HostInput): Promise<{ major: number; version: string }> {
  assertHost(deps, input);
  const r = await runProcess(path.join(deps.config.pgBinDir, 'postgres'), ['--version'], { ...asPostgresUser(deps), cwd: deps.config.hostDir, timeoutMs: 30_000 });
  const m = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(r.stdout);
  if (!m) throw new Error(`postgres --version said ${JSON.stringify(r.stdout.trim())}, not a version`);
  return { major: Number(m[1]), version: r.stdout.trim() };
}

/**
 * The facts of the data set on a server: per table its rows and order-independent checksum, heap and total bytes, and
 * the visibility map's all-visible and all-frozen pages (pg_visibility, installed for the look and removed after it;
 * null where the server has no such extension).
 */
export async function dataSetFacts(c: Client): Promise<DataSetFacts> {
  const sums = await tableChecksums(c, [...DATA_SET_TABLES]);
  const visibility = await c
    .query('CREATE EXTENSION IF NOT EXISTS pg_visibility SCHEMA public')
    .then(() => true)
    .catch(() => false);
  const relations: Record<string, RelationFacts> = {};
  try {
    for (const t of DATA_SET_TABLES) {
      const size = await c.query<{ heap: string; total: string }>('SELECT pg_relation_size($1::regclass) AS heap, pg_total_relation_size($1::regclass) AS total', [`public.${t}`]);
      let allVisible: number | null = null;
      let allFrozen: number | null = null;
      if (visibility) {
        const v = await c.query<{ v: string; f: string }>('SELECT all_visible AS v, all_frozen AS f FROM public.pg_visibility_map_summary($1::regclass)', [`public.${t}`]);
        allVisible = Number(v.rows[0].v);
        allFrozen = Number(v.rows[0].f);
      }
      relations[t] = { rows: sums[t].rows, checksum: sums[t].sum, heapBytes: Number(size.rows[0].heap), totalBytes: Number(size.rows[0].total), allVisible, allFrozen };
    }
  } finally {
    if (visibility) await c.query('DROP EXTENSION IF EXISTS pg_visibility');
  }
  const db = await c.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n');
  return { relations, databaseBytes: Number(db.rows[0].n) };
}

/** What a host's server runs with: the lab's and the spec's settings (configurePostgres's input without archiving). */
export type ServerSettingsInput = Pick<LabConfigInput, 'server' | 'user'>;

export interface PublishInput extends HostInput, ServerSettingsInput {
  key: string;
  store: ResolvedBackupStore;
}

export interface PublishOutcome {
  facts: DataSetFacts;
  backup: BackupInfo;
  seconds: number;
  preparedWithoutCap: boolean;
}

/**
 * Publishes the loaded data set: its facts first (the server as loaded: frozen, analysed, checkpointed), then WAL
 * archiving into the set's repository for the backup's span and a full WAL-G base backup, then the server back to its
 * own settings (archiving off). The manifest comes after, from the control worker: a publish that fails here leaves
 * no manifest, and the builder's undo removes the repository.
 */
export async function publishDataSet(deps: HostDeps, input: PublishInput): Promise<PublishOutcome> {
  assertHost(deps, input);
  const records = await checkedRepository(input.store, input.key);
  const { store } = records;
  // The set's repository is its builder's: the claim (made by the control worker before the repository, for exactly
  // this location) must name the workflow that asks, and no manifest may be there yet, or nothing is written into it.
  const claim = await claimOf(records);
  if (!claim) throw ownedByAnotherRun(`data set ${input.key} is not claimed (${records.claimLocation}); only its builder publishes into ${records.location}: refused, nothing written`);
  if (!input.owner) throw ownedByAnotherRun(`data set ${input.key}: the request names no owner; only its builder publishes into it: refused, nothing written`);
  checkClaim(`data set ${input.key}`, claim, input.owner, 'publish into');
  if (await records.hasManifest())
    throw ApplicationFailure.nonRetryable(`data set ${input.key} is published already (${records.manifestLocation}); a published set is never written again: refused, nothing written`, FAILURE_TYPES.ownedByAnotherRun);
  const run = async (): Promise<Omit<PublishOutcome, 'preparedWithoutCap'>> => {
    const started = Date.now();
    const settings = { hostId: input.hostId, server: input.server, user: input.user };
    const facts = await heartbeatWhile('data set facts', () => withConnection(deps.config, dataSetFacts));
    await configureBackups(deps, { hostId: input.hostId, store, tool: 'wal-g', compression: 'lz4' });
    await configurePostgres(deps, { ...settings, archiving: { archiveTimeoutSeconds: PUBLISH_ARCHIVE_TIMEOUT_SECONDS } });
    await initBackupRepository(deps, { hostId: input.hostId, store, tool: 'wal-g' });
    const backup = await takeBackup(deps, { hostId: input.hostId, store, tool: 'wal-g', kind: 'full' });
    // Archiving off again (a restart: shared buffers start empty, as after the load's eviction): the measured phases
    // run as they would have without the publish.
    await configurePostgres(deps, settings);
    await withConnection(deps.config, (c) => c.query('CHECKPOINT'));
    return { facts, backup, seconds: (Date.now() - started) / 1000 };
  };
  if (!deps.ioCap.liftable) return { ...(await run()), preparedWithoutCap: false };
  return { ...(await deps.ioCap.withoutCap(run)), preparedWithoutCap: true };
}

export interface RestoreDataSetInput extends HostInput, ServerSettingsInput {
  key: string;
  store: ResolvedBackupStore;
  /** How long recovery of the backup's WAL may take. */
  recoveryTimeoutSeconds: number;
  /** Run pg_amcheck (heap and B-tree, heapallindexed) on the restored server. */
  amcheck: boolean;
}

export interface RestoreDataSetOutcome {
  backupLabel: string;
  /** The backup's fetch, the recovery of its WAL and the restart with the host's own settings: the restore's time. */
  fetchSeconds: number;
  recoverSeconds: number;
  restoreSeconds: number;
  /** The facts and pg_amcheck afterwards: the comparison's time, apart. */
  facts: DataSetFacts;
  amcheck: { ok: boolean; detail: string } | null;
  checkSeconds: number;
  postgresVersion: string;
  preparedWithoutCap: boolean;
}

/** Where a restore left its mark (the host folder): a retry after a finished restore checks instead of restoring again. */
function restoredRecord(deps: HostDeps): string {
  return path.join(deps.config.hostDir, 'data-set-restored.json');
}

/** The line the WAL-G restore writes before its recovery settings in postgresql.auto.conf (lib/walg.ts). */
const RESTORE_SETTINGS_MARK = '\n# Written by Storage Lab for the restore.\n';

/**
 * Restores a published set onto this host instead of loading: the backup fetched into an empty data folder, its WAL
 * replayed from the set's repository and the server promoted, the restore's recovery settings removed, the server
 * restarted with the host's own settings; then the facts and pg_amcheck for the comparison with the manifest. Reads
 * only a set the lab published: the repository must be `_datasets/<key>` with a valid manifest for that key beside it.
 */
export async function restoreDataSet(deps: HostDeps, input: RestoreDataSetInput): Promise<RestoreDataSetOutcome> {
  assertHost(deps, input);
  const records = await checkedRepository(input.store, input.key);
  const { store } = records;
  if (!(await records.readManifest()))
    throw ApplicationFailure.nonRetryable(`data set ${input.key} has no manifest at ${records.manifestLocation}: it is not published, so nothing is restored`, FAILURE_TYPES.verification);
  // The lab's own claim for exactly this location stays with a published set: a manifest copied elsewhere is not one.
  if (!(await claimOf(records)))
    throw ApplicationFailure.nonRetryable(`data set ${input.key} has a manifest but no claim at ${records.claimLocation}: not a set the lab published there, so nothing is restored`, FAILURE_TYPES.verification);
  const { config } = deps;
  const settings = { hostId: input.hostId, server: input.server, user: input.user };
  const run = async () => {
    let fetchSeconds = 0;
    let recoverSeconds = 0;
    let backupLabel = '';
    const done = readLabFile(restoredRecord(deps));
    const previous = done ? (JSON.parse(done) as { key: string; backupLabel: string; fetchSeconds: number; recoverSeconds: number }) : null;
    if (previous?.key === input.key && existsSync(path.join(config.dataDir, 'PG_VERSION'))) {
      ({ backupLabel, fetchSeconds, recoverSeconds } = previous);
    } else {
      // A data folder from an attempt cut short: another attempt starts it again from an empty folder.
      if (existsSync(path.join(config.dataDir, 'PG_VERSION'))) {
        if (await isRunning(deps)) await stopPostgres(deps, { hostId: input.hostId, mode: 'immediate' });
        await removeTreeAs(deps.osUser, config.dataDir);
      }
      await configureBackups(deps, { hostId: input.hostId, store, tool: 'wal-g', compression: 'lz4' });
      const fetched = await heartbeatWhile('data set: fetch', (signal) => backupTool(deps, store, 'wal-g').restore({ type: 'latest' }, signal));
      backupLabel = fetched.backupLabel;
      fetchSeconds = fetched.seconds;
      const recoverStarted = Date.now();
      const recovery = await recoverFromBackup(deps, { ...settings, timeoutSeconds: input.recoveryTimeoutSeconds });
      if (!recovery.ok) throw new Error(`data set ${input.key}: recovery of the restored backup failed: ${recovery.detail}`);
      // The restore's settings (restore_command, archive_mode off) must not outlive it: postgresql.auto.conf is read
      // last, so they would override what the measured phases and the durability step set.
      const autoConf = path.join(config.dataDir, 'postgresql.auto.conf');
      const text = readLabFile(autoConf) ?? '';
      const cut = text.indexOf(RESTORE_SETTINGS_MARK);
      if (cut >= 0) writeLabFile(autoConf, text.slice(0, cut) + '\n', { mode: 0o600, owner: ownerOf(asPostgresUser(deps)) });
      await stopPostgres(deps, { hostId: input.hostId, mode: 'fast' });
      // Replay, promote, and the stop before the restart with the host's own settings (added below).
      recoverSeconds = (Date.now() - recoverStarted) / 1000;
      writeLabFile(restoredRecord(deps), `${JSON.stringify({ key: input.key, backupLabel, fetchSeconds, recoverSeconds })}\n`, { mode: 0o644 });
    }
    const restartStarted = Date.now();
    const pg = await configurePostgres(deps, settings);
    const restoreSeconds = fetchSeconds + recoverSeconds + (Date.now() - restartStarted) / 1000;
    const checkStarted = Date.now();
    const facts = await heartbeatWhile('data set facts', () => withConnection(deps.config, dataSetFacts));
    const checked = input.amcheck ? await heartbeatWhile('pg_amcheck', () => amcheck(deps)) : null;
    // The restart above left shared buffers empty; the checks read through them, so the lab evicts what they left
    // (PostgreSQL 17's pg_buffercache_evict, as the load does; older servers keep it).
    await withConnection(deps.config, async (c) => {
      await c.query('CHECKPOINT');
      await emptySharedBuffers(c);
    });
    return {
      backupLabel,
      fetchSeconds,
      recoverSeconds,
      restoreSeconds,
      facts,
      amcheck: checked ? { ok: checked.ok, detail: checked.detail } : null,
      checkSeconds: (Date.now() - checkStarted) / 1000,
      postgresVersion: pg.postgresVersion,
    };
  };
  if (!deps.ioCap.liftable) return { ...(await run()), preparedWithoutCap: false };
  return { ...(await deps.ioCap.withoutCap(run)), preparedWithoutCap: true };
}

/**
 * The set's repository as a host may use it: in a folder store, a folder named by the key (one a key could be) in the
 * stores' data sets folder (the file guard keeps every read and write within the lab's roots besides); in an S3 store,
 * exactly `/<prefix>/_datasets/<key>` with a prefix, bucket, region and endpoint the spec's rules accept (the host
 * reads the records there with its own credentials: the instance role on EC2). Anything else is refused,
 * non-retryably, before anything is read or written.
 */
async function checkedRepository(store: ResolvedBackupStore, key: string): Promise<DataSetRecords> {
  try {
    const kind = (store as { kind?: unknown } | null)?.kind;
    if (kind !== 'folder' && kind !== 's3') throw new LabPathError(`a store of kind ${JSON.stringify(kind)} is no data set's repository (<store>/${DATA_SETS_FOLDER}/<key>)`);
    return await dataSetRecordsAt(store, key);
  } catch (err) {
    if (!(err instanceof LabPathError)) throw err;
    throw ApplicationFailure.nonRetryable(`data set ${JSON.stringify(key)}: ${err.message}; refused, nothing read or written`, FAILURE_TYPES.invalidSpec);
  }
}

/**
 * The set's claim, when it is the lab's for this very repository: a claim whose resource names another location (a
 * record copied there, or one of another store) is refused.
 */
async function claimOf(records: DataSetRecords): Promise<OwnerRecord | null> {
  const claim = await records.readClaim();
  if (claim && (claim.kind !== 'data-set' || claim.resource !== records.location))
    throw ownedByAnotherRun(`${records.claimLocation} claims ${JSON.stringify(claim.resource)} (${claim.kind}), not the data set ${records.key} at ${records.location}: refused, nothing read or written`);
  return claim;
}
