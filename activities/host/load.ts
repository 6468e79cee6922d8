/**
 * The resumable data load: pgbench's tables, pgbench_accounts filled in fixed chunks of the aid range.
 * Each chunk claims its id in storage_lab.load_chunks and inserts its rows in the same transaction, so a chunk
 * is done exactly once and any retry (new attempt, new agent, restarted server) resumes from the database itself.
 * Primary keys and VACUUM ANALYZE come after the load, as `pgbench -i` does them.
 */
import { Context } from '@temporalio/activity';
import path from 'node:path';
import type { Client } from 'pg';
import type { LoadResult } from '../../common/results/result';
import { WORKLOAD_ROLE } from '../../common/core/names';
import { accountRows } from '../../common/input/data-size';
import { connectLocal, withConnection } from '../../lib/pg';
import { every, progressReporter, StepProgress, type ReportProgress } from '../progress';
import { asPostgresUser, assertHost, type HostDeps, type HostInput } from './deps';
import { runProcess } from '../../lib/process-runner';
import { listLabDir } from '../../lib/lab-fs';

export interface LoadInput extends HostInput {
  scale: number;
  chunkRows: number;
  writers: number;
  /**
   * End with VACUUM (FREEZE, ANALYZE), as pgbench -i's COPY FREEZE leaves its rows (PostgreSQL 14+): every page
   * frozen and all-visible, so a host restored from a published set and the host that loaded it start in the same
   * physical state, and neither's first measured seconds pay for freezing or hint bits. Absent: VACUUM ANALYZE
   * (runs started before data sets).
   */
  freeze?: boolean;
}

/** pgbench switches aid to bigint at this scale (SCALE_32BIT_THRESHOLD). */
const BIGINT_SCALE = 20_000;
const HEARTBEAT_MS = 2_000;
const UNIQUE_VIOLATION = '23505';

/** Chunks of the aid range: chunk i holds aids [i * chunkRows + 1, min((i + 1) * chunkRows, rows)]. */
export function chunkRange(chunk: number, chunkRows: number, rows: number): { first: number; last: number } {
  return { first: chunk * chunkRows + 1, last: Math.min((chunk + 1) * chunkRows, rows) };
}

export function chunkCount(rows: number, chunkRows: number): number {
  return Math.ceil(rows / chunkRows);
}

/** pgbench's own DDL for its four tables, aid widened as pgbench widens it. */
function schemaSql(scale: number): string[] {
  const aid = scale >= BIGINT_SCALE ? 'bigint' : 'int';
  return [
    'CREATE SCHEMA IF NOT EXISTS storage_lab',
    `CREATE TABLE IF NOT EXISTS storage_lab.load_meta (key text PRIMARY KEY, value text NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS storage_lab.load_chunks (
       chunk_id int PRIMARY KEY, first_aid bigint NOT NULL, last_aid bigint NOT NULL, done_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE TABLE IF NOT EXISTS public.pgbench_history (tid int, bid int, aid ${aid}, delta int, mtime timestamp, filler char(22))`,
    `CREATE TABLE IF NOT EXISTS public.pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)) WITH (fillfactor=100)`,
    `CREATE TABLE IF NOT EXISTS public.pgbench_accounts (aid ${aid} not null, bid int, abalance int, filler char(84)) WITH (fillfactor=100)`,
    `CREATE TABLE IF NOT EXISTS public.pgbench_branches (bid int not null, bbalance int, filler char(88)) WITH (fillfactor=100)`,
    // The workload role reads and writes pgbench's tables and nothing else (common/core/names.ts says why).
    `GRANT SELECT, INSERT, UPDATE, DELETE ON public.pgbench_history, public.pgbench_tellers, public.pgbench_accounts, public.pgbench_branches TO ${WORKLOAD_ROLE}`,
  ];
}

/**
 * Loads (or finishes loading) the data set; returns at once when an earlier attempt already completed it.
 * Preparation, never measured: it runs with the host's emulated I/O cap lifted (lib/io-cap.ts), applied again when it
 * ends, whatever happens. It ends with a CHECKPOINT (finishLoad), so the measured phases start from a written-out
 * data set rather than the load's dirty buffers.
 */
