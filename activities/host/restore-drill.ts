/**
 * The restore drill's work on its hosts: write history (pgbench next to a ledger of marker rows), mark a recovery
 * target between two markers with the chosen tables' checksums, wait until the archive covers it, snapshot the
 * archive lag at the failure point, and verify a restored server (ledger, checksums, pg_amcheck).
 */
import { Context } from '@temporalio/activity';
import type { Client } from 'pg';
import type { FailurePoint, RestoreTarget, RestoreVerification, TableChecksum } from '../../common/results/drill-result';
import { archiveCovers, archivedThroughLsn, lsnDiff, segmentArchived } from '../../common/core/lsn';
import { clientTool } from '../../lib/postgres-binaries';
import { libpqEnv, quoteIdent, withConnection } from '../../lib/pg';
import { ProcessError, runProcess } from '../../lib/process-runner';
import { heartbeatWhile, progressReporter } from '../progress';
import { parseAmcheck } from '../../lib/parsers/pg-amcheck';
import { parseSummary } from '../../lib/parsers/pgbench';
import { asClientUser, asPostgresUser, assertHost, type HostDeps, type HostInput } from './deps';
import { workloadEnv } from './pgbench';
import { serverLog, tail, withFileText } from './postgres';

const LEDGER = 'storage_lab.drill_ledger';

export interface WriteHistoryInput extends HostInput {
  /** What the writes are for, as progress shows it ("before target", "after target"). */
  label: string;
  seconds: number;
  /** pgbench clients next to the marker writer (0: markers only). */
  clients: number;
  markerIntervalMs: number;
  /** Snapshot the archive lag the moment the writes stop: the drill's failure point. */
  failurePoint?: boolean;
}

export interface HistoryWritten {
  firstId: number;
  lastId: number;
  markers: number;
  pgbenchTransactions: number;
  failurePoint: FailurePoint | null;
}

/**
 * Writes for `seconds`: pgbench (tpcb-like) on `clients` connections and, on its own connection, one ledger row
 * (id, committed_at, lsn) committed every markerIntervalMs. Ids continue after the ledger's last row.
 */
export async function writeHistory(deps: HostDeps, input: WriteHistoryInput): Promise<HistoryWritten> {
  assertHost(deps, input);
  const ctx = Context.current();
  const report = progressReporter(input.hostId, input.label);
  return withConnection(
    deps.config,
    async (c) => {
      await c.query('CREATE SCHEMA IF NOT EXISTS storage_lab');
      await c.query(`CREATE TABLE IF NOT EXISTS ${LEDGER} (id bigint PRIMARY KEY, committed_at timestamptz NOT NULL, lsn pg_lsn NOT NULL)`);
      const start = Number((await c.query<{ n: string }>(`SELECT coalesce(max(id), 0) AS n FROM ${LEDGER}`)).rows[0].n);
      const pgbench =
        input.clients > 0
          ? runProcess(
              clientTool(deps.config, 'pgbench'),
              ['--no-vacuum', '--builtin=tpcb-like', `--client=${input.clients}`, `--jobs=${Math.min(2, input.clients)}`, `--time=${Math.ceil(input.seconds)}`],
              // As the workload's role (tpcb-like reads and writes the pgbench tables only). cwd "/": pgbench writes
              // nothing here, and the client user may read no host folder it does not own.
              { ...asClientUser(deps), env: workloadEnv(deps, 'storage-lab drill pgbench'), cwd: '/', timeoutMs: (input.seconds + 120) * 1000, signal: ctx.cancellationSignal },
            )
          : null;
      let id = start;
      const began = Date.now();
      try {
        while (Date.now() - began < input.seconds * 1000) {
          id++;
          await c.query(`INSERT INTO ${LEDGER} (id, committed_at, lsn) VALUES ($1, clock_timestamp(), pg_current_wal_insert_lsn())`, [id]);
          const elapsed = (Date.now() - began) / 1000;
          report({ percent: Math.min(100, Math.round((100 * elapsed) / input.seconds)), detail: { markers: id - start, lastId: id } });
          await ctx.sleep(input.markerIntervalMs);
        }
      } catch (err) {
        await pgbench?.catch(() => undefined);
        throw err;
      }
      const bench = pgbench ? await pgbench : null;
      const snapshot = input.failurePoint ? await failurePoint(c) : null;
      return {
        firstId: start + 1,
        lastId: id,
        markers: id - start,
        pgbenchTransactions: bench ? parseSummary(bench.stdout).transactions : 0,
        failurePoint: snapshot,
      };
    },
    { applicationName: 'storage-lab drill writer' },
  );
}

