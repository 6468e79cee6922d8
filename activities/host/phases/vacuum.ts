/**
 * The VACUUM phase, host half (its workflow-safe half is common/phases/vacuum.ts): with autovacuum off on
 * pgbench_accounts, batched UPDATEs leave the requested bytes of dead tuples (measured with pgstattuple_approx,
 * cross-checked with the heap's growth), then VACUUM (VERBOSE) on the table is timed and its report parsed (tested on
 * output captured from real servers, test/fixtures/postgres-15), with the device's IOPS and the host's CPU during it.
 * Retry-safe: an attempt first vacuums away whatever an earlier one left, and the table's own autovacuum setting
 * is kept in the database, so a retry restores the original and not the phase's override.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from 'pg';
import type { VacuumPhaseInput, VacuumPhaseResult, VacuumVerboseReport } from '../../../common/phases/vacuum';
import { FAILURE_TYPES } from '../../../common/core/errors';
import { connectLocal } from '../../../lib/pg';
import { every, progressReporter, StepProgress, type ReportProgress } from '../../progress';
import { assertHost, type HostDeps } from '../deps';
import { stopLeftovers } from '../leftovers';
import { HostCounters } from '../../../lib/sampler';

const TABLE_NAME = 'pgbench_accounts';
/** The table, schema-qualified: the lab's sessions search pg_catalog only. */
const TABLE = `public.${TABLE_NAME}`;
const MB = 2 ** 20;
/** Rows per UPDATE: a few MB of dead tuples, a second or so even on a throttled volume. */
const BATCH_ROWS = 50_000;
/**
 * Writers making the dead tuples at once, over adjacent aid ranges. The preparation is uncapped and one backend was
 * its bottleneck: at local-quick's 256 MB on nvme hosts, two took 25.5 and 28.0 s where one took 33.9 and 34.4 s
 * (2026-12-04, 2 cores); the timed VACUUM after them was unchanged (10.6-11.3 s against 11.4-11.9 s).
 */
const BLOAT_WRITERS = 2;
/** Stop topping up once the measured dead bytes are this close below the target. */
const CLOSE_ENOUGH = 0.98;
const MAX_ROUNDS = 6;
const PROGRESS_MS = 2_000;
const STATE_KEY = 'autovacuum_enabled_before_vacuum_phase';
const FILLFACTOR_KEY = 'fillfactor_before_vacuum_phase';
/**
 * The table's fill factor while the dead tuples are made. The clearing VACUUM leaves a little free space on every page
 * the TPS run updated (most of local-quick's table), and at fill factor 100 the bloat's new row versions went there,
 * so the timed VACUUM read the whole heap: 421,000 pages for 80 MB of dead tuples. At 90 a page takes a new version
 * only with 10 % of it free, so they go to new pages at the end, as on a table nobody updated, and the timed VACUUM
 * reads the bloat's pages, the new ones and the key, as the reference's must have (its 964 s at 125 MiB/s could not
 * read its heap). Measured on local-quick (2026-12-06): 30,674 pages scanned, gp3's VACUUM 11.3 s where it took
 * 55.9-58.5 s, the table 97 MB larger where 80 MB were asked for (fill factor 10 had made it 890 MB larger).
 */
const BLOAT_FILLFACTOR = 90;
/** Postgres' default block size, for turning pg_stat_progress_vacuum's blocks into MB. */
const BLOCK_BYTES = 8192;

interface TupleStats {
  tableBytes: number;
  /** table_len - approx_free_space: what live and dead tuples (and page overhead) take up. */
  usedBytes: number;
  liveTuples: number;
  liveBytes: number;
  deadTuples: number;
  deadBytes: number;
}