export async function loadData(deps: HostDeps, input: LoadInput): Promise<LoadResult> {
  assertHost(deps, input);
  // With WAL archiving on (a drill's source), the archiver would still be archiving an uncapped load's WAL during
  // the measured base backup after it: that load stays capped.
  const archiving = await withConnection(deps.config, (c) => c.query<{ v: string }>("SELECT current_setting('archive_mode') AS v")).then(
    (r) => r.rows[0].v !== 'off',
  );
  if (archiving) return { ...(await load(deps, input)), preparedWithoutCap: false };
  // prepare() itself runs the load as it is, and claims nothing, where there is no cap to lift.
  // The memory limit stays (prepareDataSet lifts it for a publish and a restore): without it, the load's 3.3 GB of
  // rows stayed dirty in the page cache and reached the volume in one burst at the primary keys' sync, which took 40.2
  // s where it takes 10.8 under the limit (local-quick-27 against -22, docs/data-sets.md).
  const { value, preparedWithoutCap } = await deps.ioCap.prepare(() => load(deps, input));
  return { ...value, preparedWithoutCap };
}

async function load(deps: HostDeps, input: LoadInput): Promise<LoadResult> {
  const ctx = Context.current();
  const report = progressReporter(input.hostId, 'load');
  const rows = accountRows(input.scale);
  const total = chunkCount(rows, input.chunkRows);

  const monitor = await connectLocal(deps.config, { applicationName: 'storage-lab load monitor' });
  try {
    for (const sql of schemaSql(input.scale)) await monitor.query(sql);
    await checkLayout(monitor, input);
    await monitor.query(
      `INSERT INTO storage_lab.load_meta VALUES ('started_at', clock_timestamp()::text) ON CONFLICT DO NOTHING`,
    );
    const meta = await readMeta(monitor);
    if (meta.vacuumed_at) return await summarise(monitor, input, total, 0, meta); // Awaited: the finally closes monitor.

    const done = new Set(
      (await monitor.query<{ chunk_id: number }>('SELECT chunk_id FROM storage_lab.load_chunks')).rows.map(
        (r) => r.chunk_id,
      ),
    );
    const resumed = [...done].filter((c) => c >= 0).length;
    const pending = Array.from({ length: total }, (_, i) => i).filter((i) => !done.has(i));
    if (!done.has(-1)) await loadBranchesAndTellers(monitor, input.scale);

    const attemptStart = Date.now();
    let chunksDone = resumed;
    let lastBytes = 0;
    const chunkProgress = new StepProgress('rows', 'chunks');
    /** The heap's growth rate this attempt, as last measured by the ETA rule: the post-load steps' ETA scales from it. */
    let lastRate: number | undefined;
    const beat = async () => {
      lastBytes = await relationBytes(monitor).catch(() => lastBytes);
      const elapsed = (Date.now() - attemptStart) / 1000;
      const rowsDone = Math.min(rows, chunksDone * input.chunkRows);
      const rowsThisAttempt = (chunksDone - resumed) * input.chunkRows;
      const chunks = chunkProgress.read(chunksDone, total);
      // The primary key and VACUUM ANALYZE come after the rows: their seconds as recorded loads took them against
      // their rows' (AFTER_ROWS_PER_ROWS_SECOND), from the rows' seconds at the rate measured now, so the ETA covers
      // the whole load.
      const afterRows = afterRowsSeconds(chunks.rate, total);
      // The heap's write rate: the steps after the rows scale their own ETA from it until they measure their scan.
      const heapRate = chunks.rate !== undefined && chunksDone > 0 ? (chunks.rate * lastBytes) / chunksDone : undefined;
      report({
        percent: Math.round((LOAD_STEP_SPANS.rows[1] * 1000 * chunksDone) / total) / 10,
        etaSeconds: chunks.eta !== undefined && afterRows !== undefined ? Math.round(chunks.eta + afterRows) : undefined,
        measure: chunks.measure,
        detail: {
          step: 'rows',
          rows: rowsDone,
          rowsTotal: rows,
          chunks: chunksDone,
          chunksTotal: total,
          mb: Math.round(lastBytes / 1e6),
          rowsPerSecond: elapsed > 0 ? Math.round(rowsThisAttempt / elapsed) : 0,
        },
      });
      lastRate = heapRate ?? lastRate;
    };
    const stopBeat = every(HEARTBEAT_MS, () => void beat());
    try {
      await runWriters(deps, input, rows, pending, () => chunksDone++, ctx.cancellationSignal);
    } finally {
      stopBeat();
    }
    await beat();
    return await finishLoad(deps, monitor, input, total, resumed, report, lastRate);
  } finally {
    await monitor.end().catch(() => undefined);
  }
}

