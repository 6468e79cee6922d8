/**
 * The durability drills as a phase of an experiment (spec.durability.drills): each runs as a child workflow on
 * hosts like the candidate class's, with the experiment's data size, Postgres settings and backup store. A drill
 * that fails is recorded with its verdict; it does not stop the others.
 */
import { ParentClosePolicy, executeChild, isCancellation } from '@temporalio/workflow';
import type { DrillSummary } from '../common/results/drill-result';
import { drillInputFor, type DrillInput } from '../common/input/drill-spec';
import type { ExperimentSpec } from '../common/input/spec';
import { failoverDrillWorkflow } from './failover-drill-workflow';
import { failureMessage } from './failures';
import type { ProgressBoard } from './progress';
import { restoreDrillWorkflow } from './restore-drill-workflow';

type DrillKind = ExperimentSpec['durability']['drills'][number];

/** The workflow id of an experiment's drill. */
export function drillWorkflowId(runId: string, kind: DrillKind): string {
  return `${runId}/${kind}-drill`;
}

/** Runs the spec's drills one after the other; returns one summary each, passed or failed. */
export async function runExperimentDrills(spec: ExperimentSpec, runId: string, board: ProgressBoard): Promise<DrillSummary[]> {
  const summaries: DrillSummary[] = [];
  for (const kind of spec.durability.drills) board.child(drillWorkflowId(runId, kind), `${kind} drill`, 'waiting');
  for (const kind of spec.durability.drills) {
    const workflowId = drillWorkflowId(runId, kind);
    const options = { workflowId, args: [drillInputFor(kind, spec)] as [DrillInput], parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL };
    board.child(workflowId, `${kind} drill`, 'running');
    try {
      summaries.push(kind === 'restore' ? await executeChild(restoreDrillWorkflow, options) : await executeChild(failoverDrillWorkflow, options));
      board.child(workflowId, `${kind} drill`, 'done');
    } catch (err) {
      if (isCancellation(err)) throw err;
      board.child(workflowId, `${kind} drill`, 'failed');
      summaries.push({
        runId: workflowId,
        kind: kind === 'restore' ? 'restore-drill' : 'failover-drill',
        status: 'failed',
        verdict: `failed: ${failureMessage(err).split('\n')[0]}`,
        // Filled in by the results store: the drill saved its own result.json before its teardown.
        location: '',
        figures: {},
      });
    }
  }
  return summaries;
}
