/**
 * The power-cut drill: one primary on a modelled volume (the device that drops every write it had not made durable,
 * as a power cut does) and a writer on a client host of its own recording every acknowledged commit (its id, LSN and
 * time). Each round cuts the primary's power at a moment drawn from powerCut.seed, starts PostgreSQL again on what
 * survived and times its crash recovery, counts the acknowledged commits that are missing (0 with fsync = on and the
 * default wal_sync_method), runs pg_amcheck over every database, and reads the server's checksum failures (the
 * cluster is made with data checksums). The device's counters before and after each cut, and what it dropped, go
 * into the round. Results are saved, then the hosts are undone in a non-cancellable scope. Every ROUNDS_PER_EXECUTION
 * rounds it continues as new (workflows/power-cut-continuation.ts, with the continuation's door); the set-up is in
 * workflows/power-cut-steps.ts, a round in workflows/power-cut-round.ts. One object argument: {"preset":"ci"}.
 */
import { continueAsNew } from '@temporalio/workflow';
import { resolvePowerCutDrill, type DrillInput } from '../common/input/drill-spec';
import type { DrillSummary } from '../common/results/drill-result';
import { checkedWorkflowId } from './doors';
import { runDrill, saveDrillSpec } from './drill-skeleton';
import { ROUNDS_PER_EXECUTION } from './failover-continuation';
import { nameScheme } from './names';
import { continuedScheme, powerCutContinuation, powerCutContinuedAtDoor, type PowerCutContinuation } from './power-cut-continuation';
import { powerCutRound } from './power-cut-round';
import { concludePowerCutDrill, powerCutDrill, powerCutDrillFigures, setUpPowerCutDrill } from './power-cut-steps';
import { ProgressBoard } from './progress';
import { preflightCalls } from './proxies';
import { acceptInput, drillSearchAttributes, preflightOrFail } from './search-attributes';

export async function powerCutDrillWorkflow(input: DrillInput = {}, rawContinued?: PowerCutContinuation): Promise<DrillSummary> {
  const runId = checkedWorkflowId();
  const continued = powerCutContinuedAtDoor(runId, input, rawContinued, resolvePowerCutDrill);
  const spec = acceptInput(resolvePowerCutDrill, input, drillSearchAttributes);
  // Settings by the real server, a modelled volume on this machine, then the spec saved: before any host exists (once,
  // not per continuation).
  if (!continued) {
    await preflightOrFail(preflightCalls.preflightDrill({ kind: 'power-cut', spec }));
    await saveDrillSpec(runId, spec);
  }
  const board = new ProgressBoard(`Power-cut drill ${runId}`, runId);
  // A continued run keeps the names its first execution chose; a new one chooses. Its results folder was claimed when
  // its spec was saved, before any host (saveDrillSpec).
  const scheme = continued ? continuedScheme(continued) : nameScheme();
  const drill = powerCutDrill(runId, spec, board, continued, scheme);
  const { result } = drill;
  return runDrill({
    board,
    result,
    undo: drill.undo,
    async plan() {
      const first = continued?.nextRound ?? 1;
      if (!continued) await setUpPowerCutDrill(drill);
      for (let round = first; round <= spec.rounds; round++) {
        if (round > first && (round - first) % ROUNDS_PER_EXECUTION === 0)
          await continueAsNew<typeof powerCutDrillWorkflow>(input, powerCutContinuation(drill.record!, result, round));
        await powerCutRound(drill, round);
      }
      result.status = 'passed';
    },
    conclude: concludePowerCutDrill,
    step: (name) => board.setStage(name),
    figures: powerCutDrillFigures,
  });
}
