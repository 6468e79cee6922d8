/**
 * Child runs as every parent runs them (an experiment's clusters and drills, a tool comparison's drills): shown on
 * the board, started with ParentClosePolicy.REQUEST_CANCEL, a failure recorded and the others still run. A child
 * undoes what it made itself: a cancelled parent's child is cancelled with it and the parent waits for the child's
 * compensation (the default WAIT_CANCELLATION_COMPLETED); a terminated parent's child is asked to cancel, and the
 * sweeper covers the rest.
 */
import { ParentClosePolicy, executeChild, isCancellation } from '@temporalio/workflow';
import { failureMessage } from './failures';
import type { ProgressBoard } from './progress';

/** A child run as the board shows it. */
export interface ChildRun {
  workflowId: string;
  label: string;
}

/** Why a child did not return: its failure's first line (the child saved its own result before its teardown). */
export interface ChildFailure {
  message: string;
  /** The parent was cancelled (and the child with it). */
  cancelled: boolean;
}

/** Shows the children a run will start, waiting. */
export function showChildren(board: ProgressBoard, children: ChildRun[]): void {
  for (const c of children) board.child(c.workflowId, c.label, 'waiting');
}

/**
 * Runs one child to its end and returns its value, or undefined when it failed: the failure is on the board and
 * handed to `failed`. A cancellation is handed over too, then raised again, so the parent stops as well.
 */
export async function runChild<I, R>(
  board: ProgressBoard,
  child: ChildRun,
  workflow: (input: I) => Promise<R>,
  input: I,
  failed: (failure: ChildFailure) => void = () => undefined,
): Promise<R | undefined> {
  board.child(child.workflowId, child.label, 'running');
  try {
    const value = await executeChild(workflow, { workflowId: child.workflowId, args: [input], parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL });
    board.child(child.workflowId, child.label, 'done');
    return value;
  } catch (err) {
    const failure = { message: failureMessage(err).split('\n')[0], cancelled: isCancellation(err) };
    board.child(child.workflowId, child.label, 'failed');
    if (!failure.cancelled) board.fail(`${child.label}: ${failure.message}`);
    failed(failure);
    if (failure.cancelled) throw err;
    return undefined;
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
