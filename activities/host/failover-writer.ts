/**
 * The drills' writer (failover, partition): it runs on a client host of its own (never the primary), commits ledger
 * rows on whichever node it takes for the primary, and records every acknowledged commit in a ledger file on its
 * host: the id, the node that acknowledged it, the commit's LSN and the time of the acknowledgement. A commit counts
 * only once the server acknowledged it; an id whose connection died after it was sent is "in doubt" (it may or may not
 * have committed). Afterwards every acknowledged id is looked up on the new primary: under ANY 1 none may be missing;
 * and (partition) the ones a replaced primary acknowledged after the cut are counted on their own.
 * How it finds the primary (`routing`): `on-error` looks for the first node that takes writes when a write fails (the
 * failover drill: the old primary is dead); `timeline` watches every node and follows the writable one on the highest
 * timeline, dropping its connections to any other at once (the partition drill: the old primary lives on and may
 * still take writes, so a client has to be moved off it, as a proxy following the HA manager's leader would).
 */
import { Context } from '@temporalio/activity';
import { closeSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import type { FencedPrimary, WriterOutcome } from '../../common/results/drill-result';
import { makeLabDir, openLabFile, readLabFile } from '../../lib/lab-fs';
import { withConnection } from '../../lib/pg';
import { progressReporter } from '../progress';
import { assertHost, type HostDeps, type HostInput } from './deps';
import { connectPeer, type PeerAddress } from './replication';

const LEDGER = 'storage_lab.failover_ledger';

/** Creates the ledger table on the primary (standbys get it by replication). */
export async function createFailoverLedger(deps: HostDeps, input: HostInput): Promise<void> {
  assertHost(deps, input);
  await withConnection(deps.config, async (c) => {
    await c.query('CREATE SCHEMA IF NOT EXISTS storage_lab');
    await c.query(`CREATE TABLE IF NOT EXISTS ${LEDGER} (id bigint PRIMARY KEY, node text NOT NULL, written_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
  });
}

export interface DrillNode extends PeerAddress {
  node: string;
}

export type WriterRouting = 'on-error' | 'timeline';

export interface WriterInput extends HostInput {
  round: number;
  nodes: DrillNode[];
  /** The primary when the round starts: acknowledgements on another node mean the failover happened. */
  initialNode: string;
  connections: number;
  firstId: number;
  afterSwitchSeconds: number;
  maxOutageSeconds: number;
  /** Give up when the round has run this long (the workflow kills the primary well before). */
  maxSeconds: number;
  /** How the primary is found (see the top of this file); `on-error` when absent. */
  routing?: WriterRouting;
}

function ledgerFile(deps: HostDeps, round: number, kind: 'acked' | 'in-doubt'): string {
  return path.join(deps.config.hostDir, 'ledger', `round-${round}.${kind}`);
}

/** One acknowledged commit as the ledger keeps it: `<id> <node> <lsn> <ack time in ms>` (older ledgers hold the id only). */
export interface LedgerEntry {
  id: number;
  node: string | null;
  lsn: string | null;
  ackedAtMs: number | null;
}

/** A ledger line as written. */
export function ledgerLine(e: { id: number; node: string; lsn: string; ackedAtMs: number }): string {
  return `${e.id} ${e.node} ${e.lsn} ${e.ackedAtMs}\n`;
}

/** The ledger's lines read back; a line with the id only (a ledger written before the node and LSN) keeps the id. */
export function parseLedger(text: string): LedgerEntry[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id, node, lsn, at] = line.split(' ');
      return { id: Number(id), node: node ?? null, lsn: lsn ?? null, ackedAtMs: at === undefined ? null : Number(at) };
    });
}

const CONNECTION_LOST = /Connection terminated|ECONNRESET|EPIPE|ECONNREFUSED|terminating connection|server closed the connection|Client has encountered a connection error|not queryable/i;

/** Ends a connection at once, whatever it waits for (a commit waiting for a standby, a peer cut off): its query fails. */
function destroy(client: Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  client.end().catch(() => undefined);
}

/** A query that gives up after `ms`: the connection is destroyed and the query fails with it. */
async function withDeadline<T>(client: Client, query: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      destroy(client);
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([query, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A node as a client sees it: whether it takes writes, and its timeline (the first 8 hex digits of its WAL file name). */
const ROLE_QUERY =
  "SELECT pg_is_in_recovery() AS rec, CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END AS tli";

/** Every node's role, every PERIOD_MS, on a connection per node; a node that does not answer in time is left out. */
class TimelineWatch {
  private static readonly PERIOD_MS = 100;
  private static readonly DEADLINE_MS = 500;
  private readonly probes = new Map<string, Client | null>();
  private stopped = false;

  constructor(
    private readonly deps: HostDeps,
    private readonly nodes: DrillNode[],
    private readonly onRoles: (roles: { node: DrillNode; writable: boolean; timeline: number | null }[]) => void,
  ) {}

  async run(): Promise<void> {
    while (!this.stopped) {
      const roles = await Promise.all(this.nodes.map((n) => this.role(n)));
      this.onRoles(roles.filter((r): r is NonNullable<typeof r> => r !== null));
      await new Promise((r) => setTimeout(r, TimelineWatch.PERIOD_MS));
    }
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.probes.values()) if (c) destroy(c);
    this.probes.clear();
  }

  private async role(n: DrillNode): Promise<{ node: DrillNode; writable: boolean; timeline: number | null } | null> {
    let c = this.probes.get(n.node) ?? null;
    try {
      if (!c) {
        c = await connectPeer(this.deps, n, { applicationName: 'storage-lab writer watch', timeoutMs: TimelineWatch.DEADLINE_MS });
        if (this.stopped) {
          destroy(c);
          return null;
        }
        this.probes.set(n.node, c);
      }
      const r = await withDeadline(c, c.query<{ rec: boolean; tli: string | null }>(ROLE_QUERY), TimelineWatch.DEADLINE_MS);
      const { rec, tli } = r.rows[0];
      return { node: n, writable: !rec, timeline: tli ? parseInt(tli, 16) : null };
    } catch {
      if (c) destroy(c);
      this.probes.set(n.node, null);
      return null;
    }
  }
}

/** Writes until the failover is over (afterSwitchSeconds of acknowledgements on a new primary), or gives up. */
export async function runFailoverWriter(deps: HostDeps, input: WriterInput): Promise<WriterOutcome & { stopReason: string }> {
  assertHost(deps, input);
  const ctx = Context.current();
  const report = progressReporter(input.hostId, `writer round ${input.round}`);
  makeLabDir(path.dirname(ledgerFile(deps, input.round, 'acked')));
  const acked = openLabFile(ledgerFile(deps, input.round, 'acked'));
  const inDoubtFd = openLabFile(ledgerFile(deps, input.round, 'in-doubt'));
  const routing = input.routing ?? 'on-error';
  const started = Date.now();
  let nextId = input.firstId;
  let acknowledged = 0;
  let failedWrites = 0;
  let inDoubt = 0;
  const acknowledgedByNode: Record<string, number> = {};
  let lastAckOnInitial: number | null = null;
  let firstAckElsewhere: number | null = null;
  let newPrimaryNode: string | null = null;
  let stopReason = '';
  let primary: Promise<DrillNode | null> | null = null;
  const live = new Set<{ client: Client; node: DrillNode }>();

  /** `timeline` routing: the node writes go to, and its timeline when it was chosen. */
  const initial = input.nodes.find((n) => n.node === input.initialNode) ?? input.nodes[0];
  const route: { node: DrillNode; timeline: number | null } = { node: initial, timeline: null };
  const watch =
    routing === 'timeline'
      ? new TimelineWatch(deps, input.nodes, (roles) => {
          const writable = roles.filter((r) => r.writable && r.timeline !== null).sort((a, b) => b.timeline! - a.timeline!);
          const best = writable[0];
          if (!best) return;
          if (best.node.node === route.node.node) {
            route.timeline ??= best.timeline;
            return;
          }
          // Another writable node on a later timeline: a promoted standby. Connections elsewhere are dropped now,
          // whatever they wait for (a commit the old primary cannot confirm, a peer cut off).
          if (route.timeline !== null && best.timeline! <= route.timeline) return;
          route.node = best.node;
          route.timeline = best.timeline;
          for (const c of live) if (c.node.node !== best.node.node) destroy(c.client);
        })
      : null;
  const watching = watch?.run();

  /** The node that accepts writes now (on-error routing), found once for every connection that asks at the same time. */
  const findPrimary = (): Promise<DrillNode | null> => {
    if (routing === 'timeline') return Promise.resolve(route.node);
    primary ??= (async () => {
      for (const n of input.nodes) {
        try {
          const c = await connectPeer(deps, n, { applicationName: 'storage-lab probe', timeoutMs: 1_000 });
          try {
            const r = await c.query<{ rec: boolean }>('SELECT pg_is_in_recovery() AS rec');
            if (!r.rows[0].rec) return n;
          } finally {
            await c.end().catch(() => undefined);
          }
        } catch {
          // Down or refusing: try the next node.
        }
      }
      return null;
    })();
    return primary;
  };

  const stopping = () => {
    const now = Date.now();
    if (firstAckElsewhere !== null && now - firstAckElsewhere >= input.afterSwitchSeconds * 1000) stopReason ||= 'failover over';
    else if (lastAckOnInitial !== null && firstAckElsewhere === null && now - lastAckOnInitial > input.maxOutageSeconds * 1000)
      stopReason ||= `no write acknowledged for ${input.maxOutageSeconds} s (maxOutageSeconds)`;
    else if (now - started > input.maxSeconds * 1000) stopReason ||= `round ran ${input.maxSeconds} s`;
    return stopReason !== '' || ctx.cancellationSignal.aborted;
  };

  async function writer(): Promise<void> {
    let conn: { client: Client; node: DrillNode } | null = null;
    const drop = (c: { client: Client; node: DrillNode }) => {
      live.delete(c);
      destroy(c.client);
    };
    while (!stopping()) {
      if (conn && routing === 'timeline' && conn.node.node !== route.node.node) {
        drop(conn);
        conn = null;
      }
      if (!conn) {
        const target = await findPrimary();
        if (!target) {
          primary = null;
          await ctx.sleep(50);
          continue;
        }
        try {
          conn = { client: await connectPeer(deps, target, { applicationName: 'storage-lab writer' }), node: target };
          live.add(conn);
        } catch {
          primary = null;
          await ctx.sleep(50);
          continue;
        }
      }
      const id = nextId++;
      try {
        const r = await conn.client.query<{ lsn: string }>(`INSERT INTO ${LEDGER} (id, node) VALUES ($1, $2) RETURNING pg_current_wal_insert_lsn()::text AS lsn`, [id, conn.node.node]);
        const at = Date.now();
        writeSync(acked, ledgerLine({ id, node: conn.node.node, lsn: r.rows[0].lsn, ackedAtMs: at }));
        acknowledged++;
        acknowledgedByNode[conn.node.node] = (acknowledgedByNode[conn.node.node] ?? 0) + 1;
        if (conn.node.node === input.initialNode) lastAckOnInitial = at;
        else if (firstAckElsewhere === null) {
          firstAckElsewhere = at;
          newPrimaryNode = conn.node.node;
        }
      } catch (err) {
        const lost = CONNECTION_LOST.test((err as Error).message);
        if (lost) {
          inDoubt++;
          writeSync(inDoubtFd, `${id} ${conn.node.node}\n`);
        } else failedWrites++;
        drop(conn);
        conn = null;
        primary = null;
      }
    }
    if (conn) drop(conn);
  }

  const beat = setInterval(() => {
    // A writer whose time is up while its commit hangs (a cut peer, a commit no standby confirms) is let go.
    if (stopping()) for (const c of live) destroy(c.client);
    const outage = lastAckOnInitial !== null && firstAckElsewhere === null ? (Date.now() - lastAckOnInitial) / 1000 : 0;
    const detail = { acknowledged, inDoubt, failedWrites, outageSeconds: Math.round(outage * 10) / 10 };
    report({ detail: routing === 'timeline' ? { ...detail, primary: route.node.node } : detail });
  }, 500);
  try {
    await Promise.all(Array.from({ length: input.connections }, () => writer()));
  } finally {
    clearInterval(beat);
    watch?.stop();
    await watching?.catch(() => undefined);
    closeSync(acked);
    closeSync(inDoubtFd);
  }
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return {
    acknowledged,
    failedWrites,
    inDoubt,
    acknowledgedByNode,
    lastAckBeforeKillAt: iso(lastAckOnInitial),
    firstAckAfterAt: iso(firstAckElsewhere),
    newPrimaryNode,
    outageSeconds: lastAckOnInitial !== null && firstAckElsewhere !== null ? (firstAckElsewhere - lastAckOnInitial) / 1000 : null,
    stopReason: ctx.cancellationSignal.aborted ? 'cancelled' : stopReason,
  };
}

function readLedger(file: string): LedgerEntry[] {
  return parseLedger(readLabFile(file) ?? '');
}

/**
 * A partition's cut as the ledger check reads it: the replaced primary, the round, when the rules were asked for and
 * when they were in place (the packet filter took effect at some moment between the two).
 */
export interface CutWindow {
  round: number;
  node: string;
  requestedAt: string;
  appliedAt: string;
}

/** What the ledger check found: lost acknowledged ids, and (with a cut) what the replaced primary acknowledged after it. */
export interface LedgerCount {
  acknowledged: number;
  lost: number;
  lostSample: number[];
  inDoubtPresent: number;
  rowsOnPrimary: number;
  afterCut?: {
    /** Commits the replaced primary acknowledged after the cut was in place. */
    acknowledged: number;
    /** Commits it acknowledged while the rules were being loaded (before or after they took effect: unknown). */
    whileCutting: number;
    /** Of both, the ones the new primary does not hold: acknowledged by a primary that had been replaced (a split brain). */
    splitBrain: number;
    splitBrainSample: { id: number; lsn: string | null }[];
    /** The LSN of the last commit it acknowledged before the rules were asked for (by the writer's clock). */
    lastAckedLsnBefore: string | null;
  };
}

/**
 * Looks every id acknowledged in the given rounds up on a node: how many are missing, and which in-doubt ones landed.
 * With a cut: the commits its replaced primary acknowledged after the cut, and which of them the node lacks.
 */
export async function countLostCommits(deps: HostDeps, input: HostInput & { primary: PeerAddress; rounds: number[]; afterCut?: CutWindow }): Promise<LedgerCount> {
  assertHost(deps, input);
  const entries = input.rounds.flatMap((r) => readLedger(ledgerFile(deps, r, 'acked')));
  const ids = entries.map((e) => e.id);
  const doubtful = input.rounds.flatMap((r) => readLedger(ledgerFile(deps, r, 'in-doubt'))).map((e) => e.id);
  const c = await connectPeer(deps, input.primary, { applicationName: 'storage-lab ledger check', timeoutMs: 10_000 });
  try {
    const missing = await c.query<{ id: string }>(
      `SELECT a.id FROM unnest($1::bigint[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM ${LEDGER} l WHERE l.id = a.id) ORDER BY a.id`,
      [ids],
    );
    const landed = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${LEDGER} WHERE id = ANY($1::bigint[])`, [doubtful]);
    const rows = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${LEDGER}`);
    const count: LedgerCount = {
      acknowledged: ids.length,
      lost: missing.rowCount ?? 0,
      lostSample: missing.rows.slice(0, 10).map((r) => Number(r.id)),
      inDoubtPresent: Number(landed.rows[0].n),
      rowsOnPrimary: Number(rows.rows[0].n),
    };
    if (input.afterCut) {
      const requested = Date.parse(input.afterCut.requestedAt);
      const applied = Date.parse(input.afterCut.appliedAt);
      const round = readLedger(ledgerFile(deps, input.afterCut.round, 'acked')).filter((e) => e.node === input.afterCut!.node && e.ackedAtMs !== null);
      const before = round.filter((e) => e.ackedAtMs! <= requested);
      const during = round.filter((e) => e.ackedAtMs! > requested && e.ackedAtMs! <= applied);
      const after = round.filter((e) => e.ackedAtMs! > applied);
      const lostIds = new Set(missing.rows.map((r) => Number(r.id)));
      const split = [...during, ...after].filter((e) => lostIds.has(e.id));
      count.afterCut = {
        acknowledged: after.length,
        whileCutting: during.length,
        splitBrain: split.length,
        splitBrainSample: split.slice(0, 10).map((e) => ({ id: e.id, lsn: e.lsn })),
        lastAckedLsnBefore: before.length ? before[before.length - 1].lsn : null,
      };
    }
    return count;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * After a partition is healed, what a client finds on the old primary: whether it still takes writes, its
 * synchronous_standby_names, WAL position and timeline, and a write sent to it (id `id`), which must not be
 * acknowledged. One that is acknowledged goes into the round's ledger like any acknowledged commit (it is one).
 */
export async function probeOldPrimary(
  deps: HostDeps,
  input: HostInput & { node: DrillNode; round: number; id: number; waitSeconds: number },
): Promise<Omit<FencedPrimary, 'action' | 'seconds' | 'detail' | 'streaming'>> {
  assertHost(deps, input);
  const started = Date.now();
  const elapsed = () => (Date.now() - started) / 1000;
  const unknown = { synchronousStandbyNames: null, stillPrimary: null, currentLsn: null, timeline: null };
  let c: Client;
  try {
    c = await connectPeer(deps, input.node, { applicationName: 'storage-lab fence probe', timeoutMs: 5_000 });
  } catch (err) {
    return { ...unknown, fence: { outcome: 'unreachable', seconds: elapsed(), detail: `no connection to ${input.node.node}: ${(err as Error).message}` } };
  }
  try {
    const state = await withDeadline(
      c,
      c.query<{ rec: boolean; ssn: string; lsn: string | null; tli: string | null }>(
        "SELECT pg_is_in_recovery() AS rec, current_setting('synchronous_standby_names') AS ssn, CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END AS lsn, CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END AS tli",
      ),
      5_000,
    );
    const s = state.rows[0];
    const seen = { synchronousStandbyNames: s.ssn, stillPrimary: !s.rec, currentLsn: s.lsn, timeline: s.tli ? parseInt(s.tli, 16) : null };
    const writeStarted = Date.now();
    const wrote = () => (Date.now() - writeStarted) / 1000;
    try {
      const r = await withDeadline(
        c,
        c.query<{ lsn: string }>(`INSERT INTO ${LEDGER} (id, node) VALUES ($1, $2) RETURNING pg_current_wal_insert_lsn()::text AS lsn`, [input.id, input.node.node]),
        input.waitSeconds * 1000,
      );
      const fd = openLabFile(ledgerFile(deps, input.round, 'acked'), { append: true });
      try {
        writeSync(fd, ledgerLine({ id: input.id, node: input.node.node, lsn: r.rows[0].lsn, ackedAtMs: Date.now() }));
      } finally {
        closeSync(fd);
      }
      return { ...seen, fence: { outcome: 'acknowledged', seconds: wrote(), detail: `${input.node.node} acknowledged write ${input.id} after the heal: it still took writes as a primary` } };
    } catch (err) {
      const message = (err as Error).message;
      if (/no answer within/.test(message))
        return {
          ...seen,
          fence: { outcome: 'hung', seconds: wrote(), detail: `write ${input.id} was not acknowledged within ${input.waitSeconds} s (synchronous_standby_names = '${s.ssn}': no standby of it confirms commits any more)` },
        };
      return { ...seen, fence: { outcome: 'refused', seconds: wrote(), detail: `write ${input.id} refused: ${message}` } };
    }
  } catch (err) {
    return { ...unknown, fence: { outcome: 'unreachable', seconds: elapsed(), detail: `${input.node.node} did not answer: ${(err as Error).message}` } };
  } finally {
    destroy(c);
  }
}