export async function runVacuumPhase(deps: HostDeps, input: VacuumPhaseInput): Promise<VacuumPhaseResult> {
  assertHost(deps, input);
  if (!(input.bloatMB > 0))
    throw ApplicationFailure.nonRetryable('phases.vacuum.bloatMB must be positive', FAILURE_TYPES.invalidSpec);
  const report = progressReporter(input.hostId, 'vacuum');
  const requested = Math.round(input.bloatMB * MB);
  // An earlier attempt whose agent died may have left its VACUUM or bloat writer running: stop them first.
  const cleanup = await stopLeftovers(deps);
  const db = await connectLocal(deps.config, { applicationName: 'storage-lab vacuum phase' });
  let original: string | null = null;
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA public');
    original = await switchAutovacuumOff(db);

    // Preparation, untimed and unmeasured, runs with the host's emulated I/O cap lifted (lib/io-cap.ts); the cap is
    // back before the timed VACUUM, also when the preparation fails. No CHECKPOINT after it: a capped preparation also
    // left the bloat's dirty pages in shared_buffers (the cap slows their eviction, it does not clean the pool), and
    // a checkpoint right before VACUUM would make its first change to every page log a full-page image, WAL the
    // figure measured before never held. So the timed VACUUM starts from the state a capped preparation left.
    const {
      value: { preVacuumSeconds, before, rowsUpdated, after, bloatSeconds },
      preparedWithoutCap,
    } = await deps.ioCap.prepare(async () => {
      // Dead tuples of the TPS run (and of an earlier attempt) go first, so the timed VACUUM sees only ours.
      const clearing = stepReporter(report, 0, 20);
      clearing({ percent: 0, detail: { step: 'clearing earlier dead tuples' } });
      const preVacuumSeconds = await vacuum(deps, db, `VACUUM ${TABLE}`, clearing, 'clearing earlier dead tuples').then((r) => r.seconds);
      const before = await tupleStats(db, clearing);
      if (before.liveTuples === 0) throw new Error(`${TABLE} is empty: load the data before the vacuum phase`);
      const bloatStarted = Date.now();
      await lowerFillfactor(db);
      const bloat = await makeBloat(deps, db, requested, before, stepReporter(report, 20, 70)).finally(() => restoreFillfactor(db));
      return { preVacuumSeconds, before, ...bloat, bloatSeconds: (Date.now() - bloatStarted) / 1000 };
    });

    const counters = new HostCounters(deps.config);
    const window = counters.window();
    const timed = await vacuum(deps, db, `VACUUM (VERBOSE) ${TABLE}`, stepReporter(report, 70, 100), 'VACUUM (VERBOSE)');
    const host = window.end();
    const verbose = parseVacuumVerbose(timed.messages).find((r) => r.relation.endsWith(TABLE));
    if (!verbose) throw new Error(`VACUUM (VERBOSE) reported nothing on ${TABLE}:\n${timed.messages}`);
    const deadBytes = after.deadBytes - before.deadBytes;
    report({ percent: 100, detail: { step: 'done', vacuumSeconds: Math.round(timed.seconds * 10) / 10 } });
    return {
      table: TABLE_NAME,
      ...(cleanup ? { cleanup } : {}),
      requestedBytes: requested,
      deadBytes,
      deadTuples: after.deadTuples - before.deadTuples,
      deadBytesDeviation: deadBytes / requested - 1,
      usedBytesGrowth: after.usedBytes - before.usedBytes,
      relationBytesBefore: before.tableBytes,
      relationBytesAfter: after.tableBytes,
      rowsUpdated,
      preparedWithoutCap,
      bloatSeconds,
      preVacuumSeconds,
      vacuumSeconds: timed.seconds,
      verbose,
      device: host.device,
      cpu: host.cpu,
      autovacuumSetting: original,
    };
  } finally {
    await restoreAutovacuum(db).catch(() => undefined);
    await restoreFillfactor(db).catch(() => undefined);
    await db.end().catch(() => undefined);
  }
}

/** A reporter for one step of the phase: the step's 0-100 % maps onto [from, to] of the phase's; a heartbeat without
 * a percentage keeps the last one. */
function stepReporter(report: ReportProgress, from: number, to: number): ReportProgress {
  let last = from;
  return (update) => {
    if (update.percent !== undefined) last = from + (update.percent * (to - from)) / 100;
    report({ ...update, percent: Math.round(last) });
  };
}

/** Turns autovacuum off on the table; returns the table's own setting from before the first attempt (null: unset). */
async function switchAutovacuumOff(db: Client): Promise<string | null> {
  await db.query('CREATE SCHEMA IF NOT EXISTS storage_lab');
  await db.query('CREATE TABLE IF NOT EXISTS storage_lab.phase_state (key text PRIMARY KEY, value text)');
  const own = await keepOwnSetting(db, STATE_KEY, 'autovacuum_enabled');
  await db.query(`ALTER TABLE ${TABLE} SET (autovacuum_enabled = off)`);
  return own;
}

/** Puts the table's autovacuum setting back as it was before the phase. */
async function restoreAutovacuum(db: Client): Promise<void> {
  await restoreOwnSetting(db, STATE_KEY, 'autovacuum_enabled', (value) => (/^(on|off|true|false)$/i.test(value) ? value : 'on'));
}

/**
 * Sets the table's fill factor for the bloat (BLOAT_FILLFACTOR, or its own if lower), keeping its own setting from
 * before the first attempt: a retry after a killed agent finds the phase's value on the table, and the kept one.
 */
