/**
 * What both drill workflows share: their hosts' shape, and how a drill ends: its plan run through the compensation
 * skeleton (one failure record, the verdict made from the result just before it is saved, then the undo), its status
 * on the board and in the search attributes, and its summary returned or its failure raised.
 */
import { ApplicationFailure, patched, upsertSearchAttributes } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../common/core/errors';
import type { PowerCutDrillSpec, ReplicaDrillSpec, RestoreDrillSpec } from '../common/input/drill-spec';
import type { DrillResult, DrillSummary } from '../common/results/drill-result';
import { runCompensated, type UndoStack } from './compensation';
import { failureMessage } from './failures';
import type { HostShape } from './hosts';
import type { ProgressBoard } from './progress';
import { currentClaimant } from './owner';
import { resultCalls } from './proxies';
import { searchAttributes } from './search-attributes';

/** One host of a drill: the drill's storage class and memory, sharing the drill's database password with its peers. */
export function drillHostShape(spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec, runId: string, volumeBytes: number): HostShape {
  // The restore drill always backs up; the failover and partition drills unless backup.enabled is false; the
  // power-cut drill never.
  const backup = 'backup' in spec ? spec.backup : null;
  const backsUp = backup !== null && (!('enabled' in backup) || backup.enabled);
  return { storageClass: spec.storageClass, memoryLimitMiB: spec.host.memoryLimitMiB, volumeBytes, passwordScope: runId, s3Backups: backsUp && backup.store.kind === 's3' };
}

/** Drills recorded before they saved their spec replay without the save (test/fixtures/histories). */
export const DRILL_SAVES_SPEC_PATCH = 'drill-saves-spec';

/**
 * Saves the drill's spec before it makes anything, as the experiment does (docs/architecture.md, the workflow
 * skeleton), and claims its results folder for its chain of executions: a failover drill continues as new, and its
 * result is saved by its last execution under the same claim.
 */
export async function saveDrillSpec(runId: string, spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec): Promise<void> {
  if (patched(DRILL_SAVES_SPEC_PATCH)) await resultCalls.saveSpec({ runId, spec, owner: currentClaimant() });
}

/** A drill's plan and what it makes of its result. */
export interface DrillRun<R extends DrillResult> {
  board: ProgressBoard;
  result: R;
  /** What the plan makes, registered as it goes. */
  undo: UndoStack;
  plan(): Promise<void>;
  /** Sets the verdict (and the status it implies) from the result and the plan's failure, before the result is saved. */
  conclude(result: R, failure: string | undefined): void;
  /** Shows the save and the undo on the board. */
  step(name: 'save results' | 'teardown'): void;
  /** The summary's headline figures. */
  figures(result: R): DrillSummary['figures'];
}

/**
 * Runs a drill through the compensation skeleton, then ends it: a drill that did not pass fails its workflow (with
 * the verdict, after its results were saved and its hosts torn down); one that passed returns its summary.
 */
export async function runDrill<R extends DrillResult>(drill: DrillRun<R>): Promise<DrillSummary> {
  const { board, result } = drill;
  let failure: string | undefined;
  const outcome = await runCompensated(board, () => drill.plan(), {
    failed(err, status) {
      failure = failureMessage(err);
      result.status = status;
      result.errors.push(failure);
    },
    async save() {
      drill.conclude(result, failure);
      drill.step('save results');
      result.finishedAt = new Date().toISOString();
      return resultCalls.saveDrillResult({ runId: result.runId, result, owner: currentClaimant() });
    },
    undo: drill.undo,
    undoing: () => drill.step('teardown'),
  });
  board.setPercent(100);
  upsertSearchAttributes(searchAttributes({ status: result.status }));
  board.setStage(result.status);
  if (outcome.failure) throw outcome.failure;
  if (result.status !== 'passed')
    throw ApplicationFailure.nonRetryable(`${result.kind.replace('-', ' ')} ${result.runId} failed: ${result.verdict}\nresults: ${outcome.location}`, FAILURE_TYPES.verification);
  return { runId: result.runId, kind: result.kind, status: result.status, verdict: result.verdict, location: outcome.location, figures: drill.figures(result) };
}

/** The summary of a child drill that failed: its verdict here, its figures in the result.json it saved itself. */
export function failedDrillSummary(workflowId: string, kind: DrillSummary['kind'], message: string, figures: DrillSummary['figures'] = {}): DrillSummary {
  // The location is filled in by the results store.
  return { runId: workflowId, kind, status: 'failed', verdict: `failed: ${message}`, location: '', figures };
}
