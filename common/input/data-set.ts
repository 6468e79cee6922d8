/**
 * A data set as a named artifact (issue 31): what makes two loads give the same data (its key), what its publisher
 * recorded (its manifest, written last), and the comparison of a restored host with that manifest. Pure: workflows
 * decide load or restore from it, activities write and check it, the CLI lists it.
 *
 * The key is a hash of every input that changes what a load leaves on disk, and of nothing else: the PostgreSQL
 * major (on-disk format, initdb's defaults such as PostgreSQL 18's data checksums), the scale (rows, and the aid
 * type pgbench widens at 20,000), the schema and load options of the loader (fill factor, the final VACUUM's
 * FREEZE), the loader's version, the cluster's creation options and the server settings that change stored bytes.
 * The chunking and the number of writers are not in it: they change how fast the same rows arrive, not the rows.
 */
import { DATA_SET_KEY_LENGTH, dataSetKeyOf, isDataSetKey } from '../core/ids';
import { hex, sha256 } from '../core/sha256';
import { accountRows, dataSetBytes } from './data-size';
import { dataReuse, type ExperimentSpec } from './spec';
import { classLimits } from './storage';
import { providerOf } from '../providers/registry';

/**
 * The loader's version: raise it whenever activities/host/load.ts changes what it writes (DDL, rows, the VACUUM
 * after them), so no run restores a set an older loader made.
 */
export const LOADER_VERSION = 2;

/** How initdb creates every host's cluster (activities/host/postgres.ts initCluster): a part of the on-disk format. */
export const INITDB_FORMAT = 'encoding=UTF8 locale=C checksums=initdb-default';

/** The fill factor pgbench's tables are created with (pgbench -i's default, load.ts's DDL). */
export const LOAD_FILL_FACTOR = 100;

/**
 * Settings of postgres.settings that change the bytes a load leaves (and so are part of the key); every other
 * setting changes how the server runs, not what it stores, and a restored host runs with its own spec's settings.
 */
export const ON_DISK_SETTINGS = [
  // The table and TOAST formats the load's tables are created with.
  'default_table_access_method',
  'default_toast_compression',
  // The statistics ANALYZE stores in pg_statistic (part of the published state).
  'default_statistics_target',
  // What the load's VACUUM (FREEZE) freezes (0 with FREEZE, but a spec may still set the table's own).
  'vacuum_freeze_min_age',
  'vacuum_freeze_table_age',
  'vacuum_multixact_freeze_min_age',
] as const;

/** Everything a data set's key is made of, as recorded in its manifest (people read it in `datasets list`). */
export interface DataSetKeyParts {
  postgresMajor: number;
  scale: number;
  schema: { fillFactor: number; freeze: boolean; tables: 'pgbench'; aidType: 'int' | 'bigint' };
  loaderVersion: number;
  initdb: string;
  settings: Record<string, string>;
}

/** pgbench switches aid to bigint at this scale (SCALE_32BIT_THRESHOLD; load.ts makes the same choice). */
const BIGINT_SCALE = 20_000;

/** The key parts of a spec's data on a server of this major. */
export function dataSetKeyParts(spec: { data: { scale: number }; postgres: { settings: Record<string, string | number | boolean> } }, postgresMajor: number): DataSetKeyParts {
  const settings: Record<string, string> = {};
  for (const name of ON_DISK_SETTINGS) if (Object.hasOwn(spec.postgres.settings, name)) settings[name] = String(spec.postgres.settings[name]);
  return {
    postgresMajor,
    scale: spec.data.scale,
    schema: { fillFactor: LOAD_FILL_FACTOR, freeze: true, tables: 'pgbench', aidType: spec.data.scale >= BIGINT_SCALE ? 'bigint' : 'int' },
    loaderVersion: LOADER_VERSION,
    initdb: INITDB_FORMAT,
    settings,
  };
}

/** JSON with object keys sorted: one text for one value, whatever order its keys were built in. */
export function canonicalJsonText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]])) : v,
  );
}

export { DATA_SET_KEY_LENGTH, isDataSetKey };

