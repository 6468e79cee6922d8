/**
 * The experiment: validate the spec, save it, run one cluster per (storage class, cluster index) with bounded
 * parallelism, then aggregate medians and ratios into result.json and the report.
 * One object argument with defaults, so the Temporal UI's Start Workflow form can start it: {"preset":"local-quick"}.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ParentClosePolicy,
  executeChild,
  isCancellation,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ResultsSummary } from '../activities/control';
import { hostIdFor } from '../common/ids';
import { resolveSpec, type ExperimentInput, type ExperimentSpec } from '../common/spec';
import { clusterWorkflow, clusterWorkflowId, type ClusterInput } from './cluster-workflow';
import type { DrillSummary } from '../common/drill-result';
import { runExperimentDrills } from './experiment-drills';
import { failureMessage, resolveOrFail } from './failures';
import { ProgressBoard } from './progress';
import { preflightCalls, resultCalls } from './proxies';
import { acceptInput, preflightOrFail, searchAttributes } from './search-attributes';

export interface ExperimentSummary extends ResultsSummary {
  runId: string;
}

/** The clusters of a spec, in the order they run: class by class, index by index. */
export function planClusters(spec: ExperimentSpec, runId: string): Omit<ClusterInput, 'spec' | 'parentWorkflowId'>[] {
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
  const runId = workflowInfo().workflowId;
  const board = new ProgressBoard(`Experiment ${runId}`, runId, 0);
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
  board.setTotal(clusters.length);
  board.setPhase('running clusters');
  let cancellation: unknown;
  try {
    await forEachBounded(clusters, spec.maxParallelClusters, async (cluster) => {
      try {
        await executeChild(clusterWorkflow, {
          workflowId: clusterWorkflowId(runId, cluster.className, cluster.index),
          args: [{ ...cluster, spec, parentWorkflowId: runId }],
          // A child outlives a terminated parent only long enough to tear its host down; the sweeper covers the rest.
          parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        });
        // The child's own last progress signal may not arrive before it closes: its end is known here for sure.
        board.enter(cluster.hostId, 'done');
      } catch (err) {
        if (isCancellation(err)) throw err;
        // One cluster's failure is recorded (its result is saved); the others still run.
        board.enter(cluster.hostId, 'failed');
        board.fail(`${cluster.hostId}: ${failureMessage(err)}`);
      }
    });
  } catch (err) {
    if (!isCancellation(err)) throw err;
    cancellation = err;
  }
  // The durability drills the spec asks for, as child workflows; a cancellation stops them like the clusters.
  let drills: DrillSummary[] = [];
  if (cancellation === undefined && spec.durability.drills.length) {
    board.setPhase('running drills');
    try {
      drills = await runExperimentDrills(spec, runId);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      cancellation = err;
    }
  }
  const cancelled = cancellation !== undefined;

  // Results are written even when cancelled: nothing measured is lost.
  const summary = await CancellationScope.nonCancellable(async () => {
    board.setPhase('writing results');
    return resultCalls.writeResults({ runId, spec, startedAt, cancelled, drills });
  });
  upsertSearchAttributes(searchAttributes({ status: summary.status }));
  board.setPhase(summary.status);
  if (cancelled) throw cancellation;
  if (summary.status !== 'completed')
    throw ApplicationFailure.nonRetryable(
      `experiment ${runId} did not measure every storage class; see ${summary.location}/report.md\n${summary.failedChecks.join('\n')}`,
      'ExperimentFailedError',
    );
  return { runId, ...summary };
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