/**
 * The archive at this moment: what was written but not archived, in bytes and as the age of the oldest
 * unarchived marker commit. A marker counts as archived only when the next marker's LSN (a bound on its commit
 * record's end) is archived: conservative, so "every archived marker must be restored" never over-promises.
 */
async function failurePoint(c: Client): Promise<FailurePoint> {
  const s = (
    await c.query<{ at: string; lsn: string; wal: string | null; archived_at: Date | null; failed: string; seg: string }>(
      `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at, pg_current_wal_lsn()::text AS lsn,
              a.last_archived_wal AS wal, a.last_archived_time AS archived_at, a.failed_count::text AS failed,
              (SELECT setting FROM pg_settings WHERE name = 'wal_segment_size') AS seg
         FROM pg_stat_archiver a`,
    )
  ).rows[0];
  const through = archivedThroughLsn(s.wal, Number(s.seg));
  const m = (
    await c.query<{ last_archived_id: string | null; oldest_unarchived: Date | null; last_id: string | null }>(
      `WITH m AS (SELECT id, committed_at, coalesce(lead(lsn) OVER (ORDER BY id), $2::pg_lsn) AS acked_lsn FROM ${LEDGER})
       SELECT max(id) FILTER (WHERE $1::pg_lsn IS NOT NULL AND acked_lsn <= $1::pg_lsn) AS last_archived_id,
              min(committed_at) FILTER (WHERE $1::pg_lsn IS NULL OR acked_lsn > $1::pg_lsn) AS oldest_unarchived,
              max(id) AS last_id
         FROM m`,
      [through, s.lsn],
    )
  ).rows[0];
  const lagBytes = through ? Math.max(0, lsnDiff(s.lsn, through)) : lsnDiff(s.lsn, '0/0');
  return {
    at: s.at,
    currentLsn: s.lsn,
    lastArchivedWal: s.wal,
    lastArchivedAt: s.archived_at ? s.archived_at.toISOString() : null,
    archivedThroughLsn: through,
    archiveLagBytes: lagBytes,
    archiveLagSeconds: m.oldest_unarchived ? Math.max(0, (Date.parse(s.at) - m.oldest_unarchived.getTime()) / 1000) : 0,
    lastMarkerId: Number(m.last_id ?? 0),
    lastArchivedMarkerId: Number(m.last_archived_id ?? 0),
    archiveFailures: Number(s.failed),
  };
}

/** Order-independent checksums of tables: row count and the sum of the first 64 bits of each row's md5. */
export async function tableChecksums(c: Client, tables: string[]): Promise<Record<string, TableChecksum>> {
  const out: Record<string, TableChecksum> = {};
  for (const table of tables) {
    const r = await c.query<{ rows: string; sum: string }>(
      `SELECT count(*) AS rows, coalesce(sum(('x' || substr(md5(t::text), 1, 16))::bit(64)::bigint::numeric), 0)::text AS sum
         FROM public.${quoteIdent(table)} t`,
    );
    out[table] = { rows: Number(r.rows[0].rows), sum: r.rows[0].sum };
  }
  return out;
}

/**
 * The recovery target, with no writes running: checksums of the tables, then the server's clock and WAL position
 * between the last marker written and the next (a few ms either side, so no commit shares its timestamp).
 */
export async function markTarget(
  deps: HostDeps,
  input: HostInput & { type: RestoreTarget['type']; tables: string[] },
): Promise<{ target: RestoreTarget; walLsn: string }> {
  assertHost(deps, input);
  const ctx = Context.current();
  return withConnection(deps.config, async (c) => {
    const checksums = await heartbeatWhile('checksums at the target', () => tableChecksums(c, input.tables));
    await ctx.sleep(10);
    const t = (
      await c.query<{ time: string; lsn: string; last: string | null }>(
        `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS time,
                pg_current_wal_lsn()::text AS lsn, (SELECT max(id) FROM ${LEDGER})::text AS last`,
      )
    ).rows[0];
    await ctx.sleep(10);
    return {
      target: {
        type: input.type,
        time: input.type === 'time' ? t.time : null,
        lsn: input.type === 'lsn' ? t.lsn : null,
        lastIdBefore: Number(t.last ?? 0),
        checksums: input.type === 'latest' ? null : checksums,
      },
      // Where the target is in the WAL, whatever its type: the archive must cover it before the source dies.
      walLsn: t.lsn,
    };
  });
}