/** A data set's key: named by the one naming module (common/core/ids.ts) from its parts' canonical JSON. */
export function dataSetKey(parts: DataSetKeyParts): string {
  return dataSetKeyOf(canonicalJsonText(parts));
}

/** One relation of a data set as measured on a host. */
export interface RelationFacts {
  rows: number;
  /**
   * Order-independent checksum of the rows (as checksumMethod says), as text; null where the rows were not scanned
   * because every relation file is the publisher's byte for byte (DataSetFacts.files).
   */
  checksum: string | null;
  /** The heap's reading of the table's key, from the same scan as the checksum (keyed tables; absent before it). */
  keys?: KeyReading;
  /** The heap's bytes (main fork), and the table with its indexes, visibility map and free space map. */
  heapBytes: number;
  totalBytes: number;
  /** Pages the visibility map marks all-visible and all-frozen (pg_visibility_map_summary): the freeze state. */
  allVisible: number | null;
  allFrozen: number | null;
}

/**
 * How the row checksums are computed: `md5-64` sums the first 64 bits of md5 of each row's text (the first manifests;
 * a row to text, then md5, costs most of a restored host's checks); `hash-record-64` sums PostgreSQL's 64-bit
 * `hash_record_extended` of each row (PostgreSQL 14 and later; a few times cheaper per row). Both change with any
 * changed value of a row, whatever its place; a restored host computes its checksums the way its manifest says.
 */
export const CHECKSUM_METHODS = ['md5-64', 'hash-record-64'] as const;
export type ChecksumMethod = (typeof CHECKSUM_METHODS)[number];

/** The method a server computes a new set's checksums with: the cheaper one where the server has it. */
export function checksumMethodFor(postgresMajor: number): ChecksumMethod {
  return postgresMajor >= 14 ? 'hash-record-64' : 'md5-64';
}

/** The method facts were computed with (manifests written before the field: md5-64). */
export function checksumMethodOf(facts: Pick<DataSetFacts, 'checksumMethod'>): ChecksumMethod {
  return facts.checksumMethod ?? 'md5-64';
}

/** What a host's data set is, measured the same way on the publisher and on every restored host. */
export interface DataSetFacts {
  relations: Record<string, RelationFacts>;
  /** pg_database_size of the lab's database. */
  databaseBytes: number;
  /** How `relations[].checksum` was computed; absent: md5-64. */
  checksumMethod?: ChecksumMethod;
  /**
   * The publisher's WAL segments ahead of its insert position once it was ready to measure (the ones its load's
   * checkpoints recycled): a restored host makes as many (preallocateWal). Absent in sets published before it.
   */
  walSegmentsAhead?: number;
  /**
   * Every file of the set's relations (each table, its indexes, its TOAST table and index) as a host read it after a
   * checkpoint, nothing writing: the publisher's once its backup ended; a restored host's before its checks. Absent
   * in sets published before it, or where the host had no xxhsum.
   */
  files?: RelationFiles;
}

/** One file of a relation (a fork's 1 GiB segment): its bytes and its XXH128 (`xxhsum -H2`). */
export interface RelationFile {
  bytes: number;
  xxh128: string;
}

/**
 * A data set's relation files: by relation (pgbench_accounts, pgbench_accounts_pkey, "pgbench_accounts TOAST", ...),
 * then by file within it: the fork (main, fsm, vm, init) and, past the first 1 GiB segment, its number ("main.1").
 */
export type RelationFiles = Record<string, Record<string, RelationFile>>;

/**
 * How a restored host's relation files differ from the publisher's, one line each, or [] when each is the
 * publisher's byte for byte: same relations, same files, same bytes, same XXH128. A record without every table of the
 * set's main fork is a difference too: an empty or partial record never stands for identical files.
 */
