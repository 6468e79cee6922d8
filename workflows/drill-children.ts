/**
 * The durability drills as children of an experiment (spec.durability.drills): each runs as a child workflow on
 * hosts like the candidate class's, with the experiment's data size, Postgres settings and backup store. A drill
 * that fails is recorded with its verdict; it does not stop the others.
 */
import type { DrillSummary } from '../common/results/drill-result';
import { drillInputFor, type DrillInput } from '../common/input/drill-spec';
import type { ExperimentSpec } from '../common/input/spec';
import { runChild, showChildren } from './children';
import { failedDrillSummary } from './drill-skeleton';
import { failoverDrillWorkflow } from './failover-drill-workflow';
import { partitionDrillWorkflow } from './partition-drill-workflow';
import type { ProgressBoard } from './progress';
import { restoreDrillWorkflow } from './restore-drill-workflow';

type DrillKind = ExperimentSpec['durability']['drills'][number];

/** Each drill's workflow, run as a child. */
const DRILL_WORKFLOWS: Record<DrillKind, (input: DrillInput) => Promise<DrillSummary>> = {
  restore: restoreDrillWorkflow,
  failover: failoverDrillWorkflow,
  partition: partitionDrillWorkflow,
};

/** The workflow id of an experiment's drill. */
export function drillWorkflowId(runId: string, kind: DrillKind): string {
  return `${runId}/${kind}-drill`;
}

/** Runs the spec's drills one after the other; returns one summary each, passed or failed. */
export async function runExperimentDrills(spec: ExperimentSpec, runId: string, board: ProgressBoard): Promise<DrillSummary[]> {
  const drills = spec.durability.drills.map((kind) => ({ kind, workflowId: drillWorkflowId(runId, kind), label: `${kind} drill` }));
  showChildren(board, drills);
  const summaries: DrillSummary[] = [];
  for (const drill of drills) {
    const workflow: (input: DrillInput) => Promise<DrillSummary> = DRILL_WORKFLOWS[drill.kind];
    const summary = await runChild(board, drill, workflow, drillInputFor(drill.kind, spec), ({ message, cancelled }) => {
      if (!cancelled) summaries.push(failedDrillSummary(drill.workflowId, `${drill.kind}-drill`, message));
    });
    if (summary) summaries.push(summary);
  }
  return summaries;
}
