/**
 * The partition drill's state and its steps around the rounds (workflows/partition-round.ts). It is a replica drill:
 * the failover drill's cluster (workflows/failover-steps.ts), always under synchronous_standby_names = ANY 1 of the
 * standbys (no spec field can empty it; the lab's async test does it through a test seam of the worker, never of
 * the input), with the set-up and the archive check the failover drill has. What differs is the fault, the counts
 * and the verdict, here.
 */
import type { NameScheme } from '../common/core/ids';
import { median } from '../common/core/stats';
import { partitionDrillBounds } from '../common/input/bounds';
import type { PartitionDrillSpec } from '../common/input/drill-spec';
import { drillResultHead, type DrillSummary, type PartitionDrillResult, type PartitionRound } from '../common/results/drill-result';
import type { FailoverContinuation } from './failover-continuation';
import { quorumOf, replicaDrill, replicaHosts, type ReplicaDrill } from './failover-steps';
import type { ProgressBoard } from './progress';

/** The partition drill's state and steps. */
export type PartitionDrill = ReplicaDrill<PartitionDrillSpec, PartitionDrillResult>;

/** The drill as an execution starts it: fresh, or where a continuation left it. */
export function partitionDrill(
  runId: string,
  spec: PartitionDrillSpec,
  board: ProgressBoard,
  continued: FailoverContinuation<PartitionRound> | undefined,
  scheme: NameScheme = 'sha256',
): PartitionDrill {
  const { client, hostOf } = replicaHosts(runId, scheme);
  const result: PartitionDrillResult = {
    ...drillResultHead('partition-drill', runId, spec),
    ...(continued ? { startedAt: continued.startedAt, postgresVersion: continued.postgresVersion } : {}),
    synchronousStandbyNames: quorumOf('sync', ['n2', 'n3']),
    hosts: { client, nodes: hostOf },
    archive: continued?.archive ?? null,
    rounds: continued?.rounds ?? [],
    summary: { rounds: 0, lostCommits: 0, splitBrainCommits: 0, acknowledgedAfterCut: 0, rtoSecondsMedian: null, rtoSecondsMax: null, oldPrimaries: {} },
    errors: [],
  };
  return replicaDrill({ runId, scheme, spec, mode: 'sync', board, result, timeouts: partitionDrillBounds(spec) }, continued);
}

/** The headline figures from the rounds, then the one line a person reads first. */
export function concludePartitionDrill(r: PartitionDrillResult, failure: string | undefined): void {
  const rtos = r.rounds.map((x) => x.rtoSeconds).filter((x): x is number => x !== null);
  const sum = (f: (x: PartitionRound) => number) => r.rounds.reduce((total, x) => total + f(x), 0);
  const oldPrimaries: Record<string, number> = {};
  for (const x of r.rounds) {
    const fate = `${x.oldPrimary.action}${x.oldPrimary.streaming ? ', streaming' : ''}`;
    oldPrimaries[fate] = (oldPrimaries[fate] ?? 0) + 1;
  }
  const s = (r.summary = {
    rounds: r.rounds.length,
    // Each round's check covers every earlier round's commits too: the largest is the drill's.
    lostCommits: Math.max(0, ...r.rounds.map((x) => x.lostCommits)),
    splitBrainCommits: sum((x) => x.splitBrainCommits),
    acknowledgedAfterCut: sum((x) => x.acknowledgedAfterCut),
    rtoSecondsMedian: rtos.length ? Math.round(median(rtos)! * 1000) / 1000 : null,
    rtoSecondsMax: rtos.length ? Math.max(...rtos) : null,
    oldPrimaries,
  });
  const rejoined = r.rounds.filter((x) => x.oldPrimary.streaming).length;
  const archived = r.archive?.check?.ok ? `; archive continuous through ${r.archive.throughSegment} (${r.archive.backupTool.name})` : '';
  const figures = `${s.rounds} partition${s.rounds === 1 ? '' : 's'}, ${s.splitBrainCommits} split-brain commits acknowledged, ${s.lostCommits} acknowledged commits lost, RTO median ${s.rtoSecondsMedian ?? '–'} s (max ${s.rtoSecondsMax ?? '–'} s), ${rejoined} of ${s.rounds} old primaries back as streaming standbys${archived}`;
  if (failure !== undefined) r.verdict = `${r.status}: ${failure.split('\n')[0]} (${figures})`;
  else r.verdict = `passed: ${figures}; each old primary was fenced (its commits wait for a standby that follows the new primary) under synchronous_standby_names = ${r.synchronousStandbyNames}`;
}

/** The summary's headline figures. */
export function partitionDrillFigures(r: PartitionDrillResult): DrillSummary['figures'] {
  return {
    tool: r.archive?.backupTool.name ?? null,
    toolVersion: r.archive?.backupTool.version ?? null,
    archiveThrough: r.archive?.check?.ok ? r.archive.throughSegment : null,
    rounds: r.summary.rounds,
    splitBrainCommits: r.summary.splitBrainCommits,
    acknowledgedAfterCut: r.summary.acknowledgedAfterCut,
    lostCommits: r.summary.lostCommits,
    rtoSecondsMedian: r.summary.rtoSecondsMedian,
    rtoSecondsMax: r.summary.rtoSecondsMax,
  };
}