export function relationFileDifferences(publisher: RelationFiles, restored: RelationFiles): string[] {
  const out: string[] = [];
  for (const t of DATA_SET_TABLES) if (!publisher[t]?.main) out.push(`${t}: the publisher recorded no main fork`);
  const relations = [...new Set([...Object.keys(publisher), ...Object.keys(restored)])].sort();
  for (const r of relations) {
    const a = publisher[r] ?? {};
    const b = restored[r] ?? {};
    for (const f of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      if (!a[f]) out.push(`${r} ${f}: not among the publisher's files`);
      else if (!b[f]) out.push(`${r} ${f}: missing on the restored host`);
      else if (a[f].bytes !== b[f].bytes) out.push(`${r} ${f}: ${b[f].bytes} bytes, the publisher's ${a[f].bytes}`);
      else if (a[f].xxh128 !== b[f].xxh128) out.push(`${r} ${f}: XXH128 ${b[f].xxh128}, the publisher's ${a[f].xxh128}`);
    }
  }
  return out;
}

/**
 * Whether a restored host may take its rows as the publisher's without scanning them: the manifest has the
 * publisher's files and the heap's key reading of every keyed table (what the index keys are checked against).
 */
export function identityCheckable(facts: DataSetFacts): boolean {
  return !!facts.files && Object.keys(DATA_SET_KEYS).every((t) => !!facts.relations[t]?.keys);
}

/** The tables a data set holds (pgbench's), compared relation by relation. */
export const DATA_SET_TABLES = ['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history'] as const;

/** The manifest, written last into the set's folder: its presence is what makes a set usable. */
export interface DataSetManifest {
  formatVersion: 1;
  key: string;
  parts: DataSetKeyParts;
  rows: number;
  facts: DataSetFacts;
  /** The base backup: the tool, its label, bytes stored. */
  backup: { tool: 'wal-g'; label: string; repositoryBytes: number | null; databaseBytes: number | null };
  /** Seconds of the first host's load (rows, keys, VACUUM) and of the publish (freeze-settle, archive, backup). */
  loadSeconds: number;
  publishSeconds: number;
  /** The host and run that made it. */
  source: { hostId: string; runId: string; workflowId: string };
  publishedAt: string;
  /** After this the sweeper removes it (dataSets.keepDays from its publishing run). */
  expiresAt: string;
}

/** Problems of a manifest read from a store (it is input like any other), or [] when it is well formed. */
export function manifestProblems(m: unknown, expectedKey: string): string[] {
  const problems: string[] = [];
  const o = m as Partial<DataSetManifest> | null;
  if (typeof o !== 'object' || o === null) return ['is not a JSON object'];
  if (o.formatVersion !== 1) problems.push(`formatVersion ${JSON.stringify(o.formatVersion)} is not 1`);
  if (o.key !== expectedKey) problems.push(`names key ${JSON.stringify(o.key)}, not ${expectedKey} (the folder it is in)`);
  if (!o.parts || dataSetKey(o.parts) !== o.key) problems.push('its key parts do not hash to its key');
  if (!o.facts || typeof o.facts !== 'object' || !o.facts.relations) problems.push('has no facts');
  else {
    // Each of the facts' own problems is named: one does not hide another.
    if (o.facts.checksumMethod !== undefined && !(CHECKSUM_METHODS as readonly unknown[]).includes(o.facts.checksumMethod))
      problems.push(`names checksum method ${JSON.stringify(o.facts.checksumMethod)}, not one of ${CHECKSUM_METHODS.join(', ')}`);
    if (o.facts.walSegmentsAhead !== undefined && !(Number.isSafeInteger(o.facts.walSegmentsAhead) && o.facts.walSegmentsAhead >= 0))
      problems.push(`names ${JSON.stringify(o.facts.walSegmentsAhead)} WAL segments ahead, not a whole number of them`);
  }
  if (typeof o.rows !== 'number') problems.push('has no row count');
  if (typeof o.expiresAt !== 'string' || Number.isNaN(Date.parse(o.expiresAt))) problems.push('has no expiry');
  return problems;
}

/** One check of a restored host against the manifest. */
export interface DataSetCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * pgbench's primary keys, each the only index of its table: a restored host reads each key twice, from the heap (in
 * the row checksums' scan) and from its index (an index-only scan), and the two must agree (keysCheck). That is what
 * pg_amcheck's heapallindexed proves for these indexes, at a quarter of its time: every heap row's key in the index,
 * and no other entry.
 */
