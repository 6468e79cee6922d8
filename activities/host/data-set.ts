/**
 * Data sets on a host (issue 31): the facts that describe a loaded set (rows, checksums, relation sizes, the freeze
 * state), the publish of a loaded host (a WAL-G base backup into the set's repository, the WAL it needs archived
 * beside it), and the restore of a set onto a fresh host instead of a load. Both are preparation: they run with the
 * emulated cap lifted, as the load does, and heartbeat while they run. The manifest is the control worker's to write
 * (activities/control/data-sets.ts), after the publish returns.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { existsSync, statfsSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import type { OwnerRecord } from '../../common/core/claims';
import { DEFAULT_WAL_SEGMENT_BYTES } from '../../common/core/lsn';
import { FAILURE_TYPES } from '../../common/core/errors';
import { DATA_SET_KEYS, DATA_SET_TABLES, checksumMethodFor, checksumMethodOf, type ChecksumMethod, type DataSetFacts, type KeyReading, type KeyReadings, type RelationFacts, type RelationFiles, identityCheckable, relationFileDifferences } from '../../common/input/data-set';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import type { BackupInfo } from '../../common/results/drill-result';
import { checkClaim, ownedByAnotherRun } from '../../lib/claims';
import { DATA_SETS_FOLDER, dataSetRecordsAt, type DataSetRecords } from '../../lib/data-sets';
import { LabPathError, listLabDir, readLabFile, removeTreeAs, writeLabFile } from '../../lib/lab-fs';
import { quoteIdent, withConnection } from '../../lib/pg';
import { runProcess } from '../../lib/process-runner';
import { ownerOf } from '../../lib/backup-tool';
import { heartbeatWhile } from '../progress';
import { configureBackups, initBackupRepository, recoverFromBackup, walgReady } from './backup';
import { backupTool } from './archiving';
import { asPostgresUser, assertHost, prepareDataSet, type HostDeps, type HostInput } from './deps';
import { startCold } from './load';
import { configurePostgres, isRunning, stopPostgres, type LabConfigInput } from './postgres';
import { amcheck } from './restore-drill';
import { relationFileDigests } from './relation-files';

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

/** Each row's 64-bit hash by method, summed (numeric: no overflow, the same total in any order). */
const ROW_HASH_SUM: Record<ChecksumMethod, string> = {
  // restore-drill.ts tableChecksums's expression: manifests of this method were written with it.
  'md5-64': "coalesce(sum(('x' || substr(md5(t::text), 1, 16))::bit(64)::bigint::numeric), 0)::text",
  'hash-record-64': 'coalesce(sum(pg_catalog.hash_record_extended(t, 0)), 0)::text',
};

/** The sum of a 64-bit hash of each key, the same expression over the heap and over the index. */
function keyHashSum(column: string): string {
  return `coalesce(sum(pg_catalog.hashint8extended(${quoteIdent(column)}::bigint, 0)), 0)::text`;
}

/**
 * Per table its rows and order-independent checksum, in one scan each: count(*) beside the sum of a 64-bit hash of
 * every row, computed the way `method` says (common/input/data-set.ts CHECKSUM_METHODS), and for a keyed table the
 * heap's reading of its key in the same scan (keysCheck compares it with the index's).
 */
export async function rowChecksums(c: Client, method: ChecksumMethod): Promise<Record<string, { rows: number; sum: string; keys?: KeyReading }>> {
  const out: Record<string, { rows: number; sum: string; keys?: KeyReading }> = {};
  for (const table of DATA_SET_TABLES) {
    const key = DATA_SET_KEYS[table];
    const r = await c.query<{ rows: string; sum: string; keysum?: string }>(
      `SELECT count(*) AS rows, ${ROW_HASH_SUM[method]} AS sum${key ? `, ${keyHashSum(key)} AS keysum` : ''} FROM public.${quoteIdent(table)} t`,
    );
    const rows = Number(r.rows[0].rows);
    out[table] = { rows, sum: r.rows[0].sum, ...(key ? { keys: { entries: rows, sum: r.rows[0].keysum! } } : {}) };
  }
  return out;
}