async function lowerFillfactor(db: Client): Promise<void> {
  const own = await keepOwnSetting(db, FILLFACTOR_KEY, 'fillfactor');
  await db.query(`ALTER TABLE ${TABLE} SET (fillfactor = ${Math.min(BLOAT_FILLFACTOR, fillfactorOf(own))})`);
}

/** A stored fill factor as PostgreSQL takes it (10-100), or 100 (its default) for none or anything else. */
function fillfactorOf(value: string | null): number {
  const n = value !== null && /^\d+$/.test(value) ? Number(value) : 100;
  return n >= 10 && n <= 100 ? n : 100;
}

/** Puts the table's fill factor back as it was before the phase. */
async function restoreFillfactor(db: Client): Promise<void> {
  await restoreOwnSetting(db, FILLFACTOR_KEY, 'fillfactor', (value) => String(fillfactorOf(value)));
}

/**
 * Records the table's own value of a storage option under `key`, once: a later attempt keeps the first attempt's
 * record, not the value the phase set. Returns the recorded value (null: the option was unset).
 */
async function keepOwnSetting(db: Client, key: string, option: 'autovacuum_enabled' | 'fillfactor'): Promise<string | null> {
  await db.query(
    `INSERT INTO storage_lab.phase_state (key, value)
       SELECT $1, (SELECT option_value FROM pg_options_to_table((SELECT reloptions FROM pg_class WHERE oid = $2::regclass))
                   WHERE option_name = $3)
     ON CONFLICT (key) DO NOTHING`,
    [key, TABLE, option],
  );
  return (await db.query<{ value: string | null }>('SELECT value FROM storage_lab.phase_state WHERE key = $1', [key])).rows[0].value;
}

/** Puts a storage option recorded by keepOwnSetting back on the table (RESET when it was unset) and drops the record. */
async function restoreOwnSetting(db: Client, key: string, option: 'autovacuum_enabled' | 'fillfactor', valueSql: (value: string) => string): Promise<void> {
  const r = await db.query<{ value: string | null }>('SELECT value FROM storage_lab.phase_state WHERE key = $1', [key]);
  if (r.rowCount === 0) return;
  const value = r.rows[0].value;
  if (value === null) await db.query(`ALTER TABLE ${TABLE} RESET (${option})`);
  else await db.query(`ALTER TABLE ${TABLE} SET (${option} = ${valueSql(value)})`);
  await db.query('DELETE FROM storage_lab.phase_state WHERE key = $1', [key]);
}

/** pgstattuple_approx reads every page not all-visible (the bloat itself): minutes at 10 GB, so it heartbeats. */
async function tupleStats(db: Client, report: ReportProgress): Promise<TupleStats> {
  const stop = every(PROGRESS_MS, () => report({ detail: { step: 'measuring dead tuples (pgstattuple_approx)' } }));
  type Row = Record<'table_len' | 'approx_free_space' | 'approx_tuple_count' | 'approx_tuple_len' | 'dead_tuple_count' | 'dead_tuple_len', string>;
  const r = await db
    .query<Row>(
      'SELECT table_len, approx_free_space, approx_tuple_count, approx_tuple_len, dead_tuple_count, dead_tuple_len FROM public.pgstattuple_approx($1::regclass)',
      [TABLE],
    )
    .finally(stop);
  const row = r.rows[0];
  return {
    tableBytes: Number(row.table_len),
    usedBytes: Number(row.table_len) - Number(row.approx_free_space),
    liveTuples: Number(row.approx_tuple_count),
    liveBytes: Number(row.approx_tuple_len),
    deadTuples: Number(row.dead_tuple_count),
    deadBytes: Number(row.dead_tuple_len),
  };
}

/**
 * Updates rows in aid order, batch by batch, until pgstattuple_approx counts the requested dead bytes. A snapshot
 * held open meanwhile keeps page pruning from reclaiming the dead versions before VACUUM gets to them.
 */
