/**
 * The restore drill: point-in-time restore from a backup store onto a fresh host, verified and timed.
 * Source host: pgbench data, WAL archived, a base backup, then writes with ledger marker rows before and after a
 * recovery target (a time or LSN between two markers, or the end of the archive), the archive lag at the failure
 * point, and the source killed. Restore host: fetch the backup, replay to the target, promote; verify the markers
 * (every one up to the target, none after), the tables' checksums at the target, pg_amcheck, the archive's
 * continuity and the repository check. Then, whatever happened, results are saved and what the drill made is undone
 * in reverse: the restore host, the source, the backup store. The steps are in workflows/restore-drill-steps.ts.
 * One object argument with defaults, so the UI, the CLI and schedules start it alike: {"preset":"ci"}.
 */
import { resolveRestoreDrill, type DrillInput } from '../common/input/drill-spec';
import type { DrillSummary } from '../common/results/drill-result';
import { checkedWorkflowId } from './doors';
import { runDrill, saveDrillSpec } from './drill-skeleton';
import { ProgressBoard } from './progress';
import { nameScheme } from './names';
import { preflightCalls } from './proxies';
import { RESTORE_DRILL_STEPS, concludeRestoreDrill, restoreDrill, restoreDrillFigures, showStep } from './restore-drill-steps';
import { acceptInput, drillSearchAttributes, preflightOrFail } from './search-attributes';

export async function restoreDrillWorkflow(input: DrillInput = {}): Promise<DrillSummary> {
  const runId = checkedWorkflowId();
  const spec = acceptInput(resolveRestoreDrill, input, drillSearchAttributes);
  // Settings by the real server, sizes against this environment: before any host exists.
  await preflightOrFail(preflightCalls.preflightDrill({ kind: 'restore', spec }));
  await saveDrillSpec(runId, spec);
  const board = new ProgressBoard(`Restore drill ${runId}`, runId);
  const scheme = nameScheme();
  // The results folder is the drill's from its start (claimed by saveDrillSpec): a run under another's id stopped there.
  const drill = restoreDrill(runId, spec, board, scheme);
  return runDrill({
    board,
    result: drill.result,
    undo: drill.undo,
    async plan() {
      for (const step of RESTORE_DRILL_STEPS) {
        if (step.when && !step.when(spec)) continue;
        showStep(drill, step.name);
        await step.run(drill);
      }
    },
    conclude: concludeRestoreDrill,
    step: (name) => showStep(drill, name),
    figures: restoreDrillFigures,
  });
}
