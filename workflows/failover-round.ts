/**
 * One failover round: the writer commits on the primary; the primary host is killed; the most advanced standby is
 * promoted and the other follows it; write downtime and lost acknowledged commits are measured; the old primary
 * rejoins (or stays down). The writer, the standbys' positions, the promotion, the first archived segment on the new
 * timeline and the rejoin are steps the partition drill's round shares (workflows/partition-round.ts).
 */
import { ApplicationFailure, sleep } from '@temporalio/workflow';
import type { runFailoverWriter, WriterRouting } from '../activities/host/failover-writer';
import { FAILURE_TYPES } from '../common/core/errors';
import { compareLsn } from '../common/core/lsn';
import type { FailoverRound, FencedPrimary, StandbyPosition } from '../common/results/drill-result';
import { NODES, type Node } from './failover-continuation';
import { currentClaimant } from './owner';
import { providerCalls } from './proxies';
import { ARCHIVE_WAIT_SECONDS, STANDBY_WAIT_SECONDS, address, nodeConfig, provisionDrillHosts, quorumNodes, type FailoverDrill, type ReplicaDrill } from './failover-steps';

export type WriterResult = Awaited<ReturnType<typeof runFailoverWriter>>;
type LedgerCount = { lost: number; lostSample: number[]; acknowledged: number; inDoubtPresent: number };

/** Ids of round r start here, so no two rounds share one. */
export const IDS_PER_ROUND = 1_000_000_000;

/** The standby to promote: the one that received the most WAL, then replayed the most, then the first. */
export function mostAdvanced(positions: StandbyPosition[]): StandbyPosition {
  const lsn = (v: string | null) => v ?? '0/0';
  return [...positions].sort(
    (a, b) => compareLsn(lsn(b.receiveLsn), lsn(a.receiveLsn)) || compareLsn(lsn(b.replayLsn), lsn(a.replayLsn)),
  )[0];
}

/** Round `round`, from the primary's kill to the new primary taking writes; fails when the round did not pass. */
export async function failoverRound(d: FailoverDrill, round: number): Promise<void> {
  const { primary, standbys } = d.state;
  const { writer } = d.spec;
  const writing = startWriter(d, round, {
    summary: `round ${round}: ${writer.connections} writers commit ledger rows on the primary (${primary}) and record every acknowledged id`,
  });
  await sleep(d.spec.writer.killAfterSeconds * 1000);
  const killedAt = await killPrimary(d, round);
  const positions = await standbyPositions(d);
  const winner = mostAdvanced(positions).node as Node;
  const others = standbys.filter((n) => n !== winner);
  const promoteSeconds = await promote(d, round, winner, others);
  const [written, archived] = await Promise.all([writing, archiveOnNewTimeline(d, round, winner)]);
  const ledger = await d.clientCalls.measure.countLostCommits({ hostId: d.client, primary: address(d, winner), rounds: Array.from({ length: round }, (_, i) => i + 1) });
  const entry = roundEntry(d, round, { killed: primary, winner, others, positions, killedAt, promoteSeconds, written, ledger });
  if (archived) entry.archivedOnNewTimeline = archived.segment;
  d.result.rounds.push(entry);
  if (d.spec.rejoin === 'rewind') entry.oldPrimary = await rejoin(d, round, winner, others, { restartHost: true });
  else d.state.standbys = others;
  d.state.primary = winner;
  if (!entry.ok) throw ApplicationFailure.nonRetryable(`round ${round}: ${entry.error}`, FAILURE_TYPES.verification);
}

/**
 * The writer on the client host, committing ledger rows on the primary and recording every acknowledged commit;
 * `routing` says how it finds the primary (activities/host/failover-writer.ts).
 */
export function startWriter(d: ReplicaDrill, round: number, opts: { summary: string; routing?: WriterRouting }): Promise<WriterResult> {
  const { writer } = d.spec;
  const { primary } = d.state;
  d.progress(`round ${round}: writing on ${primary}`, round, d.client);
  const writing = d.clientCalls.measure.runFailoverWriter.executeWithOptions({ summary: opts.summary }, [
    {
      hostId: d.client,
      round,
      nodes: NODES.map((n) => address(d, n)),
      initialNode: primary,
      connections: writer.connections,
      firstId: round * IDS_PER_ROUND + 1,
      afterSwitchSeconds: writer.afterFailoverSeconds,
      maxOutageSeconds: writer.maxOutageSeconds,
      maxSeconds: d.timeouts.measureSeconds - 600,
      ...(opts.routing ? { routing: opts.routing } : {}),
    },
  ]);
  // A failed writer must not leave this round waiting on its timer.
  writing.catch(() => undefined);
  return writing;
}

/** kill -9 of everything on the primary's host; returns when the drill asked for it. */
async function killPrimary(d: FailoverDrill, round: number): Promise<string> {
  const { primary } = d.state;
  const hostId = d.hostOf[primary];
  d.progress(`round ${round}: kill ${primary}`, round + 0.2, hostId);
  const killedAt = new Date().toISOString();
  await providerCalls.killHost.executeWithOptions({ summary: `round ${round}: kill -9 the primary ${primary} (${hostId})` }, [{ provider: d.spec.provider, hostId, owner: currentClaimant() }]);
  return killedAt;
}

/** How much WAL each standby received and replayed (when the primary died, or was cut off). */
export function standbyPositions(d: ReplicaDrill): Promise<StandbyPosition[]> {
  return Promise.all(
    d.state.standbys.map(async (n) => {
      const p = await d.calls(n).measure.standbyPosition({ hostId: d.hostOf[n] });
      return { hostId: d.hostOf[n], node: n, receiveLsn: p.receiveLsn, replayLsn: p.replayLsn };
    }),
  );
}