async function makeBloat(
  deps: HostDeps,
  db: Client,
  requested: number,
  before: TupleStats,
  report: ReportProgress,
): Promise<{ rowsUpdated: number; after: TupleStats }> {
  const ctx = Context.current();
  const tupleBytes = before.liveBytes / before.liveTuples;
  const maxAid = Number((await db.query<{ m: string }>(`SELECT max(aid) AS m FROM ${TABLE}`)).rows[0].m);
  const holder = await connectLocal(deps.config, { applicationName: 'storage-lab vacuum snapshot' });
  const writers: Client[] = [];
  try {
    for (let i = 0; i < BLOAT_WRITERS; i++) writers.push(await connectLocal(deps.config, { applicationName: 'storage-lab vacuum bloat' }));
    for (const writer of writers) {
      await writer.query(`SET client_connection_check_interval = '1s'`);
      // Index scans over small aid ranges; a sequential scan would read the whole table for every batch.
      await writer.query('SET enable_seqscan = off');
    }
    await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await holder.query('SELECT 1'); // Takes the snapshot.
    const progress = new StepProgress('making dead tuples', 'bytes');
    let rowsUpdated = 0;
    let rowsMeasured = 0;
    let nextAid = 1;
    let after = before;
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const missing = requested - (after.deadBytes - before.deadBytes);
      if (missing < requested * (1 - CLOSE_ENOUGH)) break;
      let rows = Math.ceil(missing / tupleBytes);
      while (rows > 0) {
        if (ctx.cancellationSignal.aborted) throw new Error('vacuum phase cancelled');
        // The next batches in aid order, one per writer, each its own statement: disjoint ranges unless the table is
        // smaller than they are (then a later one waits for an earlier one's row locks, and still leaves dead tuples).
        const batches: [number, number][] = [];
        while (batches.length < writers.length && rows > 0) {
          const n = Math.min(BATCH_ROWS, rows, maxAid - nextAid + 1);
          batches.push([nextAid, nextAid + n - 1]);
          rows -= n;
          nextAid = nextAid + n > maxAid ? 1 : nextAid + n;
        }
        const results = await Promise.all(
          batches.map(([from, to], i) => writers[i].query(`UPDATE ${TABLE} SET abalance = abalance WHERE aid BETWEEN $1 AND $2`, [from, to])),
        );
        for (const r of results) rowsUpdated += r.rowCount ?? 0;
        const done = after.deadBytes - before.deadBytes + (rowsUpdated - rowsMeasured) * tupleBytes;
        const { eta, measure } = progress.read(Math.round(done), requested);
        report({
          percent: Math.min(99, Math.round((100 * done) / requested)),
          measure,
          // The step's ETA only: the VACUUM after it has no estimate until it scans, so the phase has none.
          detail: { step: 'making dead tuples', deadMB: Math.round(done / MB), requestedMB: Math.round(requested / MB), rows: rowsUpdated, ...(eta !== undefined ? { stepEtaSeconds: eta } : {}) },
        });
      }
      after = await tupleStats(db, report);
      rowsMeasured = rowsUpdated;
    }
    return { rowsUpdated, after };
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end().catch(() => undefined);
    for (const writer of writers) await writer.end().catch(() => undefined);
  }
}

/**
 * Runs a VACUUM on its own connection, collecting its INFO messages as psql prints them, reporting
 * pg_stat_progress_vacuum while it runs, and cancelling the backend when the activity is cancelled.
 */
async function vacuum(
  deps: HostDeps,
  monitor: Client,
  sql: string,
  report: ReportProgress,
  step: string,
): Promise<{ seconds: number; messages: string }> {
  const ctx = Context.current();
  const conn = await connectLocal(deps.config, { applicationName: 'storage-lab vacuum' });
  // A VACUUM whose agent died must not run on: the server checks its client's socket every second.
  await conn.query(`SET client_connection_check_interval = '1s'`);
  const messages: string[] = [];
  conn.on('notice', (n) => messages.push(`${n.severity ?? 'INFO'}:  ${n.message}`));
  const pid = (await conn.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const cancel = () => void monitor.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
  ctx.cancellationSignal.addEventListener('abort', cancel);
  const started = Date.now();
  const scanProgress = new StepProgress(`${step}: heap blocks scanned`, 'blocks');
  const stopProgress = every(PROGRESS_MS, () => {
    void monitor
      .query<{ phase: string; scanned: string; total: string; passes: string }>(
        `SELECT phase, heap_blks_scanned AS scanned, heap_blks_total AS total, index_vacuum_count AS passes
           FROM pg_stat_progress_vacuum WHERE pid = $1`,
        [pid],
      )
      .then((r) => {
        const p = r.rows[0];
        const scanned = Number(p?.scanned ?? 0);
        const total = Number(p?.total ?? 0);
        const elapsed = (Date.now() - started) / 1000;
        const phase = p?.phase ?? 'starting';
        // Pages scanned of pages to scan give the heap scan's ETA; the index and heap passes after it have none. The
        // scan is read in every phase, so a pause for an index pass counts against the rate it resumes with.
        const scan = total > 0 ? scanProgress.read(scanned, total) : undefined;
        const scanEta = phase === 'scanning heap' ? scan?.eta : undefined;
        report({
          percent: total > 0 ? Math.min(99, Math.round((100 * scanned) / total)) : undefined,
          ...(scan ? { measure: scan.measure } : {}),
          detail: { step, phase, scannedMB: Math.round((scanned * BLOCK_BYTES) / MB), elapsedSeconds: Math.round(elapsed), ...(scanEta !== undefined ? { scanEtaSeconds: scanEta } : {}) },
        });
      })
      .catch(() => report({ detail: { step } }));
  });
  try {
    await conn.query(sql);
    return { seconds: (Date.now() - started) / 1000, messages: messages.join('\n') };
  } finally {
    stopProgress();
    ctx.cancellationSignal.removeEventListener('abort', cancel);
    await conn.end().catch(() => undefined);
  }
}

/**
 * VACUUM (VERBOSE) output → typed results. The input is the INFO messages as psql prints them ("INFO:  ..." lines);
 * the phase joins the notices it receives over its connection into the same text.
 */
const FINISHED_RE = /^(?:INFO:\s+)?finished vacuuming "(?<rel>[^"]+)": index scans: (?<scans>\d+)\s*$/;

