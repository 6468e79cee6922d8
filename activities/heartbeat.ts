/**
 * Heartbeats for activities that do not report progress themselves (provider calls, results, teardown): while
 * one runs, its worker heartbeats every few seconds. A worker that dies (kill -9, a lost machine) then stops
 * heartbeating, and Temporal retries the activity elsewhere after the heartbeat timeout instead of waiting out a
 * start-to-close timeout of up to 30 minutes.
 */
import { Context } from '@temporalio/activity';
import { every } from './progress';

/** How often a running activity says it is alive (the SDK forwards at most one heartbeat per 0.8 x timeout). */
export const KEEP_ALIVE_INTERVAL_MS = 2_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- activities take any arguments
type ActivityFn = (...args: any[]) => Promise<unknown>;

/** The same activities, each heartbeating while it runs. */
export function keepAlive<T extends Record<string, ActivityFn>>(activities: T, intervalMs = KEEP_ALIVE_INTERVAL_MS): T {
  const wrapped: Record<string, ActivityFn> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args) => {
      const ctx = Context.current();
      const stop = every(intervalMs, () => ctx.heartbeat());
      try {
        return await fn(...args);
      } finally {
        stop();
      }
    };
  }
  return wrapped as T;
}
