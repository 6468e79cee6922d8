/**
 * The partition drill: a primary and two standbys on separate hosts, streaming replication with synchronous_commit =
 * on and synchronous_standby_names = 'ANY 1 (<both standbys>)', a writer on a client host of its own recording every
 * acknowledged commit (its node, LSN and time). Each round cuts the primary off from its standbys with packet-filter
 * rules (and from the writer, with partition.cutWriter) while it goes on running; after partition.detectionSeconds the
 * most advanced standby is promoted and the writer follows it; the cut is healed, the old primary is shown to be
 * fenced (a write to it is not acknowledged: its commits wait for a standby that follows the new primary now), then
 * rewound with pg_rewind and waited for as a streaming standby. The round counts the commits the old primary
 * acknowledged after the cut, the split-brain ones among them (the new primary lacks them: 0 under ANY 1), and every
 * acknowledged commit missing on the new primary (0), and measures the RTO from the cut to the first commit the new
 * primary acknowledged. The archive, results and undo are the failover drill's (workflows/failover-steps.ts); the cut
 * is undone before the hosts (a provider's teardown removes it too, and the sweeper a cut whose host is gone).
 * Every ROUNDS_PER_EXECUTION rounds it continues as new. One object argument: {"preset":"ci"}.
 */
import { continueAsNew } from '@temporalio/workflow';
import { nameSchemeOf } from '../common/core/ids';
import { resolvePartitionDrill, type DrillInput } from '../common/input/drill-spec';
import type { DrillSummary, PartitionRound } from '../common/results/drill-result';
import { checkedWorkflowId } from './doors';
import { runDrill, saveDrillSpec } from './drill-skeleton';
import { continuedAtDoor, type FailoverContinuation } from './failover-continuation';
import { playReplicaDrill } from './failover-steps';
import { partitionRound } from './partition-round';
import { concludePartitionDrill, partitionDrill, partitionDrillFigures } from './partition-steps';
import { ProgressBoard } from './progress';
import { nameScheme } from './names';
import { preflightCalls } from './proxies';
import { acceptInput, drillSearchAttributes, preflightOrFail } from './search-attributes';

export async function partitionDrillWorkflow(input: DrillInput = {}, rawContinued?: FailoverContinuation<PartitionRound>): Promise<DrillSummary> {
  const runId = checkedWorkflowId();
  const continued = continuedAtDoor<PartitionRound>(runId, input, rawContinued, resolvePartitionDrill);
  const spec = acceptInput(resolvePartitionDrill, input, drillSearchAttributes);
  // Settings by the real server, this machine's packet filter and cgroups, then the spec saved: before any host exists
  // (once, not per continuation).
  if (!continued) {
    await preflightOrFail(preflightCalls.preflightDrill({ kind: 'partition', spec }));
    await saveDrillSpec(runId, spec);
  }
  const board = new ProgressBoard(`Partition drill ${runId}`, runId);
  // A continued run keeps the names its first execution chose (its hosts carry them); a new one chooses. Its results
  // folder was claimed when its spec was saved, before any host (saveDrillSpec).
  const scheme = continued ? nameSchemeOf(continued.records.n1.hostId) : nameScheme();
  const drill = partitionDrill(runId, spec, board, continued, scheme);
  const { result } = drill;
  return runDrill({
    board,
    result,
    undo: drill.undo,
    async plan() {
      await playReplicaDrill(
        drill,
        continued,
        (round) => partitionRound(drill, round),
        (next) => continueAsNew<typeof partitionDrillWorkflow>(input, next),
      );
      result.status = 'passed';
    },
    conclude: concludePartitionDrill,
    step: (name) => board.setStage(name),
    figures: partitionDrillFigures,
  });
}