/** Waits until the archive holds every WAL byte before `lsn` (archive_timeout closes the segment), at most timeoutSeconds. */
export async function waitForArchive(deps: HostDeps, input: HostInput & { lsn: string; timeoutSeconds: number }): Promise<{ seconds: number }> {
  assertHost(deps, input);
  const ctx = Context.current();
  const started = Date.now();
  return withConnection(deps.config, async (c) => {
    for (;;) {
      const s = (
        await c.query<{ wal: string | null; failed: string; last_failed: string | null; seg: string }>(
          `SELECT last_archived_wal AS wal, failed_count::text AS failed, last_failed_wal AS last_failed,
                  (SELECT setting FROM pg_settings WHERE name = 'wal_segment_size') AS seg FROM pg_stat_archiver`,
        )
      ).rows[0];
      if (archiveCovers(s.wal, input.lsn, Number(s.seg))) return { seconds: (Date.now() - started) / 1000 };
      if (Date.now() - started > input.timeoutSeconds * 1000)
        throw new Error(
          `the archive did not reach ${input.lsn} within ${input.timeoutSeconds} s (last archived: ${s.wal ?? 'none'}; failed attempts: ${s.failed}${s.last_failed ? `, last failed: ${s.last_failed}` : ''})`,
        );
      ctx.heartbeat({ step: 'waiting for the archive', lastArchived: s.wal });
      await ctx.sleep(200);
    }
  });
}

/**
 * Closes the primary's current WAL segment and waits, at most timeoutSeconds, until the server has archived it (the
 * failover drill: each new primary's first segment on its new timeline, and the last one before the archive check).
 * Judged by the segment's own archive status, not by pg_stat_archiver: at a promotion the server archives the old
 * timeline's .partial and the history file too, and a server that archives what it received as a standby
 * (archive_mode = always) archives older segments after newer ones, so last_archived_wal need not name the newest.
 */
export async function archiveCurrentSegment(deps: HostDeps, input: HostInput & { timeoutSeconds: number }): Promise<{ segment: string; seconds: number }> {
  assertHost(deps, input);
  const ctx = Context.current();
  return withConnection(deps.config, async (c) => {
    // A restore point writes WAL, so the switch always closes a segment.
    await c.query("SELECT pg_create_restore_point('storage-lab archive check')");
    const segment = (await c.query<{ segment: string }>('SELECT pg_walfile_name(s - 1) AS segment FROM pg_switch_wal() s')).rows[0].segment;
    const started = Date.now();
    for (;;) {
      const s = (
        await c.query<{ statuses: string[]; failed: string; last_failed: string | null }>(
          `SELECT array(SELECT name FROM pg_ls_archive_statusdir() WHERE name LIKE $1 || '.%') AS statuses,
                  failed_count::text AS failed, last_failed_wal AS last_failed FROM pg_stat_archiver`,
          [segment],
        )
      ).rows[0];
      if (segmentArchived(segment, s.statuses)) return { segment, seconds: (Date.now() - started) / 1000 };
      if (Date.now() - started > input.timeoutSeconds * 1000)
        throw withFileText(
          new Error(`${segment} was not archived within ${input.timeoutSeconds} s (archive status: ${s.statuses.join(', ') || 'none'}; failed attempts: ${s.failed}${s.last_failed ? `, last failed: ${s.last_failed}` : ''});`),
          archiveError(deps) ?? "the archive_command's errors are in the server's log",
        );
      ctx.heartbeat({ step: 'waiting for the archive', segment });
      await ctx.sleep(200);
    }
  });
}

/** The archive command's last error in the server's log (its stderr lands there), with the failure line; null when none. */
function archiveError(deps: HostDeps): string | null {
  const lines = tail(serverLog(deps), 400).split('\n');
  const failed = lines.map((l, i) => (/archive command failed/.test(l) ? i : -1)).filter((i) => i >= 0).pop();
  if (failed === undefined) return null;
  return lines.slice(Math.max(0, failed - 2), failed + 1).filter((l) => !/^\s*$/.test(l)).join(' / ');
}

export interface VerifyRestoreInput extends HostInput {
  /** Every marker up to this id must be present... */
  expectedThroughId: number;
  /** ...and none after it, unless the target is the end of the archive ("latest"). */
  exact: boolean;
  tables: string[];
  expectedChecksums: Record<string, TableChecksum> | null;
}

/** Checks a restored, promoted server: the ledger, the tables' checksums and pg_amcheck. */
export async function verifyRestore(
  deps: HostDeps,
  input: VerifyRestoreInput,
): Promise<Pick<RestoreVerification, 'ledger' | 'checksums' | 'amcheck'> & { maxPresentCommittedAt: string | null }> {
  assertHost(deps, input);
  const { ledger, checksums, maxPresentCommittedAt } = await heartbeatWhile('verify the restored server', () =>
    withConnection(deps.config, (c) => ledgerAndChecksums(c, input)),
  );
  return { ledger, checksums, amcheck: await heartbeatWhile('pg_amcheck', () => amcheck(deps)), maxPresentCommittedAt };
}