/** Parses every relation VACUUM (VERBOSE) reported on; throws when a relation's report lacks a line it always has. */
export function parseVacuumVerbose(text: string): VacuumVerboseReport[] {
  const lines = text.split(/\r?\n/);
  const starts = lines.flatMap((line, i) => (FINISHED_RE.test(line) ? [i] : []));
  return starts.map((start, n) => parseSection(lines.slice(start, starts[n + 1] ?? lines.length)));
}

function parseSection(lines: string[]): VacuumVerboseReport {
  const head = FINISHED_RE.exec(lines[0])!.groups!;
  const body = lines.slice(1).join('\n');
  const required = (re: RegExp, what: string): RegExpExecArray => {
    const m = re.exec(body);
    if (!m) throw new Error(`VACUUM VERBOSE report of ${head.rel} has no "${what}" line`);
    return m;
  };
  const num = (s: string) => Number(s);
  const pages = required(/^pages: (\d+) removed, (\d+) remain, (\d+) scanned/m, 'pages');
  const tuples = required(/^tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable/m, 'tuples');
  const rates = required(/^avg read rate: ([\d.]+) MB\/s, avg write rate: ([\d.]+) MB\/s/m, 'avg read rate');
  const buffers = required(/^buffer usage: (\d+) hits, (\d+) (?:misses|reads), (\d+) dirtied/m, 'buffer usage');
  const wal = required(/^WAL usage: (\d+) records, (\d+) full page images, (\d+) bytes/m, 'WAL usage');
  const cpu = required(/^system usage: CPU: user: ([\d.]+) s, system: ([\d.]+) s, elapsed: ([\d.]+) s/m, 'system usage');
  // A non-aggressive VACUUM that cannot get a page's cleanup lock leaves its dead tuples (PostgreSQL 15+).
  const missed = /^tuples missed: (\d+) dead from (\d+) pages not removed due to cleanup lock contention/m.exec(body);
  const deadItems = /^index scan (?:not )?needed: (\d+) pages from table \([\d.]+% of total\) had (\d+) dead item identifiers removed/m.exec(body);
  const io = /^I\/O timings: read: ([\d.]+) ms, write: ([\d.]+) ms/m.exec(body);
  const indexes = [...body.matchAll(/^index "([^"]+)": pages: (\d+) in total, (\d+) newly deleted, (\d+) currently deleted, (\d+) reusable/gm)].map(
    (m) => ({ name: m[1], pages: num(m[2]), newlyDeleted: num(m[3]), currentlyDeleted: num(m[4]), reusable: num(m[5]) }),
  );
  return {
    relation: head.rel,
    indexScans: num(head.scans),
    pages: { removed: num(pages[1]), remain: num(pages[2]), scanned: num(pages[3]) },
    tuples: { removed: num(tuples[1]), remain: num(tuples[2]), deadNotYetRemovable: num(tuples[3]) },
    missedDead: missed ? { tuples: num(missed[1]), pages: num(missed[2]) } : { tuples: 0, pages: 0 },
    deadItems: deadItems ? { pages: num(deadItems[1]), identifiersRemoved: num(deadItems[2]) } : null,
    indexes,
    ioTimingsMs: io ? { read: num(io[1]), write: num(io[2]) } : null,
    avgReadMBps: num(rates[1]),
    avgWriteMBps: num(rates[2]),
    buffers: { hits: num(buffers[1]), misses: num(buffers[2]), dirtied: num(buffers[3]) },
    wal: { records: num(wal[1]), fullPageImages: num(wal[2]), bytes: num(wal[3]) },
    cpu: { userSeconds: num(cpu[1]), systemSeconds: num(cpu[2]), elapsedSeconds: num(cpu[3]) },
  };
}