export const DATA_SET_KEYS: Partial<Record<(typeof DATA_SET_TABLES)[number], string>> = { pgbench_accounts: 'aid', pgbench_branches: 'bid', pgbench_tellers: 'tid' };

/** A table's key column as one read saw it: how many entries, and the sum of a 64-bit hash of each key. */
export interface KeyReading {
  entries: number;
  sum: string;
}

/** One table's keys read from its heap and from its primary key index (with the plan node that read the index). */
export interface KeyReadings {
  heap: KeyReading;
  index: KeyReading & { scan: string };
}

/**
 * The index check of a restored host: for each keyed table, its index read by an index scan (not the heap), with as
 * many entries as the heap has rows' keys and the same sum of their hashes; a table missing from the readings fails.
 * Fails on data made to break it (test/unit/data-set.test.ts).
 */
export function keysCheck(readings: Record<string, KeyReadings>): DataSetCheck {
  const wrong: string[] = [];
  for (const [table, column] of Object.entries(DATA_SET_KEYS)) {
    const r = readings[table];
    if (!r) {
      wrong.push(`${table}: its ${column} index was not read`);
      continue;
    }
    if (!/^Index (Only )?Scan$/.test(r.index.scan)) wrong.push(`${table}: the index read was a ${r.index.scan}, not an index scan`);
    else if (r.index.entries !== r.heap.entries) wrong.push(`${table}: ${r.index.entries} index entries for ${r.heap.entries} heap rows`);
    else if (r.index.sum !== r.heap.sum) wrong.push(`${table}: the index's ${column} values differ from the heap's (hash sums ${r.index.sum} and ${r.heap.sum})`);
  }
  const tables = Object.keys(DATA_SET_KEYS).length;
  return { name: 'index entries', ok: wrong.length === 0, detail: wrong.length ? wrong.join('; ') : `${tables} primary keys: every heap row's key in its index, and nothing else` };
}

/** The tolerance on relation sizes: a restore gives the same pages, a fresh load the same within 1 %. */
export const SIZE_TOLERANCE = 0.01;

/**
 * The restored host against its manifest: every table's rows equal, and its contents: the checksums equal, or every
 * relation file the publisher's byte for byte (then the restored host scans no row), heap and total sizes within 1 %,
 * the freeze state (all-visible and all-frozen pages) equal within 1 %, pg_amcheck clean when it ran, and each
 * primary key's index entries the heap's keys when they were read (keysCheck). Each check
 * fails on data made to break it (test/unit/data-set.test.ts).
 */
