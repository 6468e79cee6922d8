/**
 * The failover drill: a primary and two standbys on separate hosts, streaming replication, and in "sync" mode
 * synchronous_commit = on with synchronous_standby_names = 'ANY 1 (<both standbys>)'. Each round a writer on a
 * client host of its own commits ledger rows and records every acknowledged id on that host; the primary host is
 * killed (kill -9 of everything on it: postmaster and agent); the standby that received the most WAL is promoted,
 * the other is repointed to it, and the writer finds the new primary. The round measures write downtime (last
 * acknowledged commit before the kill to the first after it: the RTO) and counts acknowledged ids missing on the new
 * primary (0 under ANY 1; "async" mode shows the contrast). The old primary rejoins with pg_rewind for the next round.
 * As in the reference's production pattern, the primary archives its WAL continuously through the backup tool (the
 * backup section) to a store of the drill's own, above a base backup taken once the cluster is up; each new primary
 * goes on archiving on its new timeline; after the rounds the tool checks the archive across every timeline (WAL-G:
 * wal-verify integrity timeline). Standbys archive nothing (archive_mode = on): with archive_mode = always each one
 * also pushes the old timeline's last, partly written segment under its full name when it follows a new primary, and
 * those copies differ, so a shared store refuses all but one and that node's archiver is stuck (seen here with WAL-G).
 * Results are saved, then what the drill made is undone (every host, then the store) in a non-cancellable scope.
 * Every ROUNDS_PER_EXECUTION rounds it continues as new (workflows/failover-continuation.ts, with the continuation's
 * door); the set-up and the archive check are in workflows/failover-steps.ts, a round in workflows/failover-round.ts.
 * One object argument: {"preset":"ci"}.
 */
import { continueAsNew } from '@temporalio/workflow';
import { resolveFailoverDrill, type DrillInput } from '../common/input/drill-spec';
import type { DrillSummary } from '../common/results/drill-result';
import { checkedWorkflowId } from './doors';
import { runDrill, saveDrillSpec } from './drill-skeleton';
import { continuedAtDoor, type FailoverContinuation } from './failover-continuation';
import { failoverRound } from './failover-round';
import { concludeFailoverDrill, failoverDrill, failoverDrillFigures, playReplicaDrill } from './failover-steps';
import { ProgressBoard } from './progress';
import { nameSchemeOf } from '../common/core/ids';
import { nameScheme } from './names';
import { preflightCalls } from './proxies';
import { acceptInput, drillSearchAttributes, preflightOrFail } from './search-attributes';

export async function failoverDrillWorkflow(input: DrillInput = {}, rawContinued?: FailoverContinuation): Promise<DrillSummary> {
  const runId = checkedWorkflowId();
  const continued = continuedAtDoor(runId, input, rawContinued);
  const spec = acceptInput(resolveFailoverDrill, input, drillSearchAttributes);
  // Settings by the real server, sizes against this environment, then the spec saved: before any host exists (once,
  // not per continuation).
  if (!continued) {
    await preflightOrFail(preflightCalls.preflightDrill({ kind: 'failover', spec }));
    await saveDrillSpec(runId, spec);
  }
  const board = new ProgressBoard(`Failover drill ${runId}`, runId);
  // A continued run keeps the names its first execution chose (its hosts carry them); a new one chooses. Its results
  // folder was claimed when its spec was saved, before any host (saveDrillSpec).
  const scheme = continued ? nameSchemeOf(continued.records.n1.hostId) : nameScheme();
  const drill = failoverDrill(runId, spec, board, continued, scheme);
  const { result } = drill;
  return runDrill({
    board,
    result,
    undo: drill.undo,
    async plan() {
      await playReplicaDrill(
        drill,
        continued,
        (round) => failoverRound(drill, round),
        (next) => continueAsNew<typeof failoverDrillWorkflow>(input, next),
      );
      result.status = 'passed';
    },
    conclude: concludeFailoverDrill,
    step: (name) => board.setStage(name),
    figures: failoverDrillFigures,
  });
}
