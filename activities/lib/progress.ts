/**
 * Progress from a long activity: every report is a heartbeat (the UI shows pending activities' last heartbeat
 * details, and a stuck agent is caught by the heartbeat timeout), and every few seconds also a signal to the
 * workflow, so its progress query and the UI's "current details" can show percent, ETA and the latest figures.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { phaseProgressSignal, type PhaseProgress } from '../../common/messages';

export type ProgressUpdate = Omit<PhaseProgress, 'hostId' | 'phase' | 'at'>;
export type ReportProgress = (update: ProgressUpdate) => void;

/** Seconds between progress signals: often enough for a person, rare enough for the workflow history. */
const SIGNAL_INTERVAL_MS = 5_000;

/** A reporter for one phase of one host; `client` is null where no signal can be sent (unit tests). */
export function progressReporter(client: Client | null, hostId: string, phase: string): ReportProgress {
  let lastSignal = 0;
  return (update) => {
    const ctx = Context.current();
    const progress: PhaseProgress = { hostId, phase, ...update, at: new Date().toISOString() };
    ctx.heartbeat(progress);
    const now = Date.now();
    const workflowId = ctx.info.workflowExecution?.workflowId;
    if (!client || !workflowId || now - lastSignal < SIGNAL_INTERVAL_MS) return;
    lastSignal = now;
    client.workflow
      .getHandle(workflowId)
      .signal(phaseProgressSignal, progress)
      .catch(() => undefined); // Progress is best effort: the workflow may have moved on.
  };
}

/**
 * Runs fn while heartbeating `{ phase }` every few seconds, for steps that report nothing themselves (a backup, a
 * restore, pg_amcheck): a dead agent is still noticed by the heartbeat timeout. fn gets the cancellation signal.
 */
export async function heartbeatWhile<T>(phase: string, fn: (signal: AbortSignal) => Promise<T>, ms = 5_000): Promise<T> {
  const ctx = Context.current();
  const stop = every(ms, () => ctx.heartbeat({ phase }));
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    stop();
  }
}

/** Calls `tick` every `ms` until the returned stop function is called. */
export function every(ms: number, tick: () => void): () => void {
  const timer = setInterval(tick, ms);
  return () => clearInterval(timer);
}

/** Seconds left at the current rate, or undefined before there is a rate. */
export function etaSeconds(done: number, total: number, elapsedSeconds: number): number | undefined {
  if (done <= 0 || elapsedSeconds <= 0) return undefined;
  return Math.max(0, Math.round(((total - done) * elapsedSeconds) / done));
}