export function compareDataSet(
  manifest: Pick<DataSetManifest, 'facts' | 'rows'>,
  restored: DataSetFacts,
  amcheck: { ok: boolean; detail: string } | null,
  keys: Record<string, KeyReadings> | null = null,
): DataSetCheck[] {
  const checks: DataSetCheck[] = [];
  const want = manifest.facts.relations;
  const tables = [...new Set([...Object.keys(want), ...Object.keys(restored.relations)])].sort();
  const rows: string[] = [];
  const sums: string[] = [];
  // Files the publisher's byte for byte are its rows: a restored host that shows it scans no row (its checksums null).
  const fileDifferences = manifest.facts.files && restored.files ? relationFileDifferences(manifest.facts.files, restored.files) : null;
  const sameFiles = fileDifferences !== null && fileDifferences.length === 0;
  // Checksums of two methods are different numbers for the same rows: never compared as if they were one.
  const methods = [checksumMethodOf(manifest.facts), checksumMethodOf(restored)];
  if (methods[0] !== methods[1]) sums.push(`computed with ${methods[1]}, the manifest's with ${methods[0]}`);
  const sizes: string[] = [];
  const frozen: string[] = [];
  for (const t of tables) {
    const a = want[t];
    const b = restored.relations[t];
    if (!a || !b) {
      rows.push(`${t} ${a ? 'missing on the restored host' : 'not in the manifest'}`);
      continue;
    }
    if (a.rows !== b.rows) rows.push(`${t}: ${b.rows} rows, the manifest says ${a.rows}`);
    if (b.checksum === null) {
      if (!sameFiles) sums.push(`${t}: its rows were not scanned, and its files are not shown to be the publisher's`);
    } else if (methods[0] === methods[1] && a.checksum !== b.checksum) sums.push(`${t}: checksum ${b.checksum}, the manifest says ${a.checksum}`);
    for (const [what, x, y] of [
      ['heap', a.heapBytes, b.heapBytes],
      ['total', a.totalBytes, b.totalBytes],
    ] as const)
      if (!within(x, y, SIZE_TOLERANCE)) sizes.push(`${t} ${what} ${y} bytes, the manifest says ${x} (${pct(x, y)})`);
    for (const [what, x, y] of [
      ['all-visible', a.allVisible, b.allVisible],
      ['all-frozen', a.allFrozen, b.allFrozen],
    ] as const)
      if (x !== null && y !== null && !within(x, y, SIZE_TOLERANCE)) frozen.push(`${t} ${what} pages ${y}, the manifest says ${x}`);
  }
  const total = Object.values(restored.relations).reduce((s, r) => s + (r.rows ?? 0), 0);
  checks.push({ name: 'row counts', ok: rows.length === 0, detail: rows.length ? rows.join('; ') : `${tables.length} tables, ${total} rows, as the manifest` });
  if (sums.length && fileDifferences?.length) sums.push(`and ${fileDifferences.length} relation files differ from the publisher's: ${fileDifferences.slice(0, 3).join('; ')}`);
  checks.push({ name: 'checksums', ok: sums.length === 0, detail: sums.length ? sums.join('; ') : contentsDetail(restored, methods[0], sameFiles, fileDifferences) });
  checks.push({ name: 'relation sizes', ok: sizes.length === 0, detail: sizes.length ? sizes.join('; ') : `heap and total sizes within ${SIZE_TOLERANCE * 100} %` });
  checks.push({ name: 'freeze state', ok: frozen.length === 0, detail: frozen.length ? frozen.join('; ') : 'all-visible and all-frozen pages as the source' });
  if (amcheck) checks.push({ name: 'pg_amcheck', ok: amcheck.ok, detail: amcheck.detail });
  if (keys) checks.push(keysCheck(keys));
  return checks;
}

/** What a passed contents check rests on: the files compared byte for byte, or the rows scanned (and why). */
function contentsDetail(restored: DataSetFacts, method: ChecksumMethod, sameFiles: boolean, fileDifferences: string[] | null): string {
  const scanned = Object.values(restored.relations).some((r) => r.checksum !== null);
  if (sameFiles && !scanned) {
    const files = Object.values(restored.files!).flatMap((r) => Object.values(r));
    const bytes = files.reduce((s, f) => s + f.bytes, 0);
    return `every relation file the publisher's byte for byte (${files.length} files, ${bytes} bytes, XXH128): its rows, not scanned again`;
  }
  const why = fileDifferences?.length ? `; ${fileDifferences.length} relation files differ from the publisher's (${fileDifferences.slice(0, 2).join('; ')}), so the rows were scanned` : '';
  return `every table's checksum equal (${method})${why}`;
}

function within(expected: number, got: number, tolerance: number): boolean {
  if (expected === got) return true;
  return Math.abs(got - expected) <= tolerance * Math.max(Math.abs(expected), 1);
}

function pct(expected: number, got: number): string {
  return expected ? `${(((got - expected) / expected) * 100).toFixed(2)} %` : 'from 0';
}

/** A short digest of facts, for messages and test names (never a key). */
export function factsDigest(facts: DataSetFacts): string {
  return hex(sha256(canonicalJsonText(facts))).slice(0, 12);
}

/** When a set published now expires. */
export function expiresAt(publishedAt: string, keepDays: number): string {
  return new Date(Date.parse(publishedAt) + keepDays * 86_400_000).toISOString();
}

/** Days a published set is kept when the spec does not say (dataSets.keepDays). */
export const DEFAULT_KEEP_DAYS = 7;

/**
 * Why a spec's clusters load every host instead of using data sets, or null when they use them: sets live in the
 * spec's backup store, an S3 store on any provider or a folder store on this machine (a folder is one machine's).
 */
