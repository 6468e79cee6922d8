/**
 * One cluster: one Postgres on one host of one storage class.
 * provision → configure → load (resumable; or restore a published data set, workflows/data-set.ts) → WAL archiving +
 * base backup (durability on) → warm-up → TPS run with the sampler → each phase the spec runs, in the registry's
 * order (common/phases/); then, whatever happened, save the results and undo what the cluster made: its host, then
 * its backup store (compensation.ts).
 * The steps are in workflows/cluster-steps.ts, the door in workflows/cluster-door.ts.
 */
import { ApplicationFailure, patched, workflowInfo } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../common/core/errors';
import type { ClusterResult } from '../common/results/result';
import { clusterInputAtDoor, type ClusterInput } from './cluster-door';
import { PHASES } from '../common/phases/registry';
import { clusterRun, configure, loadAndVerify, pgbench, provisionCluster, restartWithDirectIo, runPhase, saveClusterResult, step, tpsRun } from './cluster-steps';
import { runCompensated } from './compensation';
import { DATA_SETS_PATCH, DATA_SETS_S3_PATCH, dataSetsOff, prepareData } from './data-set';
import { archiveAndBackUp } from './durability';
import { failureMessage } from './failures';
import { ProgressBoard } from './progress';

export { clusterWorkflowId, type ClusterInput } from './cluster-door';

export async function clusterWorkflow(rawInput: ClusterInput): Promise<ClusterResult> {
  const input = clusterInputAtDoor(rawInput, workflowInfo());
  const { spec, hostId } = input;
  const board = new ProgressBoard(`Cluster ${hostId}`, input.runId);
  const c = clusterRun(input, board);
  const { result, undo } = c;
  const plan = async () => {
    // Registered before the host, so it is undone after it: the host archives into it until it is gone.
    if (spec.durability.enabled) undo.backupStore(c.storeKey, spec.durability.backupStore);
    await step(c, 'provision', () => provisionCluster(c));
    // Data sets (issue 31): the host restores a published set, or loads (and publishes) it; runs begun before load. Sets
    // in an S3 store came later: a run begun before them loads (they were off for S3 stores then).
    if (patched(DATA_SETS_PATCH) && dataSetsOff(spec) === null && (spec.durability.backupStore.kind !== 's3' || patched(DATA_SETS_S3_PATCH))) await prepareData(c);
    else {
      await step(c, 'configure', () => configure(c));
      await step(c, 'load', () => loadAndVerify(c));
    }
    if (spec.durability.enabled) result.phases.durability = await step(c, 'backup', () => archiveAndBackUp(c.host, hostId, c.storeKey, spec));
    else if (spec.postgres.directIo !== 'off') await step(c, 'restart', () => restartWithDirectIo(c));
    if (spec.workload.warmupSeconds > 0) await step(c, 'warmup', () => pgbench(c, 'warmup', spec.workload.warmupSeconds));
    await step(c, 'tps', () => tpsRun(c));
    for (const phase of PHASES) await runPhase(c, phase);
    result.status = 'ok';
  };
  const outcome = await runCompensated(board, plan, {
    failed(err, status) {
      result.status = status;
      result.error = failureMessage(err);
    },
    save: () => saveClusterResult(c),
    undo,
    undoing: () => board.step(hostId, 'teardown'),
  });
  board.step(hostId, result.status === 'ok' && !outcome.errors.length ? 'done' : 'failed');
  if (outcome.failure) throw outcome.failure;
  if (outcome.errors.length) throw ApplicationFailure.nonRetryable(outcome.errors.join('\n'), FAILURE_TYPES.teardown);
  return result;
}
