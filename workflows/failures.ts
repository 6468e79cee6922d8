/** Small helpers for reading failures in workflow code. */
import { TimeoutType } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, TimeoutFailure, rootCause } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../common/core/errors';
import { InvalidSpecError } from '../common/input/spec';

/** The innermost message of a failure chain (the SDK's rootCause): what actually went wrong, not "Activity task failed". */
export function failureMessage(err: unknown): string {
  return rootCause(err) ?? String(err);
}

/** Whether a failure is an activity that no worker picked up in time (its agent never came up). */
export function isScheduleToStartTimeout(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

/**
 * The ApplicationFailure an activity raised, instead of the "Activity task failed" wrapper: the workflow's own
 * failure then says what is wrong (a preflight problem naming the field), not where it happened.
 */
export function activityCause(err: unknown): unknown {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : err;
}

/** Whether a failure was declared final by the code that raised it (bad input, a verdict, ...). */
export function isNonRetryable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure && e.nonRetryable) return true;
  }
  return false;
}

/** Validates an input with `resolve`, or fails the workflow at once (non-retryable) with every problem named. */
export function resolveOrFail<S>(resolve: (input: unknown) => S, input: unknown): S {
  try {
    return resolve(input ?? {});
  } catch (err) {
    if (err instanceof InvalidSpecError)
      throw ApplicationFailure.create({ message: err.message, type: FAILURE_TYPES.invalidSpec, nonRetryable: true, details: err.problems });
    throw err;
  }
}
