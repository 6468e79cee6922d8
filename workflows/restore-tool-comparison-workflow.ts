/**
 * The restore drill with each backup tool, side by side (`storage-lab drill restore --compare-tools`): the same drill
 * input run as two child restore drills, WAL-G then pgBackRest, one after the other, then one table of their figures
 * (backup size and time, RTO split, RPO, the repository check's time) saved as the comparison's result.json and
 * report.md. One after the other, not at once: on a small machine two drills at once would share its cores and disk,
 * so neither figure would be the tool's own. Child workflows, not a loop in the CLI: the comparison survives the CLI
 * going away and a control worker restart, each drill keeps its own result and report, and schedules and the UI can
 * start it like any run. A drill that fails is recorded with its verdict; the other still runs. The table is saved
 * through the compensation skeleton, a cancellation included; each drill undoes what it made.
 */
import { ApplicationFailure, upsertSearchAttributes } from '@temporalio/workflow';
import { DRILL_RESULT_SCHEMA_VERSION, comparisonRow, type RestoreToolComparison } from '../common/results/drill-result';
import type { DrillInput } from '../common/input/drill-spec';
import { FAILURE_TYPES } from '../common/core/errors';
import { COMPARED_TOOLS, comparedDrillId, inputWithTool, resolveForEveryTool } from '../common/input/tool-comparison';
import { runChild, showChildren } from './children';
import { runCompensated } from './compensation';
import { checkedWorkflowId } from './doors';
import { failedDrillSummary } from './drill-skeleton';
import { ProgressBoard } from './progress';
import { nameScheme } from './names';
import { currentClaimant } from './owner';
import { preflightCalls, resultCalls } from './proxies';
import { restoreDrillWorkflow } from './restore-drill-workflow';
import { acceptInput, drillSearchAttributes, preflightOrFail, searchAttributes } from './search-attributes';

export async function restoreToolComparisonWorkflow(input: DrillInput = {}): Promise<RestoreToolComparison> {
  const runId = checkedWorkflowId();
  const specs = acceptInput(resolveForEveryTool, input, (s) => drillSearchAttributes(s[0]));
  // Both tools' specs by the real tools and this environment, before either drill makes a host.
  for (const spec of specs) await preflightOrFail(preflightCalls.preflightDrill({ kind: 'restore', spec }));
  const board = new ProgressBoard(`Restore drill, tools compared ${runId}`, runId);
  // The comparison's results folder is its own from its start (a run under another's id stops here, before a drill).
  if (nameScheme() === 'sha256') await resultCalls.claimRunResults({ runId, owner: currentClaimant() });
  const comparison: RestoreToolComparison = {
    schemaVersion: DRILL_RESULT_SCHEMA_VERSION,
    kind: 'restore-tool-comparison',
    runId,
    preset: specs[0].preset ?? null,
    status: 'failed',
    verdict: '',
    startedAt: new Date().toISOString(),
    finishedAt: '',
    input,
    rows: [],
    errors: [],
  };
  const drills = COMPARED_TOOLS.map((tool) => ({ tool, workflowId: comparedDrillId(runId, tool), label: `restore drill with ${tool}` }));
  showChildren(board, drills);
  let stopped: 'failed' | 'cancelled' | undefined;
  const outcome = await runCompensated(
    board,
    async () => {
      for (const [i, drill] of drills.entries()) {
        board.setPercent((100 * i) / drills.length);
        const summary = await runChild(board, drill, restoreDrillWorkflow, inputWithTool(input, drill.tool), ({ message }) => {
          comparison.errors.push(`${drill.tool}: ${message}`);
          comparison.rows.push(comparisonRow(drill.tool, drill.workflowId, failedDrillSummary(drill.workflowId, 'restore-drill', message, { tool: drill.tool })));
        });
        if (summary) comparison.rows.push(comparisonRow(drill.tool, drill.workflowId, summary));
      }
    },
    {
      failed: (_err, status) => (stopped = status),
      async save() {
        concludeComparison(comparison, stopped);
        board.setStage('save results');
        return resultCalls.saveToolComparison({ runId, comparison, owner: currentClaimant() });
      },
    },
  );
  // A table that was not saved fails the run before its status is published (as runs before the skeleton did).
  if (!outcome.location) throw outcome.failure;
  board.setPercent(100);
  upsertSearchAttributes(searchAttributes({ status: comparison.status }));
  board.setStage(comparison.status);
  if (outcome.failure) throw outcome.failure;
  if (comparison.status !== 'passed')
    throw ApplicationFailure.nonRetryable(`restore tool comparison ${runId} failed: ${comparison.verdict}`, FAILURE_TYPES.verification);
  return comparison;
}

/** The comparison's status (from its rows, unless it was stopped) and its one-line verdict. */
function concludeComparison(comparison: RestoreToolComparison, stopped: 'failed' | 'cancelled' | undefined): void {
  const failed = comparison.rows.filter((r) => r.status !== 'passed');
  comparison.status = stopped ?? (failed.length ? 'failed' : 'passed');
  comparison.verdict =
    comparison.status === 'passed'
      ? `passed: ${comparison.rows.map((r) => `${r.tool} ${r.toolVersion} RTO ${Math.round(r.rtoSeconds! * 100) / 100} s`).join(', ')}`
      : `${comparison.status}: ${failed.map((r) => `${r.tool} ${r.verdict}`).join('; ')}`;
  comparison.finishedAt = new Date().toISOString();
}
