/**
 * One partition: the writer commits on the primary; the primary is cut off from its standbys (and from the writer,
 * with partition.cutWriter) while it goes on running; after the failure detection's seconds the most advanced standby
 * is promoted, the other follows it, and the writer follows the new primary; the cut is healed; the old primary is
 * shown to be fenced (a write sent to it is not acknowledged), then rewound to follow the new primary. The round counts
 * what the old primary acknowledged after the cut, which of those the new primary lacks (split brain), and every
 * acknowledged commit missing on the new primary.
 */
import { ApplicationFailure, sleep } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../common/core/errors';
import type { NetworkCutRecord, NetworkHealRecord } from '../common/core/hosts';
import { compareLsn } from '../common/core/lsn';
import type { FencedPrimary, PartitionRound, StandbyPosition } from '../common/results/drill-result';
import type { LedgerCount } from '../activities/host/failover-writer';
import type { Node } from './failover-continuation';
import { IDS_PER_ROUND, archiveOnNewTimeline, mostAdvanced, promote, rejoin, standbyPositions, startWriter, type WriterResult } from './failover-round';
import { address } from './failover-steps';
import type { PartitionDrill } from './partition-steps';
import { providerCalls } from './proxies';

/** Round `round`, from the cut to the old primary back as a standby; fails when the round did not pass. */
export async function partitionRound(d: PartitionDrill, round: number): Promise<void> {
  const { primary, standbys } = d.state;
  const { writer, partition } = d.spec;
  const writing = startWriter(d, round, {
    routing: 'timeline',
    summary: `round ${round}: ${writer.connections} writers commit ledger rows on the primary (${primary}), follow the writable node on the highest timeline, and record every acknowledged commit`,
  });
  await sleep(writer.cutAfterSeconds * 1000);
  const cut = await cutOff(d, round);
  // The failure detection: as long as an HA manager would wait before it gives the primary up.
  await sleep(partition.detectionSeconds * 1000);
  const positions = await standbyPositions(d);
  const winner = mostAdvanced(positions).node as Node;
  const others = standbys.filter((n) => n !== winner);
  const promoteSeconds = await promote(d, round, winner, others);
  const [written, archived] = await Promise.all([writing, archiveOnNewTimeline(d, round, winner)]);
  const heal = await healCut(d, round);
  const fence = await d.clientCalls.measure.probeOldPrimary.executeWithOptions(
    { summary: `round ${round}: a write to the old primary ${primary} after the heal, which must not be acknowledged` },
    [{ hostId: d.client, node: address(d, primary), round, id: (round + 1) * IDS_PER_ROUND - 1, waitSeconds: partition.fenceProbeSeconds }],
  );
  const ledger = await d.clientCalls.measure.countLostCommits({
    hostId: d.client,
    primary: address(d, winner),
    rounds: Array.from({ length: round }, (_, i) => i + 1),
    // A commit acknowledged while the rules were loaded may have reached a standby or not: the split-brain count looks
    // it up on the new primary with those acknowledged after.
    afterCut: { round, node: primary, requestedAt: cut.requestedAt, appliedAt: cut.appliedAt },
  });
  const entry = roundEntry(d, round, { isolated: primary, winner, others, positions, cut, heal, promoteSeconds, written, ledger, fence });
  if (archived) entry.archivedOnNewTimeline = archived.segment;
  d.result.rounds.push(entry);
  // Fenced or not, the old primary comes back as a standby, so the drill ends with a cluster in one piece.
  const back = await rejoin(d, round, winner, others, { restartHost: false });
  entry.oldPrimary = { ...entry.oldPrimary, ...back, streaming: true };
  d.state.primary = winner;
  if (!entry.ok) throw ApplicationFailure.nonRetryable(`round ${round}: ${entry.error}`, FAILURE_TYPES.verification);
}

/** The cut: the primary's host on one side; its standbys (and the writer's host, with cutWriter) on the other. */
async function cutOff(d: PartitionDrill, round: number): Promise<NetworkCutRecord & { cutWriter: boolean }> {
  const { primary, standbys } = d.state;
  const { cutWriter } = d.spec.partition;
  const hostId = d.hostOf[primary];
  d.progress(`round ${round}: cut ${primary} off`, round + 0.2, hostId);
  const others = [...standbys.map((n) => d.hostOf[n]), ...(cutWriter ? [d.client] : [])];
  d.undo.networkCut(d.spec.provider, hostId);
  const cut = await providerCalls.cutNetwork.executeWithOptions(
    { summary: `round ${round}: cut the primary ${primary} (${hostId}) off from ${standbys.join(' and ')}${cutWriter ? ' and the writer' : ''}` },
    [{ provider: d.spec.provider, cut: { hostId, isolated: [hostId], others } }],
  );
  return { ...cut, cutWriter };
}