/** A host that already holds data of another scale or chunking cannot be resumed: say so instead of mixing. */
async function checkLayout(c: Client, input: LoadInput): Promise<void> {
  const layout = `scale=${input.scale} chunkRows=${input.chunkRows}`;
  await c.query(`INSERT INTO storage_lab.load_meta VALUES ('layout', $1) ON CONFLICT DO NOTHING`, [layout]);
  const meta = await readMeta(c);
  if (meta.layout !== layout)
    throw new Error(`host already holds a load with ${meta.layout}, not ${layout}; tear the host down and start again`);
}

async function readMeta(c: Client): Promise<Record<string, string>> {
  const r = await c.query<{ key: string; value: string }>('SELECT key, value FROM storage_lab.load_meta');
  return Object.fromEntries(r.rows.map((row) => [row.key, row.value]));
}

async function relationBytes(c: Client): Promise<number> {
  const r = await c.query<{ bytes: string }>("SELECT pg_relation_size('public.pgbench_accounts') AS bytes");
  return Number(r.rows[0].bytes);
}

/** Branches and tellers are tiny; they go in one transaction, claimed as chunk -1. */
async function loadBranchesAndTellers(c: Client, scale: number): Promise<void> {
  await c.query('BEGIN');
  try {
    await c.query(`INSERT INTO storage_lab.load_chunks (chunk_id, first_aid, last_aid) VALUES (-1, 0, 0)`);
    await c.query(
      `INSERT INTO public.pgbench_branches (bid, bbalance) SELECT bid, 0 FROM generate_series(1, $1::int) AS bid`,
      [scale],
    );
    await c.query(
      `INSERT INTO public.pgbench_tellers (tid, bid, tbalance) SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, $1::int) AS tid`,
      [scale * 10],
    );
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK');
    if ((e as { code?: string }).code !== UNIQUE_VIOLATION) throw e;
  }
}

/** Parallel chunk writers over one queue of pending chunks; each chunk is one transaction. */
async function runWriters(
  deps: HostDeps,
  input: LoadInput,
  rows: number,
  pending: number[],
  onChunkDone: () => void,
  cancelled: AbortSignal,
): Promise<void> {
  const queue = [...pending];
  const writer = async (n: number) => {
    if (queue.length === 0) return;
    const c = await connectLocal(deps.config, { applicationName: `storage-lab loader ${n}` });
    // A writer whose agent died must not keep its backend busy: the server checks the socket every second.
    await c.query(`SET client_connection_check_interval = '1s'`);
    const abort = () => void c.end().catch(() => undefined);
    cancelled.addEventListener('abort', abort, { once: true });
    try {
      for (let chunk = queue.shift(); chunk !== undefined && !cancelled.aborted; chunk = queue.shift()) {
        if (await loadChunk(c, chunk, input.chunkRows, rows)) onChunkDone();
      }
    } finally {
      cancelled.removeEventListener('abort', abort);
      await c.end().catch(() => undefined);
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: input.writers }, (_, n) => writer(n)));
  // Cancelled: report it as a cancellation (the closed connections' errors are its consequence, not a failure).
  if (cancelled.aborted) await Context.current().cancelled;
  const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failure) throw failure.reason;
}

/** Claims and loads one chunk; false when another writer or an earlier attempt already holds it. */
async function loadChunk(c: Client, chunk: number, chunkRows: number, rows: number): Promise<boolean> {
  const { first, last } = chunkRange(chunk, chunkRows, rows);
  await c.query('BEGIN');
  try {
    // Claim first: a concurrent duplicate blocks here on the key instead of after doing all the work.
    await c.query('INSERT INTO storage_lab.load_chunks (chunk_id, first_aid, last_aid) VALUES ($1, $2, $3)', [
      chunk,
      first,
      last,
    ]);
    await c.query(
      `INSERT INTO public.pgbench_accounts (aid, bid, abalance, filler)
       SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series($1::bigint, $2::bigint) AS aid`,
      [first, last],
    );
    await c.query('COMMIT');
    return true;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    if ((e as { code?: string }).code === UNIQUE_VIOLATION) return false;
    throw e;
  }
}

