/**
 * The experiment: validate the spec, save it, run one cluster per (storage class, cluster index) with bounded
 * parallelism, then aggregate medians and ratios into result.json and the report.
 * One object argument with defaults, so the Temporal UI's Start Workflow form can start it: {"preset":"local-quick"}.
 */
import { ApplicationFailure, upsertSearchAttributes } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../common/core/errors';
import { hostIdFor, type NameScheme } from '../common/core/ids';
import { type ExperimentInput, type ExperimentSpec } from '../common/input/spec';
import { resolveSpec } from '../common/input/resolve';
import { clusterWorkflow, clusterWorkflowId, type ClusterInput } from './cluster-workflow';
import type { DrillSummary } from '../common/results/drill-result';
import type { ExperimentSummary, ResultsSummary } from '../common/results/result';
import { forEachBounded, runChild, showChildren } from './children';
import { runCompensated } from './compensation';
import { checkedWorkflowId } from './doors';
import { runExperimentDrills } from './drill-children';
import { resolveOrFail } from './failures';
import { nameScheme } from './names';
import { currentClaimant } from './owner';
import { ProgressBoard } from './progress';
import { preflightCalls, resultCalls } from './proxies';
import { acceptInput, preflightOrFail, searchAttributes } from './search-attributes';

/** The clusters of a spec, in the order they run: class by class, index by index; host ids of the run's scheme. */
export function planClusters(spec: ExperimentSpec, runId: string, scheme: NameScheme = 'sha256'): Omit<ClusterInput, 'spec'>[] {
  return Object.keys(spec.storageClasses).flatMap((className) =>
    Array.from({ length: spec.clustersPerClass }, (_, index) => ({
      runId,
      className,
      index,
      hostId: hostIdFor(runId, className, index, scheme),
    })),
  );
}

/** Validates an input into a spec, or fails the workflow at once (non-retryable) with every problem named. */
export function validateOrFail(input: unknown): ExperimentSpec {
  return resolveOrFail(resolveSpec, input);
}

export async function experimentWorkflow(input: ExperimentInput = {}): Promise<ExperimentSummary> {
  const runId = checkedWorkflowId();
  const board = new ProgressBoard(`Experiment ${runId}`, runId);
  board.setStage('validating');
  const spec = acceptInput(resolveSpec, input, (s) => ({
    experiment: s.name,
    preset: s.preset ?? 'custom',
    storageClasses: Object.keys(s.storageClasses),
  }));
  const startedAt = new Date().toISOString();
  await preflightOrFail(preflightCalls.preflight({ spec }));
  await resultCalls.saveSpec({ runId, spec, owner: currentClaimant() });

  const clusters = planClusters(spec, runId, nameScheme()).map((cluster) => ({ cluster, workflowId: clusterWorkflowId(runId, cluster.className, cluster.index), label: cluster.hostId }));
  showChildren(board, clusters);
  let drills: DrillSummary[] = [];
  let cancelled = false;
  let summary: ResultsSummary | undefined;
  const outcome = await runCompensated(
    board,
    async () => {
      board.setStage('running clusters');
      // A cluster that fails is recorded (it saved its own result); the others still run.
      await forEachBounded(clusters, spec.maxParallelClusters, async (child) => {
        await runChild(board, child, clusterWorkflow, { ...child.cluster, spec });
      });
      // The durability drills the spec asks for, as child workflows; a cancellation stops them like the clusters.
      if (spec.durability.drills.length) {
        board.setStage('running drills');
        drills = await runExperimentDrills(spec, runId, board);
      }
    },
    {
      failed: (_err, status) => (cancelled = status === 'cancelled'),
      // Results are written even when cancelled: nothing measured is lost. Each cluster undid its own host.
      async save() {
        board.setStage('writing results');
        summary = await resultCalls.writeResults({ runId, spec, startedAt, cancelled, drills });
        return summary.location;
      },
    },
  );
  upsertSearchAttributes(searchAttributes({ status: summary?.status ?? outcome.status }));
  board.setStage(summary?.status ?? outcome.status);
  if (outcome.failure || !summary) throw outcome.failure;
  if (summary.status !== 'completed')
    throw ApplicationFailure.nonRetryable(
      `experiment ${runId} did not measure every storage class; see ${summary.location}/report.md\n${summary.failedChecks.join('\n')}`,
      FAILURE_TYPES.experimentFailed,
    );
  return { runId, ...summary };
}