/** The cut removed: the old primary and its former standbys reach each other again. */
async function healCut(d: PartitionDrill, round: number): Promise<NetworkHealRecord> {
  const old = d.state.primary;
  const hostId = d.hostOf[old];
  d.progress(`round ${round}: heal the cut around ${old}`, round + 0.6, hostId);
  return providerCalls.healNetwork.executeWithOptions({ summary: `round ${round}: heal the cut around ${old} (${hostId})` }, [{ provider: d.spec.provider, hostId }]);
}

/**
 * A round's record, and whether it passed: the writer moved to the promoted standby, no acknowledged commit is missing
 * on it, the old primary acknowledged nothing the new one lacks, and it took no write after the heal.
 */
function roundEntry(
  d: PartitionDrill,
  round: number,
  m: {
    isolated: Node;
    winner: Node;
    others: Node[];
    positions: StandbyPosition[];
    cut: NetworkCutRecord & { cutWriter: boolean };
    heal: NetworkHealRecord;
    promoteSeconds: number;
    written: WriterResult;
    ledger: LedgerCount;
    fence: Omit<FencedPrimary, 'action' | 'seconds' | 'detail' | 'streaming'>;
  },
): PartitionRound {
  const { hostOf } = d;
  const { written, ledger, fence, cut } = m;
  const afterCut = ledger.afterCut ?? { acknowledged: 0, whileCutting: 0, splitBrain: 0, splitBrainSample: [], lastAckedLsnBefore: null };
  const firstOnNew = written.newPrimaryNode === m.winner && written.firstAckAfterAt ? Date.parse(written.firstAckAfterAt) : null;
  const winnerLsn = m.positions.find((p) => p.node === m.winner)?.receiveLsn ?? null;
  const problems: string[] = [];
  if (written.lastAckBeforeKillAt === null) problems.push(`the writer had no acknowledged commit on ${m.isolated} before the cut; raise writer.cutAfterSeconds`);
  else if (written.newPrimaryNode === null) problems.push(`no write was acknowledged on a new primary (${written.stopReason})`);
  else if (written.newPrimaryNode !== m.winner) problems.push(`the writer's new primary was ${written.newPrimaryNode}, not the promoted ${m.winner}`);
  if (afterCut.splitBrain > 0)
    problems.push(
      `${afterCut.splitBrain} split-brain commits: the old primary ${m.isolated} acknowledged them after the cut and the new primary ${m.winner} lacks them (synchronous_standby_names on ${m.isolated}: '${fence.synchronousStandbyNames ?? '?'}'; first ids ${afterCut.splitBrainSample.map((e) => e.id).join(', ')})`,
    );
  if (ledger.lost > 0) problems.push(`${ledger.lost} acknowledged commits missing on ${m.winner} (first ids ${ledger.lostSample.join(', ')})`);
  if (fence.fence.outcome === 'acknowledged') problems.push(`the old primary ${m.isolated} was not fenced: ${fence.fence.detail}`);
  else if (fence.fence.outcome === 'unreachable') problems.push(`the old primary ${m.isolated} could not be shown fenced: ${fence.fence.detail}`);
  if (!m.heal.removed) problems.push(`the cut around ${m.isolated} was gone before the drill healed it`);
  return {
    round,
    isolatedHost: hostOf[m.isolated],
    isolatedNode: m.isolated,
    cut,
    heal: m.heal,
    standbys: m.positions,
    promotedHost: hostOf[m.winner],
    promotedNode: m.winner,
    repointedHost: m.others.map((n) => hostOf[n]).join(', '),
    promoteSeconds: m.promoteSeconds,
    writer: {
      acknowledged: written.acknowledged,
      failedWrites: written.failedWrites,
      inDoubt: written.inDoubt,
      ...(written.acknowledgedByNode ? { acknowledgedByNode: written.acknowledgedByNode } : {}),
      lastAckBeforeKillAt: written.lastAckBeforeKillAt,
      firstAckAfterAt: written.firstAckAfterAt,
      newPrimaryNode: written.newPrimaryNode,
      outageSeconds: written.outageSeconds,
    },
    rtoSeconds: firstOnNew === null ? null : Math.round(firstOnNew - Date.parse(cut.appliedAt)) / 1000,
    acknowledgedAfterCut: afterCut.acknowledged,
    acknowledgedWhileCutting: afterCut.whileCutting,
    splitBrainCommits: afterCut.splitBrain,
    splitBrainSample: afterCut.splitBrainSample,
    lastAckedLsnBeforeCut: afterCut.lastAckedLsnBefore,
    promotedHeldLastAck: afterCut.lastAckedLsnBefore && winnerLsn ? compareLsn(winnerLsn, afterCut.lastAckedLsnBefore) >= 0 : null,
    lostCommits: ledger.lost,
    lostSample: ledger.lostSample,
    acknowledgedTotal: ledger.acknowledged,
    inDoubtPresent: ledger.inDoubtPresent,
    oldPrimary: { ...fence, action: 'left down', seconds: null, detail: '', streaming: false },
    ok: problems.length === 0,
    ...(problems.length ? { error: problems.join('; ') } : {}),
  };
}
