/**
 * The restore drill with each backup tool, side by side (`storage-lab drill restore --compare-tools`): the same drill
 * input run as two child restore drills, WAL-G then pgBackRest, one after the other, then one table of their figures
 * (backup size and time, RTO split, RPO, the repository check's time) saved as the comparison's result.json and
 * report.md. One after the other, not at once: on a small machine two drills at once would share its cores and disk,
 * so neither figure would be the tool's own. Child workflows, not a loop in the CLI: the comparison survives the CLI
 * going away and a control worker restart, each drill keeps its own result and report, and schedules and the UI can
 * start it like any run. A drill that fails is recorded with its verdict; the other still runs.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ParentClosePolicy,
  executeChild,
  isCancellation,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  DRILL_RESULT_SCHEMA_VERSION,
  comparisonRow,
  type DrillSummary,
  type RestoreToolComparison,
} from '../common/results/drill-result';
import type { DrillInput } from '../common/input/drill-spec';
import { FAILURE_TYPES } from '../common/core/errors';
import { COMPARED_TOOLS, comparedDrillId, inputWithTool, resolveForEveryTool } from '../common/input/tool-comparison';
import { checkedWorkflowId } from './doors';
import { failureMessage } from './failures';
import { ProgressBoard } from './progress';
import { preflightCalls, resultCalls } from './proxies';
import { restoreDrillWorkflow } from './restore-drill-workflow';
import { acceptInput, drillSearchAttributes, preflightOrFail, searchAttributes } from './search-attributes';

export async function restoreToolComparisonWorkflow(input: DrillInput = {}): Promise<RestoreToolComparison> {
  const runId = checkedWorkflowId();
  const specs = acceptInput(resolveForEveryTool, input, (s) => drillSearchAttributes(s[0]));
  // Both tools' specs by the real tools and this environment, before either drill makes a host.
  for (const spec of specs) await preflightOrFail(preflightCalls.preflightDrill({ kind: 'restore', spec }));
  const board = new ProgressBoard(`Restore drill, tools compared ${runId}`, runId);
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
  for (const tool of COMPARED_TOOLS) board.child(comparedDrillId(runId, tool), `restore drill with ${tool}`, 'waiting');
  let cancelled: unknown;
  for (const tool of COMPARED_TOOLS) {
    const workflowId = comparedDrillId(runId, tool);
    board.child(workflowId, `restore drill with ${tool}`, 'running');
    board.setPercent((100 * COMPARED_TOOLS.indexOf(tool)) / COMPARED_TOOLS.length);
    try {
      const summary: DrillSummary = await executeChild(restoreDrillWorkflow, {
        workflowId,
        args: [inputWithTool(input, tool)],
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      });
      comparison.rows.push(comparisonRow(tool, workflowId, summary));
      board.child(workflowId, `restore drill with ${tool}`, 'done');
    } catch (err) {
      board.child(workflowId, `restore drill with ${tool}`, 'failed');
      const message = failureMessage(err).split('\n')[0];
      comparison.errors.push(`${tool}: ${message}`);
      // The drill saved its own result.json before its teardown; its figures are there, its verdict here.
      comparison.rows.push(comparisonRow(tool, workflowId, { runId: workflowId, kind: 'restore-drill', status: 'failed', verdict: `failed: ${message}`, location: '', figures: { tool } }));
      if (isCancellation(err)) {
        cancelled = err;
        break;
      }
    }
  }
  const failed = comparison.rows.filter((r) => r.status !== 'passed');
  comparison.status = cancelled ? 'cancelled' : failed.length ? 'failed' : 'passed';
  comparison.verdict =
    comparison.status === 'passed'
      ? `passed: ${comparison.rows.map((r) => `${r.tool} ${r.toolVersion} RTO ${Math.round(r.rtoSeconds! * 100) / 100} s`).join(', ')}`
      : `${comparison.status}: ${failed.map((r) => `${r.tool} ${r.verdict}`).join('; ')}`;
  comparison.finishedAt = new Date().toISOString();
  board.setPhase('save results');
  // Saved whatever happened, a cancellation included: the drills' figures are the run's whole point.
  await CancellationScope.nonCancellable(() => resultCalls.saveToolComparison({ runId, comparison }));
  board.setPercent(100);
  upsertSearchAttributes(searchAttributes({ status: comparison.status }));
  board.setPhase(comparison.status);
  if (cancelled) throw cancelled;
  if (comparison.status !== 'passed')
    throw ApplicationFailure.nonRetryable(`restore tool comparison ${runId} failed: ${comparison.verdict}`, FAILURE_TYPES.verification);
  return comparison;
}
