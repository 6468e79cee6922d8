/**
 * The one compensation skeleton of every workflow that makes or measures things (cluster, both drills, the
 * experiment): run the plan; whatever happens to it (a failure, a cancellation), save what was measured first,
 * so nothing measured is lost, then tear down what was made, in a non-cancellable scope. Compensation errors are
 * recorded on the board and returned, never swallowed. A continue-as-new passes through untouched: the run goes on
 * in the next execution, which compensates in its turn.
 */
import { CancellationScope, ContinueAsNew, isCancellation } from '@temporalio/workflow';
import { failureMessage } from './failures';
import type { ProgressBoard } from './progress';

export type PlanStatus = 'ok' | 'failed' | 'cancelled';

export interface Compensation {
  /** Records the plan's failure in the result before it is saved (status, error, verdict). */
  failed?(err: unknown, status: Exclude<PlanStatus, 'ok'>): void;
  /** Saves what the run measured; returns where it is. */
  save(): Promise<string>;
  /** Tears down what the run made, trying every part; returns what failed. */
  teardown(): Promise<string[]>;
}

export interface PlanOutcome<T> {
  value: T | undefined;
  status: PlanStatus;
  /** The plan's failure, else the save's: what the workflow raises after compensating. */
  failure: unknown;
  /** Where the results were saved ('' when saving failed). */
  location: string;
  /** What failed while compensating (also on the board). */
  errors: string[];
}

export async function runCompensated<T>(board: ProgressBoard, plan: () => Promise<T>, compensation: Compensation): Promise<PlanOutcome<T>> {
  let value: T | undefined;
  let failure: unknown;
  let status: PlanStatus = 'ok';
  try {
    value = await plan();
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    failure = err;
    status = isCancellation(err) ? 'cancelled' : 'failed';
    board.fail(failureMessage(err).split('\n')[0]);
    compensation.failed?.(err, status);
  }
  return CancellationScope.nonCancellable(async () => {
    const errors: string[] = [];
    let location = '';
    try {
      location = await compensation.save();
    } catch (err) {
      failure ??= err;
      errors.push(`saving results failed: ${failureMessage(err)}`);
    }
    errors.push(...(await compensation.teardown()));
    for (const e of errors) board.fail(e);
    return { value, status, failure, location, errors };
  });
}