/**
 * Each keyed table's key read from its primary key index alone: an index-only scan, the planner kept off the heap
 * (seq and bitmap scans disabled in a transaction of its own), and the plan's node kept with the reading so that a
 * plan that read the heap cannot pass (keysCheck). The all-visible pages a load leaves make it read no heap page.
 */
export async function indexKeys(c: Client): Promise<Record<string, KeyReading & { scan: string }>> {
  const out: Record<string, KeyReading & { scan: string }> = {};
  await c.query('BEGIN READ ONLY');
  try {
    await c.query('SET LOCAL enable_seqscan = off');
    await c.query('SET LOCAL enable_bitmapscan = off');
    await c.query('SET LOCAL max_parallel_workers_per_gather = 0');
    for (const [table, column] of Object.entries(DATA_SET_KEYS)) {
      const sql = `SELECT count(*) AS entries, ${keyHashSum(column)} AS sum FROM public.${quoteIdent(table)}`;
      const plan = await c.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`);
      const r = await c.query<{ entries: string; sum: string }>(sql);
      out[table] = { entries: Number(r.rows[0].entries), sum: r.rows[0].sum, scan: scanNode(plan.rows[0]['QUERY PLAN']) };
    }
  } finally {
    await c.query('COMMIT');
  }
  return out;
}

/** The node that reads the table in an EXPLAIN (FORMAT JSON) plan: the deepest first child (below the aggregate). */
export function scanNode(plan: unknown): string {
  let node = (Array.isArray(plan) ? (plan[0] as { Plan?: unknown })?.Plan : undefined) as { 'Node Type'?: string; Plans?: unknown[] } | undefined;
  while (node?.Plans?.length) node = node.Plans[0] as typeof node;
  return node?.['Node Type'] ?? 'unknown plan';
}

/**
 * Each table's heap and total bytes and the visibility map's all-visible and all-frozen pages (pg_visibility, installed
 * for the look and removed after it; null where the server has no such extension), and the database's bytes. Reads
 * no table: a second or less at any scale.
 */
export async function storageFacts(c: Client): Promise<{ relations: Record<string, Omit<RelationFacts, 'rows' | 'checksum'>>; databaseBytes: number }> {
  const visibility = await c
    .query('CREATE EXTENSION IF NOT EXISTS pg_visibility SCHEMA public')
    .then(() => true)
    .catch(() => false);
  const relations: Record<string, Omit<RelationFacts, 'rows' | 'checksum'>> = {};
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
      relations[t] = { heapBytes: Number(size.rows[0].heap), totalBytes: Number(size.rows[0].total), allVisible, allFrozen };
    }
  } finally {
    if (visibility) await c.query('DROP EXTENSION IF EXISTS pg_visibility');
  }
  const db = await c.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n');
  return { relations, databaseBytes: Number(db.rows[0].n) };
}

/** The facts of the data set on a server: the row checksums (by `method`) and the storage facts, as one record. */
export function combineFacts(
  method: ChecksumMethod,
  sums: Record<string, { rows: number; sum: string | null; keys?: KeyReading }>,
  storage: Awaited<ReturnType<typeof storageFacts>>,
): DataSetFacts {
  const relations: Record<string, RelationFacts> = {};
  for (const t of DATA_SET_TABLES) relations[t] = { rows: sums[t].rows, checksum: sums[t].sum, ...(sums[t].keys ? { keys: sums[t].keys } : {}), ...storage.relations[t] };
  return { relations, databaseBytes: storage.databaseBytes, checksumMethod: method };
}

/** The facts of the data set on a server, one part after the other (tests and tools; the activities overlap them). */
export async function dataSetFacts(c: Client, method: ChecksumMethod): Promise<DataSetFacts> {
  const sums = await rowChecksums(c, method);
  return combineFacts(method, sums, await storageFacts(c));
}

/** Seconds since `started`, to 0.1 s. */
function since(started: number): number {
  return Math.round((Date.now() - started) / 100) / 10;
}

/** Runs fn and gives its result with its own seconds (parts that overlap are timed apart). */
async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const started = Date.now();
  const value = await fn();
  return { value, seconds: since(started) };
}

/** What a host's server runs with: the lab's and the spec's settings (configurePostgres's input without archiving). */
export type ServerSettingsInput = Pick<LabConfigInput, 'server' | 'user'>;

export interface PublishInput extends HostInput, ServerSettingsInput {
  key: string;
  store: ResolvedBackupStore;
}

/** Where a publish's seconds went: parts timed apart (the row checksums and the base backup run side by side). */
export interface PublishParts {
  /** Sizes and the visibility map (before archiving starts: its extension comes and goes outside the backup's span). */
  storageFactsSeconds: number;
  /** Archiving on: WAL-G's settings, a restart with archive_command, the repository made. */
  archiveOnSeconds: number;
  /** The row checksums (one scan per table) and the WAL-G base backup, each its own seconds; they overlap. */
  checksumSeconds: number;
  backupSeconds: number;
  /** Archiving off again: a restart with the host's own settings and a checkpoint. */
  archiveOffSeconds: number;
  /** The relation files read (relationFileDigests), between the restart and the checkpoint; absent before it. */
  relationFilesSeconds?: number;
  /**
   * Seconds the publish waited, before all of the above, for WAL-G's build beside the demo's first run
   * (lib/walg-build.ts); absent when WAL-G was there. When present, the load before it ran beside that compile.
   */
  walgBuildWaitSeconds?: number;
}

export interface PublishOutcome {
  facts: DataSetFacts;
  backup: BackupInfo;
  seconds: number;
  /** Absent in activity results recorded before it (the workflow replays them). */
  parts?: PublishParts;
  preparedWithoutCap: boolean;
}

/**
 * Publishes the loaded data set: its storage facts first (the server as loaded: frozen, analysed, checkpointed), then
 * WAL archiving into the set's repository for the backup's span, and a full WAL-G base backup while the row checksums
 * are computed on a connection beside it (nothing writes: they read what the backup copies; two cores do both at
 * once), then the server back to its own settings (archiving off). The manifest comes after, from the control worker:
 * a publish that fails here leaves no manifest, and the builder's undo removes the repository.
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
    // Apart from the publish's own seconds: on a fresh machine WAL-G may still be building beside the run.
    const walgWait = await timed(() => walgReady());
    const started = Date.now();
    const settings = { hostId: input.hostId, server: input.server, user: input.user };
    const { value: prior, seconds: storageFactsSeconds } = await timed(() =>
      withConnection(deps.config, async (c) => {
        const major = Number((await c.query<{ v: string }>("SELECT current_setting('server_version_num')::int / 10000 AS v")).rows[0].v);
        return { method: checksumMethodFor(major), storage: await storageFacts(c) };
      }),
    );
    const archiveOn = await timed(async () => {
      await configureBackups(deps, { hostId: input.hostId, store, tool: 'wal-g', compression: 'lz4' });
      await configurePostgres(deps, { ...settings, archiving: { archiveTimeoutSeconds: PUBLISH_ARCHIVE_TIMEOUT_SECONDS } });
      await initBackupRepository(deps, { hostId: input.hostId, store, tool: 'wal-g' });
    });
    const [sums, backup] = await heartbeatWhile('data set: base backup and row checksums', () =>
      Promise.all([
        timed(() => withConnection(deps.config, (c) => rowChecksums(c, prior.method))),
        timed(() => backupTool(deps, store, 'wal-g').backup('full', Context.current().cancellationSignal)),
      ]),
    );
    // Archiving off again (a restart), and the state every preparation ends in (startCold): the publish's reads of
    // every page are not left in the page cache, so the measured phases run as they would have without the publish.
    // The relation files are read between the two: after the restart's checkpoint, from the page cache the backup
    // and the checksums filled, before startCold empties it. A restored host whose files are these scans no row.
    const archiveOff = await timed(() => configurePostgres(deps, settings));
    const files = await timed(() => heartbeatWhile('data set: relation files', () => withConnection(deps.config, (c) => relationFileDigests(deps, c))));
    const cold = await timed(() =>
      withConnection(deps.config, async (c) => {
        await startCold(deps, c);
        return walSegmentsAhead(c);
      }),
    );
    return {
      facts: { ...combineFacts(prior.method, sums.value, prior.storage), walSegmentsAhead: cold.value, ...(files.value ? { files: files.value } : {}) },
      backup: backup.value,
      seconds: since(started),
      parts: {
        storageFactsSeconds,
        archiveOnSeconds: archiveOn.seconds,
        checksumSeconds: sums.seconds,
        backupSeconds: backup.seconds,
        archiveOffSeconds: Math.round((archiveOff.seconds + cold.seconds) * 10) / 10,
        relationFilesSeconds: files.seconds,
        ...(walgWait.value.waited ? { walgBuildWaitSeconds: walgWait.seconds } : {}),
      },
    };
  };
  const { value, preparedWithoutCap } = await prepareDataSet(deps, run);
  return { ...value, preparedWithoutCap };
}

export interface RestoreDataSetInput extends HostInput, ServerSettingsInput {
  key: string;
  store: ResolvedBackupStore;
  /** How long recovery of the backup's WAL may take. */
  recoveryTimeoutSeconds: number;
  /** Run pg_amcheck (heap and B-tree; the keys check stands for heapallindexed) on the restored server. */
  amcheck: boolean;
}

export interface RestoreDataSetOutcome {
  backupLabel: string;
  /** The backup's fetch, the recovery of its WAL and the restart with the host's own settings: the restore's time. */
  fetchSeconds: number;
  recoverSeconds: number;
  restoreSeconds: number;
  /** The facts and pg_amcheck afterwards: the comparison's time, apart, and each part's own seconds (they overlap). */
  facts: DataSetFacts;
  amcheck: { ok: boolean; detail: string } | null;
  /** Each primary key read from the heap and from its index (keysCheck); absent in results recorded before it. */
  keys?: Record<string, KeyReadings>;
  checkSeconds: number;
  /** Absent in activity results recorded before it (the workflow replays them). */
  checkParts?: RestoreCheckParts;
  postgresVersion: string;
  preparedWithoutCap: boolean;
}

/** Where a restored host's check seconds went: the contents, pg_amcheck and the WAL segments run side by side, so they overlap. */
export interface RestoreCheckParts {
  storageFactsSeconds: number;
  /** The relation files read and compared with the publisher's (absent before it, or where none were read). */
  relationFilesSeconds?: number;
  /** Whether the rows were scanned for their checksums: false when the files were the publisher's (absent before it). */
  rowsScanned?: boolean;
  /** The row checksums' scan (0 when the rows were not scanned). */
  checksumSeconds: number;
  /** null when pg_amcheck did not run (data.verifyRows false). */
  amcheckSeconds: number | null;
  /** The primary keys read from their indexes, after pg_amcheck (absent in results recorded before it). */
  indexKeysSeconds?: number;
  /** The checkpoint and the eviction of what the checks left in shared buffers and the page cache (startCold). */
  evictSeconds: number;
  /** The WAL segments made ahead (preallocateWal, beside the checks) and their seconds; absent in results recorded before it. */
  walSegments?: number;
  /** From the check's start until the segments were in pg_wal: the wait for their staging, then the links and writes. */
  walSeconds?: number;
  /** Of walSegments, those staged during the fetch (stageWalSegments), and the staging's own seconds from the fetch's start. */
  walStaged?: number;
  walStagedSeconds?: number;
  /** Why the staging wrote nothing (its segments then written after the checks' start). */
  walStageError?: string;
}

/** A WAL segment's file name: timeline, then the segment number's high and low halves, 8 hex digits each. */
const WAL_FILE = /^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})$/;

/** Whole WAL segments in pg_wal ahead of the insert position: recycled ones, ready for the WAL to come. */
export async function walSegmentsAhead(c: Client): Promise<number> {
  const r = await c.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_catalog.pg_ls_waldir()
      WHERE name ~ '^[0-9A-F]{24}$' AND name > pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_insert_lsn())
        AND size = (SELECT setting::bigint FROM pg_catalog.pg_settings WHERE name = 'wal_segment_size')`,
  );
  return Number(r.rows[0].n);
}

/**
 * Where a restore writes its WAL segments' zeros ahead of time (stageWalSegments): beside the data folder, on the same
 * file system (the volume under test), so that a staged file becomes a segment by a link, not a copy. The data folder
 * itself must be empty for WAL-G's fetch.
 */
export function walAheadDir(deps: HostDeps): string {
  return path.join(path.dirname(deps.config.dataDir), 'wal-ahead');
}

/**
 * A shell command writing `$blocks` MiB of zeros to the file named by the shell expression `file`, flushed
 * (conv=fsync), by direct I/O past the page cache: the same blocks written and flushed, at a third of the CPU of
 * buffered writes and their writeback (on a modelled volume, 128 segments: 1.9 against 6.6 CPU seconds,
 * docs/data-sets.md). A file system without direct I/O gets buffered writes.
 */
const zeros = (file: string) =>
  `{ dd if=/dev/zero of=${file} bs=1M count="$blocks" oflag=direct conv=fsync status=none 2>/dev/null || dd if=/dev/zero of=${file} bs=1M count="$blocks" conv=fsync status=none; }`;

/** As the server's user, in `$1` (made afresh): `$3` files of `$2` MiB of zeros named 0, 1, ... */
const STAGE_SCRIPT = `rm -rf --one-file-system -- "$1" && mkdir -m 700 -- "$1" && cd -- "$1" && blocks=$2 && i=0 && while [ "$i" -lt "$3" ]; do ${zeros('"$i"')} || exit 1; i=$((i+1)); done`;

/**
 * Writes, while the backup is fetched, the zero-filled WAL segments preallocateWal will need once the server is up
 * (their names depend on where recovery ends, so they are staged under numbers and linked into pg_wal then). The fetch
 * leaves part of a core idle, and the checks after it need both: the zeros off the checks' path (2026-12-05: 5.4-11.7
 * s of them beside checks of 5.6 s). `count` segments of the default 16 MiB (the lab's clusters never set
 * --wal-segsize; preallocateWal uses them only if the server's segments are that size). `count` comes from the
 * set's manifest, so it is capped by what the volume can hold beside the set's `setBytes` (preallocateWal caps what it
 * links by max_wal_size). Never throws: a staging that failed stages nothing, and preallocateWal writes every segment
 * itself.
 */
export async function stageWalSegments(deps: HostDeps, count: number, setBytes = 0): Promise<StagedWal> {
  const started = Date.now();
  const dir = walAheadDir(deps);
  const volume = statfsSync(path.dirname(deps.config.dataDir));
  const room = Math.floor((volume.bavail * volume.bsize - setBytes) / DEFAULT_WAL_SEGMENT_BYTES);
  const n = Math.max(0, Math.min(Number.isSafeInteger(count) ? count : 0, room));
  if (n === 0) return { dir, count: 0, segmentBytes: DEFAULT_WAL_SEGMENT_BYTES, seconds: 0, error: null };
  try {
    await runProcess('/bin/sh', ['-c', STAGE_SCRIPT, 'sh', dir, String(DEFAULT_WAL_SEGMENT_BYTES / 2 ** 20), String(n)], { ...asPostgresUser(deps), cwd: '/', timeoutMs: 10 * 60_000 });
    return { dir, count: n, segmentBytes: DEFAULT_WAL_SEGMENT_BYTES, seconds: (Date.now() - started) / 1000, error: null };
  } catch (err) {
    return { dir, count: 0, segmentBytes: DEFAULT_WAL_SEGMENT_BYTES, seconds: (Date.now() - started) / 1000, error: (err as Error).message.split('\n')[0] };
  }
}

/** Zero-filled segments written ahead under numbers 0 .. count-1 in `dir`; count 0 when staging failed (error says why). */
export interface StagedWal {
  dir: string;
  count: number;
  segmentBytes: number;
  seconds: number;
  error: string | null;
}

/**
 * The segments to put in pg_wal, each from a staged file while any is left (linked, then the staged name removed;
 * where the server made the segment first, the link fails and the staged file just goes), else written there. A
 * staged file of another size than the server's segments is never used.
 */
const LINK_OR_WRITE_SCRIPT = `cd -- "$1" && blocks=$2 && stage=$3 && staged=$4 && shift 4 && i=0 && for f; do if [ "$i" -lt "$staged" ]; then s="$stage/$i"; i=$((i+1)); ln -- "$s" "$f" 2>/dev/null; rm -f -- "$s"; else t="$f.storage-lab-tmp"; ${zeros('"$t"')} && { ln -- "$t" "$f" 2>/dev/null; rm -f -- "$t"; } || exit 1; fi; done; sync -- .`;

/**
 * Makes the WAL segments a loaded host has and a restored one lacks. A load's checkpoints leave pg_wal holding
 * recycled segments, up to max_wal_size (PostgreSQL keeps about 1.1 times the WAL between its checkpoints, capped
 * there), so the measured phases write their WAL into existing files. A restored host starts with min_wal_size's few,
 * and each further segment is zero-filled while every commit waits (LWLock:WALWrite): on reference-scaled's gp3 a
 * restored host wrote 37.5 MiB/s where a loaded one wrote 22.4, and ran 1,316-1,336 TPS against 1,574, with the same
 * cold cache (2026-12-05). So the restore makes, ahead of the insert position, as many zero-filled segments as
 * the publisher had (at most max_wal_size's): the files PostgreSQL would make itself (it opens a segment that exists
 * instead of making it), each flushed and linked into place, never over one the server made meanwhile.
 * `wanted`: how many segments ahead, the publisher's count (DataSetFacts.walSegmentsAhead); without one (a set
 * published before it), as many as max_wal_size holds, what a load's checkpoints keep at most.
 * `staged`: segments stageWalSegments wrote during the fetch, used first; the staging folder is removed in any case
 * (also one an earlier attempt left).
 */
export async function preallocateWal(deps: HostDeps, c: Client, wanted?: number, staged?: StagedWal | null): Promise<{ segments: number; staged: number }> {
  const r = await c.query<{ current: string; segment: string; max: string }>(
    `SELECT pg_walfile_name(pg_current_wal_insert_lsn()) AS current,
            (SELECT setting FROM pg_settings WHERE name = 'wal_segment_size') AS segment,
            (SELECT setting FROM pg_settings WHERE name = 'max_wal_size') AS max`,
  );
  const { current, segment, max } = r.rows[0];
  const m = WAL_FILE.exec(current);
  const segmentBytes = Number(segment);
  if (!m || !(segmentBytes >= 2 ** 20) || (segmentBytes & (segmentBytes - 1)) !== 0) throw new Error(`unexpected WAL file name ${current} or segment size ${segment}`);
  const perId = 2 ** 32 / segmentBytes;
  const first = Number.parseInt(m[2], 16) * perId + Number.parseInt(m[3], 16);
  const count = Math.min(Math.floor((Number(max) * 2 ** 20) / segmentBytes), wanted ?? Number.POSITIVE_INFINITY);
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
  const names = Array.from({ length: count }, (_, i) => first + 1 + i).map((n) => `${m[1]}${hex(Math.floor(n / perId))}${hex(n % perId)}`);
  const walDir = path.join(deps.config.dataDir, 'pg_wal');
  const present = new Set(listLabDir(walDir) ?? []);
  const missing = names.filter((n) => !present.has(n));
  const stageDir = walAheadDir(deps);
  const usable = staged && staged.dir === stageDir && staged.segmentBytes === segmentBytes ? Math.min(staged.count, missing.length) : 0;
  try {
    if (missing.length === 0) return { segments: 0, staged: 0 };
    // As the server's user: staged files linked, the rest written by dd (flushed, conv=fsync); ln fails where the
    // server made the segment first; the folder's entries are flushed last.
    await runProcess('/bin/sh', ['-c', LINK_OR_WRITE_SCRIPT, 'sh', walDir, String(segmentBytes / 2 ** 20), stageDir, String(usable), ...missing], { ...asPostgresUser(deps), timeoutMs: 10 * 60_000 });
    return { segments: missing.length, staged: usable };
  } finally {
    if (existsSync(stageDir)) await removeTreeAs(deps.osUser, stageDir);
  }
}

/** What a restored host's rows were checked by: its relation files, and the row checksums unless the files showed them. */
interface RestoredContents {
  files: RelationFiles | null;
  filesSeconds: number | undefined;
  /** The row checksums and the heap's key readings; null when the files are the publisher's and the rows not scanned. */
  sums: Record<string, { rows: number; sum: string | null; keys?: KeyReading }> | null;
  checksumSeconds: number;
  /** The tables without a key, counted (their rows have no index to count them by) when the rows were not scanned. */
  unkeyedRows: Record<string, number>;
}

/**
 * A restored host's contents against its manifest: its relation files read and compared with the publisher's when the
 * manifest has them, and the rows scanned for their checksums only when the files are not the publisher's byte for
 * byte (or could not be read). The comparison itself is compareDataSet's, on what this returns.
 */
async function restoredContents(deps: HostDeps, published: DataSetFacts, method: ChecksumMethod): Promise<RestoredContents> {
  let files: RelationFiles | null = null;
  let filesSeconds: number | undefined;
  if (identityCheckable(published)) {
    // null where this host cannot read them as such (no xxhsum): then the rows are scanned, and nothing says files.
    const read = await timed(() => withConnection(deps.config, (c) => relationFileDigests(deps, c)));
    files = read.value;
    if (files) filesSeconds = read.seconds;
    if (files && relationFileDifferences(published.files!, files).length === 0) {
      const unkeyedRows: Record<string, number> = {};
      await withConnection(deps.config, async (c) => {
        for (const t of DATA_SET_TABLES.filter((x) => !DATA_SET_KEYS[x]))
          unkeyedRows[t] = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM public.${quoteIdent(t)}`)).rows[0].n);
      });
      return { files, filesSeconds, sums: null, checksumSeconds: 0, unkeyedRows };
    }
  }
  const sums = await timed(() => withConnection(deps.config, (c) => rowChecksums(c, method)));
  return { files, filesSeconds, sums: sums.value, checksumSeconds: sums.seconds, unkeyedRows: {} };
}

/** pg_amcheck's connections on a restored host: the accounts heap and its primary key checked at once (2 cores). */
const AMCHECK_JOBS = 2;

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
  const manifest = await records.readManifest();
  if (!manifest)
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
    let staging: Promise<StagedWal | null> = Promise.resolve(null);
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
      // The WAL segments' zeros are written beside the fetch, off the checks' path (stageWalSegments).
      staging = stageWalSegments(deps, manifest.facts.walSegmentsAhead ?? 0, manifest.facts.databaseBytes);
      try {
        const fetched = await heartbeatWhile('data set: fetch', (signal) => backupTool(deps, store, 'wal-g').restore({ type: 'latest' }, signal));
        backupLabel = fetched.backupLabel;
        fetchSeconds = fetched.seconds;
        const recoverStarted = Date.now();
        const recovery = await recoverFromBackup(deps, { ...settings, timeoutSeconds: input.recoveryTimeoutSeconds });
        if (!recovery.ok) {
          const message = `data set ${input.key}: recovery of the restored backup failed: ${recovery.detail}`;
          // A FATAL ends the same backup's recovery under the same settings again: 30 attempts would each fetch it anew.
          if (recovery.fatal) throw ApplicationFailure.nonRetryable(`${message}; not retried (the same backup and settings end so again)`, FAILURE_TYPES.verification);
          throw new Error(message);
        }
        // The restore's settings (restore_command, archive_mode off) must not outlive it: postgresql.auto.conf is read
        // last, so they would override what the measured phases and the durability step set.
        const autoConf = path.join(config.dataDir, 'postgresql.auto.conf');
        const text = readLabFile(autoConf) ?? '';
        const cut = text.indexOf(RESTORE_SETTINGS_MARK);
        if (cut >= 0) writeLabFile(autoConf, text.slice(0, cut) + '\n', { mode: 0o600, owner: ownerOf(asPostgresUser(deps)) });
        await stopPostgres(deps, { hostId: input.hostId, mode: 'fast' });
        // Replay, promote, and the stop before the restart with the host's own settings (added below).
        recoverSeconds = (Date.now() - recoverStarted) / 1000;
      } catch (err) {
        await staging; // its dd must not write on while another attempt stages afresh
        throw err;
      }
      writeLabFile(restoredRecord(deps), `${JSON.stringify({ key: input.key, backupLabel, fetchSeconds, recoverSeconds })}\n`, { mode: 0o644 });
    }
    const restartStarted = Date.now();
    const pg = await configurePostgres(deps, settings);
    const restoreSeconds = fetchSeconds + recoverSeconds + (Date.now() - restartStarted) / 1000;
    const checkStarted = Date.now();
    // The manifest says how its checksums were computed: the restored host computes its own the same way.
    const method = checksumMethodOf(manifest.facts);
    const storage = await timed(() => withConnection(deps.config, storageFacts));
    // Three lanes, on both cores. The contents: the relation files, then the row checksums only where the files are
    // not the publisher's (one connection). pg_amcheck (its own connections). The index keys (one connection) follow
    // whichever of those two ends first: after pg_amcheck, as they were, they ran with one core idle beside them once
    // the files were read (2026-12-05: files 1.5-2.8 s, pg_amcheck 3.3-5.3 s, then the keys 2.5-4.1 s). The WAL
    // segments a loaded host keeps (preallocateWal, staged during the fetch): they touch no relation. Each is the
    // check it was alone.
    let keysRead: Promise<{ value: Awaited<ReturnType<typeof indexKeys>>; seconds: number }> | null = null;
    const readKeys = () => (keysRead ??= timed(() => withConnection(deps.config, indexKeys)));
    const [[contents, index], checked, wal] = await heartbeatWhile(
      input.amcheck ? 'data set checks: relation files or row checksums, beside pg_amcheck, then the index keys' : 'data set checks: relation files or row checksums, then the index keys',
      () =>
        Promise.all([
          (async () => {
            const read = await restoredContents(deps, manifest.facts, method);
            return [read, await readKeys()] as const;
          })(),
          (async () => {
            const ran = input.amcheck ? await timed(() => amcheck(deps, { jobs: AMCHECK_JOBS, heapallindexed: false })) : null;
            await readKeys();
            return ran;
          })(),
          timed(async () => {
            const staged = await staging;
            return { staged, made: await withConnection(deps.config, (c) => preallocateWal(deps, c, manifest.facts.walSegmentsAhead, staged)) };
          }),
        ]),
    );
    // Files the publisher's: each keyed table's rows are its index's entries (read here), and the heap's key reading
    // the index is checked against is the publisher's (the same heap bytes), kept out of this host's facts.
    const sums = contents.sums ?? Object.fromEntries(DATA_SET_TABLES.map((t) => [t, { rows: DATA_SET_KEYS[t] ? index.value[t].entries : contents.unkeyedRows[t], sum: null }]));
    const facts = { ...combineFacts(method, sums, storage.value), ...(contents.files ? { files: contents.files } : {}) };
    const keys: Record<string, KeyReadings> = {};
    for (const table of Object.keys(DATA_SET_KEYS)) {
      const heap = contents.sums ? contents.sums[table]?.keys : manifest.facts.relations[table]?.keys;
      if (heap && index.value[table]) keys[table] = { heap, index: index.value[table] };
    }
    // The checks read every page through shared buffers and the page cache: what they left goes, as after a load
    // (startCold: PostgreSQL 17's pg_buffercache_evict empties shared buffers; older servers keep them).
    const evict = await timed(() => withConnection(deps.config, (c) => startCold(deps, c)));
    const checkParts: RestoreCheckParts = {
      storageFactsSeconds: storage.seconds,
      relationFilesSeconds: contents.filesSeconds,
      rowsScanned: contents.sums !== null,
      checksumSeconds: contents.checksumSeconds,
      amcheckSeconds: checked?.seconds ?? null,
      indexKeysSeconds: index.seconds,
      evictSeconds: evict.seconds,
      walSegments: wal.value.made.segments,
      walSeconds: wal.seconds,
      ...(wal.value.staged ? { walStaged: wal.value.made.staged, walStagedSeconds: wal.value.staged.seconds, ...(wal.value.staged.error ? { walStageError: wal.value.staged.error } : {}) } : {}),
    };
    return {
      backupLabel,
      fetchSeconds,
      recoverSeconds,
      restoreSeconds,
      facts,
      amcheck: checked ? { ok: checked.value.ok, detail: checked.value.detail } : null,
      keys,
      checkSeconds: (Date.now() - checkStarted) / 1000,
      checkParts,
      postgresVersion: pg.postgresVersion,
    };
  };
  const { value, preparedWithoutCap } = await prepareDataSet(deps, run);
  return { ...value, preparedWithoutCap };
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