export function dataSetsOff(spec: ExperimentSpec): string | null {
  if (dataReuse(spec) === 'never') return 'data.reuse is "never": every host loads afresh';
  if (spec.durability.backupStore.kind === 's3') return null;
  const provider = providerOf(spec.provider);
  if (!provider.onThisMachine)
    return `the backup store is a folder, which hosts ${provider.where} do not share, so each loads its own; set durability.backupStore to an S3 store ({"kind": "s3", "bucket": ...}) to load once and restore everywhere else`;
  return null;
}

/**
 * The estimate's assumptions for a restore: WAL-G's fetch and lz4 decompression on one host, and the bytes it writes
 * (the database, as dataSetBytes sizes it). A restore writes every block onto the host's own volume, so a gp3 volume
 * needs no hydration (that is an EBS snapshot's lazy load, which the lab does not use: no Fast Snapshot Restore cost).
 */
export const RESTORE_ASSUMPTIONS = { fetchMiBps: 400, instanceStoreMiBps: 1_000, loadRowsPerSecondPerWriter: 25_000, loadIoFactor: 2.5 } as const;

/** One host's data preparation in a plan. */
export interface PlannedPreparation {
  className: string;
  index: number;
  step: 'load + publish' | 'restore' | 'load';
  seconds: number;
  /**
   * A restoring host of the builder's wave, on a run that publishes the set: provisioned with the others, it waits
   * for the first host's load and publish before it restores (a host of a later wave, or of a later run, does not).
   */
  waitSeconds?: number;
}

function classMiBps(spec: ExperimentSpec, className: string): number {
  // Locally, preparation runs with the modelled cap lifted (lib/io-cap.ts): the device's own cap does not apply.
  if (providerOf(spec.provider).onThisMachine) return RESTORE_ASSUMPTIONS.instanceStoreMiBps;
  return classLimits(spec.storageClasses[className])?.throughputMiBps ?? RESTORE_ASSUMPTIONS.instanceStoreMiBps;
}

/** Estimated seconds of a load on one host of a class (the cost model's: the slower of the CPU's rows and the device's bytes). */
export function estimatedLoadSeconds(spec: ExperimentSpec, className: string): number {
  const a = RESTORE_ASSUMPTIONS;
  return Math.max(accountRows(spec.data.scale) / (spec.data.loadWriters * a.loadRowsPerSecondPerWriter), (dataSetBytes(spec.data.scale) * a.loadIoFactor) / (classMiBps(spec, className) * 2 ** 20));
}

/** Estimated seconds of a restore (or of a publish's backup, which reads what a restore writes). */
export function estimatedRestoreSeconds(spec: ExperimentSpec, className: string): number {
  return dataSetBytes(spec.data.scale) / (Math.min(RESTORE_ASSUMPTIONS.fetchMiBps, classMiBps(spec, className)) * 2 ** 20);
}

/**
 * Each host's preparation in the order the clusters run: with data sets, the first host loads and publishes and
 * every other restores, those started with it (the first maxParallelClusters) after waiting for its publish; when a
 * set of the key is published already (`published`), every host restores at once. Without sets, every host loads.
 */
export function planPreparation(spec: ExperimentSpec, withDataSets = dataSetsOff(spec) === null, published = false): PlannedPreparation[] {
  const out: PlannedPreparation[] = [];
  for (const className of Object.keys(spec.storageClasses))
    for (let index = 0; index < spec.clustersPerClass; index++) {
      const first = out.length === 0;
      const load = estimatedLoadSeconds(spec, className);
      const restore = estimatedRestoreSeconds(spec, className);
      if (!withDataSets) out.push({ className, index, step: 'load', seconds: load });
      else if (first && !published) out.push({ className, index, step: 'load + publish', seconds: load + restore });
      else if (published || out.length >= Math.max(1, spec.maxParallelClusters)) out.push({ className, index, step: 'restore', seconds: restore });
      else out.push({ className, index, step: 'restore', seconds: restore, waitSeconds: out[0].seconds });
    }
  return out;
}