/** The ledger (every marker up to the target, none after) and the tables' checksums, on the restored server. */
async function ledgerAndChecksums(
  c: Client,
  input: VerifyRestoreInput,
): Promise<Pick<RestoreVerification, 'ledger' | 'checksums'> & { maxPresentCommittedAt: string | null }> {
  const ids = (await c.query<{ id: string }>(`SELECT id FROM ${LEDGER} ORDER BY id`)).rows.map((r) => Number(r.id));
  const maxPresentId = ids.length ? ids[ids.length - 1] : 0;
  const present = new Set(ids);
  // Contiguous from 1: a hole means a commit was lost in the middle.
  const through = input.exact ? input.expectedThroughId : Math.max(input.expectedThroughId, maxPresentId);
  const missingIds: number[] = [];
  for (let i = 1; i <= through; i++) if (!present.has(i)) missingIds.push(i);
  const idsAfterTarget = input.exact ? ids.filter((i) => i > input.expectedThroughId).length : 0;
  const ledgerOk = missingIds.length === 0 && idsAfterTarget === 0 && maxPresentId >= input.expectedThroughId;
  const last = await c.query<{ at: Date | null }>(`SELECT max(committed_at) AS at FROM ${LEDGER}`);
  const restored = await tableChecksums(c, input.tables);
  const tables = Object.fromEntries(
    input.tables.map((t) => [t, { expected: input.expectedChecksums?.[t] ?? null, restored: restored[t] }]),
  );
  const differing = input.expectedChecksums
    ? input.tables.filter((t) => tables[t].expected?.sum !== restored[t].sum || tables[t].expected?.rows !== restored[t].rows)
    : [];
  return {
    maxPresentCommittedAt: last.rows[0].at ? last.rows[0].at.toISOString() : null,
    ledger: {
      ok: ledgerOk,
      detail: ledgerOk
        ? `${ids.length} marker rows, 1..${maxPresentId}${input.exact ? `, exactly up to the target` : ''}`
        : [
            missingIds.length ? `${missingIds.length} missing (first ${missingIds.slice(0, 5).join(', ')})` : '',
            idsAfterTarget ? `${idsAfterTarget} rows after the target (id > ${input.expectedThroughId})` : '',
            maxPresentId < input.expectedThroughId ? `newest row ${maxPresentId}, expected at least ${input.expectedThroughId}` : '',
          ]
            .filter(Boolean)
            .join('; '),
      expectedThroughId: input.expectedThroughId,
      presentRows: ids.length,
      maxPresentId,
      missingIds: missingIds.slice(0, 20),
      idsAfterTarget,
    },
    checksums: {
      ok: differing.length === 0,
      detail: !input.expectedChecksums
        ? 'not compared: writes ran up to the failure point, so no state was recorded at the target'
        : differing.length
          ? `differ from the target's: ${differing.join(', ')}`
          : `equal to the target's for ${input.tables.join(', ')}`,
      tables,
    },
  };
}

/** pg_amcheck over every table and B-tree index of the lab database, heap-all-indexed (installs the extension). */
export async function amcheck(deps: HostDeps, opts: { jobs?: number; heapallindexed?: boolean } = {}): Promise<RestoreVerification['amcheck']> {
  const ctx = Context.current();
  // --jobs: relations checked on that many connections at once (a table's heap and its index side by side); the
  // same checks, in less time where cores are free. heapallindexed (the default) also looks up every heap tuple in
  // its indexes, about four times the plain check's time (docs/data-sets.md); a data set's restore checks its keys
  // another way (activities/host/data-set.ts indexKeys).
  const heapallindexed = opts.heapallindexed ?? true;
  const args = ['--install-missing', ...(heapallindexed ? ['--heapallindexed'] : []), '--no-strict-names', ...(opts.jobs && opts.jobs > 1 ? ['--jobs', String(opts.jobs)] : [])];
  try {
    // The lab's check, as the lab's role (it installs amcheck): the Postgres user, whom the peer map lets be that role.
    await runProcess(clientTool(deps.config, 'pg_amcheck'), args, {
      ...asPostgresUser(deps),
      env: libpqEnv(deps.config),
      cwd: deps.config.hostDir,
      timeoutMs: 3600_000,
      signal: ctx.cancellationSignal,
    });
    return { ok: true, detail: `no corruption found (heap tables and B-tree indexes${heapallindexed ? ', heapallindexed' : ''})`, problems: 0 };
  } catch (err) {
    // Exit code 2: corruption found, described on stdout.
    if (!(err instanceof ProcessError) || err.exitCode !== 2) throw err;
    const report = parseAmcheck(err.stdout);
    return {
      ok: false,
      detail: `${report.problems} problems in ${report.relations.join(', ')}: ${report.sample.join(' | ')}`,
      problems: report.problems,
    };
  }
}
