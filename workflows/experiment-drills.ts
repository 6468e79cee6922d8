/**
 * The durability drills as a phase of an experiment (spec.durability.drills): each runs as a child workflow on
 * hosts like the candidate class's, with the experiment's data size, Postgres settings and backup store. A drill
 * that fails is recorded with its verdict; it does not stop the others.
 */
import { ParentClosePolicy, executeChild, isCancellation } from '@temporalio/workflow';
import type { DrillSummary } from '../common/drill-result';
import type { DrillInput } from '../common/drill-spec';
import type { ExperimentSpec } from '../common/spec';
import { failoverDrillWorkflow } from './failover-drill-workflow';
import { failureMessage } from './failures';
import type { ProgressBoard } from './progress';
import { restoreDrillWorkflow } from './restore-drill-workflow';

type DrillKind = ExperimentSpec['durability']['drills'][number];

/** A drill's input from the experiment's spec: its `ci` preset, sized and configured like the experiment. */
export function drillInputFor(kind: DrillKind, spec: ExperimentSpec): DrillInput {
  const className = spec.compare?.candidate ?? Object.keys(spec.storageClasses)[0];
  const common = {
    preset: 'ci',
    name: `${spec.name}-${kind}`.slice(0, 40),
    provider: spec.provider,
    storageClass: spec.storageClasses[className],
    // A drill host runs Postgres and the agent: shared_buffers plus room for both.
    host: {
      memoryLimitMiB: Math.max(spec.host.memoryLimitMiB, spec.postgres.sharedBuffersMiB + 128),
      instanceType: spec.host.instanceType,
      ...(spec.host.deadAfterSeconds ? { deadAfterSeconds: spec.host.deadAfterSeconds } : {}),
    },
    postgres: { version: spec.postgres.version, sharedBuffersMiB: spec.postgres.sharedBuffersMiB, settings: spec.postgres.settings },
    ...(spec.aws ? { aws: spec.aws } : {}),
    expiresAfterHours: spec.expiresAfterHours,
  };
  // Both drills archive with the experiment's tool to their own prefix of its store.
  const { tool, compression, backupStore, archiveTimeoutSeconds } = spec.durability;
  const backup = { tool, compression, store: backupStore, archiveTimeoutSeconds };
  if (kind === 'failover') return { ...common, backup };
  return { ...common, data: { scale: spec.data.scale, chunkRows: spec.data.chunkRows, loadWriters: spec.data.loadWriters }, backup };
}

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
