/**
 * The experiment: validate the spec, save it, run one cluster per (storage class, cluster index) with bounded
 * parallelism, then aggregate medians and ratios into result.json and the report.
 * One object argument with defaults, so the Temporal UI's Start Workflow form can start it: {"preset":"local-quick"}.
 */
import {
  ApplicationFailure,
  ParentClosePolicy,
  executeChild,
  isCancellation,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ResultsSummary } from '../activities/control';
import { hostIdFor } from '../common/core/ids';
import { resolveSpec, type ExperimentInput, type ExperimentSpec } from '../common/input/spec';
import { clusterWorkflow, clusterWorkflowId, type ClusterInput } from './cluster-workflow';
import type { DrillSummary } from '../common/results/drill-result';
import { runCompensated } from './compensation';
import { checkedWorkflowId } from './doors';
import { runExperimentDrills } from './experiment-drills';
import { failureMessage, resolveOrFail } from './failures';
import { ProgressBoard } from './progress';
import { preflightCalls, resultCalls } from './proxies';
import { acceptInput, preflightOrFail, searchAttributes } from './search-attributes';

export interface ExperimentSummary extends ResultsSummary {
  runId: string;
}

/** The clusters of a spec, in the order they run: class by class, index by index. */
export function planClusters(spec: ExperimentSpec, runId: string): Omit<ClusterInput, 'spec'>[] {
  return Object.keys(spec.storageClasses).flatMap((className) =>
    Array.from({ length: spec.clustersPerClass }, (_, index) => ({
      runId,
      className,
      index,
      hostId: hostIdFor(runId, className, index),
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
  board.setPhase('validating');
  const spec = acceptInput(resolveSpec, input, (s) => ({
    experiment: s.name,
    preset: s.preset ?? 'custom',
    storageClasses: Object.keys(s.storageClasses),
  }));
  const startedAt = new Date().toISOString();
  await preflightOrFail(preflightCalls.preflight({ spec }));
  await resultCalls.saveSpec({ runId, spec });

  const clusters = planClusters(spec, runId);
  for (const c of clusters) board.child(clusterWorkflowId(runId, c.className, c.index), c.hostId, 'waiting');
  let drills: DrillSummary[] = [];
  let cancelled = false;
  let summary: ResultsSummary | undefined;
  const outcome = await runCompensated(
    board,
    async () => {
      board.setPhase('running clusters');
      await forEachBounded(clusters, spec.maxParallelClusters, (cluster) => runCluster(board, spec, cluster));
      // The durability drills the spec asks for, as child workflows; a cancellation stops them like the clusters.
      if (spec.durability.drills.length) {
        board.setPhase('running drills');
        drills = await runExperimentDrills(spec, runId, board);
      }
    },
    {
      failed: (_err, status) => (cancelled = status === 'cancelled'),
      // Results are written even when cancelled: nothing measured is lost. Each cluster tore its own host down.
      async save() {
        board.setPhase('writing results');
        summary = await resultCalls.writeResults({ runId, spec, startedAt, cancelled, drills });
        return summary.location;
      },
      teardown: async () => [],
    },
  );
  upsertSearchAttributes(searchAttributes({ status: summary?.status ?? outcome.status }));
  board.setPhase(summary?.status ?? outcome.status);
  if (outcome.failure || !summary) throw outcome.failure;
  if (summary.status !== 'completed')
    throw ApplicationFailure.nonRetryable(
      `experiment ${runId} did not measure every storage class; see ${summary.location}/report.md\n${summary.failedChecks.join('\n')}`,
      'ExperimentFailedError',
    );
  return { runId, ...summary };
}

/** Runs one cluster as a child workflow; its failure is recorded (its result is saved), the others still run. */
async function runCluster(board: ProgressBoard, spec: ExperimentSpec, cluster: Omit<ClusterInput, 'spec'>): Promise<void> {
  const workflowId = clusterWorkflowId(cluster.runId, cluster.className, cluster.index);
  board.child(workflowId, cluster.hostId, 'running');
  try {
    await executeChild(clusterWorkflow, {
      workflowId,
      args: [{ ...cluster, spec }],
      // A child outlives a terminated parent only long enough to tear its host down; the sweeper covers the rest.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
    board.child(workflowId, cluster.hostId, 'done');
  } catch (err) {
    if (isCancellation(err)) throw err;
    board.child(workflowId, cluster.hostId, 'failed');
    board.fail(`${cluster.hostId}: ${failureMessage(err)}`);
  }
}

/**
 * Runs fn over items with at most `limit` in flight, in the order of items. When one fails (a cancellation),
 * no more start and the ones in flight are awaited (they are tearing their hosts down) before it is re-raised.
 */
export async function forEachBounded<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const running = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  for (const item of items) {
    if (failure) break;
    const p: Promise<void> = fn(item)
      .catch((error) => {
        failure ??= { error };
      })
      .finally(() => running.delete(p));
    running.add(p);
    if (running.size >= limit) await Promise.race(running);
  }
  await Promise.all(running);
  if (failure) throw failure.error;
}
