/**
 * The failover drill's client: it runs on a host of its own (never the primary), commits ledger rows on whichever
 * node accepts writes, and records every acknowledged id in a ledger file on its host. A commit counts only once
 * the server acknowledged it; an id whose connection died after it was sent is "in doubt" (it may or may not have
 * committed). Afterwards every acknowledged id is looked up on the new primary: under ANY 1 none may be missing.
 */
import { Context } from '@temporalio/activity';
import { closeSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import type { WriterOutcome } from '../../common/results/drill-result';
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
}

function ledgerFile(deps: HostDeps, round: number, kind: 'acked' | 'in-doubt'): string {
  return path.join(deps.config.hostDir, 'ledger', `round-${round}.${kind}`);
}

const CONNECTION_LOST = /Connection terminated|ECONNRESET|EPIPE|ECONNREFUSED|terminating connection|server closed the connection|Client has encountered a connection error|not queryable/i;

/** Writes until the failover is over (afterSwitchSeconds of acknowledgements on a new primary), or gives up. */
export async function runFailoverWriter(deps: HostDeps, input: WriterInput): Promise<WriterOutcome & { stopReason: string }> {
  assertHost(deps, input);
  const ctx = Context.current();
  const report = progressReporter(input.hostId, `writer round ${input.round}`);
  makeLabDir(path.dirname(ledgerFile(deps, input.round, 'acked')));
  const acked = openLabFile(ledgerFile(deps, input.round, 'acked'));
  const inDoubtFd = openLabFile(ledgerFile(deps, input.round, 'in-doubt'));
  const started = Date.now();
  let nextId = input.firstId;
  let acknowledged = 0;
  let failedWrites = 0;
  let inDoubt = 0;
  let lastAckOnInitial: number | null = null;
  let firstAckElsewhere: number | null = null;
  let newPrimaryNode: string | null = null;
  let stopReason = '';
  let primary: Promise<DrillNode | null> | null = null;

  /** The node that accepts writes now, found once for every connection that asks at the same time. */
  const findPrimary = (): Promise<DrillNode | null> => {
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
    while (!stopping()) {
      if (!conn) {
        const target = await findPrimary();
        if (!target) {
          primary = null;
          await ctx.sleep(50);
          continue;
        }
        try {
          conn = { client: await connectPeer(deps, target, { applicationName: 'storage-lab writer' }), node: target };
        } catch {
          primary = null;
          await ctx.sleep(50);
          continue;
        }
      }
      const id = nextId++;
      try {
        await conn.client.query(`INSERT INTO ${LEDGER} (id, node) VALUES ($1, $2)`, [id, conn.node.node]);
        const at = Date.now();
        writeSync(acked, `${id}\n`);
        acknowledged++;
        if (conn.node.node === input.initialNode) lastAckOnInitial = at;
        else if (firstAckElsewhere === null) {
          firstAckElsewhere = at;
          newPrimaryNode = conn.node.node;
        }
      } catch (err) {
        const lost = CONNECTION_LOST.test((err as Error).message);
        if (lost) {
          inDoubt++;
          writeSync(inDoubtFd, `${id}\n`);
        } else failedWrites++;
        await conn.client.end().catch(() => undefined);
        conn = null;
        primary = null;
      }
    }
    await conn?.client.end().catch(() => undefined);
  }

  const beat = setInterval(() => {
    const outage = lastAckOnInitial !== null && firstAckElsewhere === null ? (Date.now() - lastAckOnInitial) / 1000 : 0;
    report({ detail: { acknowledged, inDoubt, failedWrites, outageSeconds: Math.round(outage * 10) / 10 } });
  }, 500);
  try {
    await Promise.all(Array.from({ length: input.connections }, () => writer()));
  } finally {
    clearInterval(beat);
    closeSync(acked);
    closeSync(inDoubtFd);
  }
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return {
    acknowledged,
    failedWrites,
    inDoubt,
    lastAckBeforeKillAt: iso(lastAckOnInitial),
    firstAckAfterAt: iso(firstAckElsewhere),
    newPrimaryNode,
    outageSeconds: lastAckOnInitial !== null && firstAckElsewhere !== null ? (firstAckElsewhere - lastAckOnInitial) / 1000 : null,
    stopReason: ctx.cancellationSignal.aborted ? 'cancelled' : stopReason,
  };
}

function readIds(file: string): number[] {
  return (readLabFile(file) ?? '')
    .split('\n')
    .filter(Boolean)
    .map(Number);
}

/** Looks every id acknowledged in the given rounds up on a node: how many are missing, and which in-doubt ones landed. */
export async function countLostCommits(
  deps: HostDeps,
  input: HostInput & { primary: PeerAddress; rounds: number[] },
): Promise<{ acknowledged: number; lost: number; lostSample: number[]; inDoubtPresent: number; rowsOnPrimary: number }> {
  assertHost(deps, input);
  const ids = input.rounds.flatMap((r) => readIds(ledgerFile(deps, r, 'acked')));
  const doubtful = input.rounds.flatMap((r) => readIds(ledgerFile(deps, r, 'in-doubt')));
  const c = await connectPeer(deps, input.primary, { applicationName: 'storage-lab ledger check', timeoutMs: 10_000 });
  try {
    const missing = await c.query<{ id: string }>(
      `SELECT a.id FROM unnest($1::bigint[]) AS a(id) WHERE NOT EXISTS (SELECT 1 FROM ${LEDGER} l WHERE l.id = a.id) ORDER BY a.id`,
      [ids],
    );
    const landed = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${LEDGER} WHERE id = ANY($1::bigint[])`, [doubtful]);
    const rows = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${LEDGER}`);
    return {
      acknowledged: ids.length,
      lost: missing.rowCount ?? 0,
      lostSample: missing.rows.slice(0, 10).map((r) => Number(r.id)),
      inDoubtPresent: Number(landed.rows[0].n),
      rowsOnPrimary: Number(rows.rows[0].n),
    };
  } finally {
    await c.end().catch(() => undefined);
  }
}