/**
 * Evicts every (clean, after the checkpoint) buffer the load left in shared_buffers, as a freshly started server has
 * none, while the page cache keeps what it holds: the measured phases start as the reference's clusters did, with
 * shared_buffers free to take what the workload reads and to keep the pages it dirties. pg_buffercache_evict is
 * PostgreSQL 17's; an older server starts with what the load left.
 */
export async function emptySharedBuffers(c: Client): Promise<void> {
  const version = Number((await c.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0].v);
  if (version < 170000) return;
  // In public, named in full: the lab's sessions have only pg_catalog on their search path (lib/pg.ts), where an
  // extension without a schema would be created, and the server refuses to create objects in pg_catalog.
  await c.query('CREATE EXTENSION IF NOT EXISTS pg_buffercache SCHEMA public');
  try {
    await c.query('SELECT count(*) FROM public.pg_buffercache WHERE relfilenode IS NOT NULL AND public.pg_buffercache_evict(bufferid)');
  } finally {
    await c.query('DROP EXTENSION IF EXISTS pg_buffercache');
  }
}

/**
 * Where every way of preparing a data set ends (a load, a publish, a restore and its checks), so that the measured
 * phases start from one state whichever it was: the writes made durable (CHECKPOINT), shared_buffers empty, and the
 * data set's relation files out of the host's page cache. Each path reads the data differently last (a publish's
 * checksums and base backup, a restore's checks), and what that left cached set how many of a short run's reads
 * reached the device: reference-scaled's gp3 (a 1,792 MiB host, 10.4 GB of data, a 35 s window) ran 1,786 TPS on a
 * loaded host as the publish left its cache and 1,574 on one started cold, at 1.55 and 1.80 device reads a
 * transaction (2026-12-05; a restored host's other difference, its WAL segments, is preallocateWal's).
 */
export async function startCold(deps: HostDeps, c: Client): Promise<{ filesDropped: number }> {
  await c.query('CHECKPOINT');
  await emptySharedBuffers(c);
  return dropFromPageCache(deps, c);
}

/** A relation's file as pg_relation_filepath names it in the default tablespace: base/<database>/<file node>. */
const RELATION_FILE = /^base\/\d+\/\d+$/;
const DROP_TIMEOUT_MS = 30_000;

/**
 * Drops the public schema's relation files (every segment and fork) from the page cache: dd's `iflag=nocache
 * count=0` asks the kernel (posix_fadvise DONTNEED) to drop the whole file's clean pages, and the CHECKPOINT before it
 * left none dirty. The paths come from the server and are checked to lie below the data folder.
 */
async function dropFromPageCache(deps: HostDeps, c: Client): Promise<{ filesDropped: number }> {
  const r = await c.query<{ path: string }>(
    `SELECT pg_relation_filepath(oid) AS path FROM pg_catalog.pg_class
      WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'i', 't', 'm') AND pg_relation_filepath(oid) IS NOT NULL`,
  );
  let filesDropped = 0;
  for (const { path: relation } of r.rows) {
    if (!RELATION_FILE.test(relation)) continue; // another tablespace: not the lab's folder
    const dir = path.join(deps.config.dataDir, path.dirname(relation));
    const node = path.basename(relation);
    for (const name of listLabDir(dir) ?? []) {
      // The main fork's segments (node, node.1, ...) and the other forks (node_fsm, node_vm, node_init).
      if (name !== node && !name.startsWith(`${node}.`) && !name.startsWith(`${node}_`)) continue;
      await runProcess('dd', [`if=${path.join(dir, name)}`, 'iflag=nocache', 'count=0', 'status=none'], { ...asPostgresUser(deps), timeoutMs: DROP_TIMEOUT_MS });
      filesDropped++;
    }
  }
  return { filesDropped };
}

/**
 * Primary keys, then VACUUM ANALYZE, each skipped when an earlier attempt finished it. Each runs on a connection of
 * its own while the monitor reports the server's own progress of it (pg_stat_progress_create_index, _vacuum).
 */