/** Repoints the other standbys at the winner, sets the winner's quorum and promotes it; returns the promotion's seconds. */
export async function promote(d: ReplicaDrill, round: number, winner: Node, others: Node[]): Promise<number> {
  const { hostOf } = d;
  d.progress(`round ${round}: promote ${winner}`, round + 0.4, hostOf[winner]);
  // The other standby follows the winner before the promotion (cascading, then across the new timeline), and
  // the winner's quorum names it and the old primary, so commits after the promotion have a standby to wait for.
  await Promise.all(others.map((n) => d.calls(n).setup.setReplication({ hostId: hostOf[n], primary: address(d, winner), node: n, synchronousStandbys: [] })));
  const quorum = quorumNodes(d.mode, [...others, d.state.primary]);
  await d.calls(winner).setup.setReplication({ hostId: hostOf[winner], primary: null, node: winner, synchronousStandbys: quorum });
  const promoted = await d.calls(winner).measure.promoteStandby.executeWithOptions({ summary: `round ${round}: promote ${winner}, the most advanced standby` }, [
    { hostId: hostOf[winner] },
  ]);
  return promoted.seconds;
}

/**
 * With the archive on, the new primary closes its first segment on its new timeline and waits until it is archived,
 * while the writer goes on. Each timeline then also switches in a segment of its own, which wal-verify needs (WAL-G
 * 3.0.8 keys timeline switches by segment number, so two failovers within one segment would hide one from its check).
 */
export function archiveOnNewTimeline(d: ReplicaDrill, round: number, winner: Node): Promise<{ segment: string }> | null {
  if (!d.state.archiving) return null;
  return d.calls(winner).measure.archiveCurrentSegment.executeWithOptions({ summary: `round ${round}: ${winner} archives its first segment on the new timeline` }, [
    { hostId: d.hostOf[winner], timeoutSeconds: ARCHIVE_WAIT_SECONDS },
  ]);
}

/**
 * The old primary rewound (pg_rewind) to follow the winner, and waited for as its standby; a killed host is started
 * again first (`restartHost`). Returns how it came back.
 */
export async function rejoin(
  d: ReplicaDrill,
  round: number,
  winner: Node,
  others: Node[],
  opts: { restartHost: boolean },
): Promise<Pick<FencedPrimary, 'action' | 'seconds' | 'detail'>> {
  const { hostOf } = d;
  const old = d.state.primary;
  d.progress(`round ${round}: ${old} rejoins`, round + 0.7, hostOf[old]);
  // Provisioning a killed host again starts its agent; its data folder is where the kill left it.
  if (opts.restartHost) await provisionDrillHosts(d, [hostOf[old]]);
  const rejoined = await d.calls(old).setup.rejoinAsStandby.executeWithOptions({ summary: `round ${round}: ${old} rejoins as a standby of ${winner} (pg_rewind)` }, [
    { hostId: hostOf[old], primary: address(d, winner), node: old },
  ]);
  await d.calls(old).setup.configurePostgres({ hostId: hostOf[old], ...nodeConfig(d) });
  await d.calls(winner).measure.waitForStandbys({ hostId: hostOf[winner], nodes: [...others, old], sync: d.mode === 'sync', timeoutSeconds: STANDBY_WAIT_SECONDS });
  d.state.standbys = [...others, old];
  return { action: rejoined.action, seconds: rejoined.seconds, detail: rejoined.detail };
}

/** A round's record, and whether it passed: a new primary acknowledged writes, and (sync) no acknowledged commit was lost. */
function roundEntry(
  d: FailoverDrill,
  round: number,
  m: { killed: Node; winner: Node; others: Node[]; positions: StandbyPosition[]; killedAt: string; promoteSeconds: number; written: WriterResult; ledger: LedgerCount },
): FailoverRound {
  const { hostOf } = d;
  const { written, ledger } = m;
  const problems: string[] = [];
  if (written.outageSeconds === null)
    problems.push(
      written.lastAckBeforeKillAt === null
        ? `the writer had no acknowledged commit on ${m.killed} before the kill; raise writer.killAfterSeconds`
        : `no write was acknowledged on a new primary (${written.stopReason})`,
    );
  else if (written.newPrimaryNode !== m.winner) problems.push(`the writer's new primary was ${written.newPrimaryNode}, not the promoted ${m.winner}`);
  if (d.mode === 'sync' && ledger.lost > 0) problems.push(`${ledger.lost} acknowledged commits missing on ${m.winner} (first ids ${ledger.lostSample.join(', ')})`);
  return {
    round,
    killedHost: hostOf[m.killed],
    killedNode: m.killed,
    killedAt: m.killedAt,
    standbys: m.positions,
    promotedHost: hostOf[m.winner],
    promotedNode: m.winner,
    repointedHost: m.others.map((n) => hostOf[n]).join(', '),
    promoteSeconds: m.promoteSeconds,
    writer: {
      acknowledged: written.acknowledged,
      failedWrites: written.failedWrites,
      inDoubt: written.inDoubt,
      lastAckBeforeKillAt: written.lastAckBeforeKillAt,
      firstAckAfterAt: written.firstAckAfterAt,
      newPrimaryNode: written.newPrimaryNode,
      outageSeconds: written.outageSeconds,
    },
    rtoSeconds: written.outageSeconds,
    lostCommits: ledger.lost,
    lostSample: ledger.lostSample,
    acknowledgedTotal: ledger.acknowledged,
    inDoubtPresent: ledger.inDoubtPresent,
    oldPrimary: { action: 'left down', seconds: null, detail: 'rejoin is "none"' },
    ok: problems.length === 0,
    ...(problems.length ? { error: problems.join('; ') } : {}),
  };
}