async function finishLoad(
  deps: HostDeps,
  c: Client,
  input: LoadInput,
  total: number,
  resumed: number,
  report: ReportProgress,
  rowsRate: number | undefined,
): Promise<LoadResult> {
  const loaded = await c.query<{ n: string }>('SELECT count(*) AS n FROM storage_lab.load_chunks WHERE chunk_id >= 0');
  if (Number(loaded.rows[0].n) !== total) throw new Error(`load incomplete: ${loaded.rows[0].n} of ${total} chunks recorded`);
  await c.query(
    `INSERT INTO storage_lab.load_meta VALUES ('loaded_at', (SELECT max(done_at) FROM storage_lab.load_chunks)::text)
     ON CONFLICT DO NOTHING`,
  );
  const heapBytes = await relationBytes(c);
  let meta = await readMeta(c);
  if (!meta.indexed_at) {
    const seconds = await timedStep(deps, c, 'primary keys', INDEX_PROGRESS_SQL, heapBytes, rowsRate, report, async (ddl) => {
      for (const [table, key] of [
        ['public.pgbench_branches', 'bid'],
        ['public.pgbench_tellers', 'tid'],
        ['public.pgbench_accounts', 'aid'],
      ]) {
        const has = await ddl.query(`SELECT 1 FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, [table]);
        if (has.rowCount === 0) await ddl.query(`ALTER TABLE ${table} ADD PRIMARY KEY (${key})`);
      }
    });
    await recordStep(c, 'index', seconds);
  }
  meta = await readMeta(c);
  if (!meta.vacuumed_at) {
    const seconds = await timedStep(deps, c, 'vacuum analyze', VACUUM_PROGRESS_SQL, heapBytes, rowsRate, report, (ddl) =>
      ddl.query(`VACUUM ${input.freeze ? '(FREEZE, ANALYZE)' : 'ANALYZE'} public.pgbench_branches, public.pgbench_tellers, public.pgbench_accounts, public.pgbench_history`).then(() => undefined),
    );
    await recordStep(c, 'vacuum', seconds);
    // The load ends written out: each chunk's COPY leaves its ring of buffers dirty in shared_buffers, and VACUUM
    // sets every page's visibility; left there, a checkpoint the load's WAL started (spread over most of
    // checkpoint_timeout) and the evictions of the warm-up and the TPS run would write them from the device's budget
    // during the measurement. The reference's data was loaded long before its runs. Once, with the step it follows.
    await startCold(deps, c);
  }
  return summarise(c, input, total, resumed, await readMeta(c));
}

/**
 * Where each step of the load starts and ends on its progress bar (0-1): the rows take most of it, the primary keys
 * and VACUUM ANALYZE the rest. One table, so the steps cannot overlap or overrun 100 %.
 */
export const LOAD_STEP_SPANS = {
  rows: [0, 0.8],
  'primary keys': [0.8, 0.9],
  'vacuum analyze': [0.9, 1],
} as const satisfies Record<string, readonly [number, number]>;
/**
 * Seconds of the primary key and VACUUM ANALYZE per second of the rows before them: the median of the 8 loads of
 * test/fixtures/results/predict-matrix-1.json (0.72; scale 250, uncapped, as loads run now). Checked on the 23 loads
 * of the other recorded runs, which it was not taken from (test/unit/load-progress.test.ts): every estimate within a
 * factor of 2 of what the steps took (0.51-1.19). The rule before it, 4.2 heap passes at the rows' write rate, gave
 * 3.0-7.0 times their seconds, and the demo's load an ETA of 492-541 s for a load of 204 s.
 */
export const AFTER_ROWS_PER_ROWS_SECOND = 0.72;

/** The seconds the steps after the rows will take, from the rows' measured rate (chunks a second); none without one. */
export function afterRowsSeconds(chunksPerSecond: number | undefined, chunks: number): number | undefined {
  return chunksPerSecond !== undefined && chunksPerSecond > 0 ? (AFTER_ROWS_PER_ROWS_SECOND * chunks) / chunksPerSecond : undefined;
}
const PAGE_BYTES = 8192;
/** Blocks done and to do of the lab's running step, from the server's own progress views. */
const INDEX_PROGRESS_SQL = `SELECT blocks_done AS done, blocks_total AS total FROM pg_stat_progress_create_index p
  JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'storage-lab load finish'`;
const VACUUM_PROGRESS_SQL = `SELECT heap_blks_scanned AS done, heap_blks_total AS total FROM pg_stat_progress_vacuum p
  JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'storage-lab load finish'`;

/**
 * Runs one step after the rows on its own connection and reports its progress from `progressSql` (blocks done of
 * blocks to do); the ETA covers the step and, for the primary keys, the VACUUM after it (from the heap's bytes at
 * the rate this step scans them, or the rows' rate before there is one), both by the ETA rule. Returns the step's
 * seconds.
 */
async function timedStep(
  deps: HostDeps,
  monitor: Client,
  step: 'primary keys' | 'vacuum analyze',
  progressSql: string,
  heapBytes: number,
  rowsRate: number | undefined,
  report: ReportProgress,
  run: (ddl: Client) => Promise<void>,
): Promise<number> {
  const [fromShare, toShare] = LOAD_STEP_SPANS[step];
  const ddl = await connectLocal(deps.config, { applicationName: 'storage-lab load finish' });
  // A step whose agent died must not keep its backend busy: the server checks the socket every second.
  await ddl.query(`SET client_connection_check_interval = '1s'`);
  const started = Date.now();
  const blocks = new StepProgress(step, 'blocks');
  const beat = every(HEARTBEAT_MS, () => {
    void monitor
      .query<{ done: string; total: string }>(progressSql)
      .then((r) => {
        const done = Number(r.rows[0]?.done ?? 0);
        const todo = Number(r.rows[0]?.total ?? 0);
        const elapsed = (Date.now() - started) / 1000;
        // Each table's scan is a measure of its own (the rule starts again when the total changes).
        const scan = todo > 0 ? blocks.read(done, todo) : undefined;
        const scanRate = scan?.rate !== undefined ? scan.rate * PAGE_BYTES : rowsRate;
        // After the primary keys comes VACUUM ANALYZE: about two heaps at the rate this step scans them.
        const after = step === 'primary keys' ? (scanRate ? (2 * heapBytes) / scanRate : undefined) : 0;
        const fraction = todo > 0 ? Math.min(1, done / todo) : 0;
        report({
          percent: Math.round(1000 * (fromShare + fraction * (toShare - fromShare))) / 10,
          etaSeconds: scan?.eta !== undefined && after !== undefined ? Math.round(scan.eta + after) : undefined,
          ...(scan ? { measure: scan.measure } : {}),
          detail: { step, scannedMB: Math.round((done * PAGE_BYTES) / 1e6), heapMB: Math.round(heapBytes / 1e6), elapsedSeconds: Math.round(elapsed) },
        });
      })
      .catch(() => report({ detail: { step } }));
  });
  try {
    await run(ddl);
    return (Date.now() - started) / 1000;
  } finally {
    beat();
    await ddl.end().catch(() => undefined);
  }
}

/**
 * Records a finished step and its seconds in one statement, so a retry after a kill finds both records or neither;
 * ON CONFLICT makes it safe to write twice (and repairs a half record an older version may have left).
 */
async function recordStep(c: Client, step: 'index' | 'vacuum', seconds: number): Promise<void> {
  const at = step === 'index' ? 'indexed_at' : 'vacuumed_at';
  await c.query(
    `INSERT INTO storage_lab.load_meta (key, value) VALUES ($1, $2), ($3, clock_timestamp()::text)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    [`${step}_seconds`, String(seconds), at],
  );
}

async function summarise(
  c: Client,
  input: LoadInput,
  total: number,
  resumed: number,
  meta: Record<string, string>,
): Promise<LoadResult> {
  const rows = accountRows(input.scale);
  const loadSeconds = (Date.parse(meta.loaded_at) - Date.parse(meta.started_at)) / 1000;
  return {
    rows,
    chunks: total,
    chunksResumed: resumed,
    loadSeconds,
    indexSeconds: Number(meta.index_seconds),
    vacuumSeconds: Number(meta.vacuum_seconds),
    heapBytes: await relationBytes(c),
    rowsPerSecond: loadSeconds > 0 ? Math.round(rows / loadSeconds) : 0,
  };
}

/** Exact row checks for tests and drills: count(*), count(distinct aid), and the aid range. */
export async function verifyAccounts(
  deps: HostDeps,
  input: HostInput,
): Promise<{ rows: number; distinctAids: number; minAid: number; maxAid: number }> {
  assertHost(deps, input);
  return withConnection(deps.config, async (c) => {
    const r = await c.query<{ n: string; d: string; lo: string; hi: string }>(
      'SELECT count(*) AS n, count(DISTINCT aid) AS d, min(aid) AS lo, max(aid) AS hi FROM public.pgbench_accounts',
    );
    const row = r.rows[0];
    return { rows: Number(row.n), distinctAids: Number(row.d), minAid: Number(row.lo), maxAid: Number(row.hi) };
  });
}
