/**
 * What makes a measured attempt unusable even though the tool exited cleanly. Pure; the cluster workflow decides
 * with it whether an attempt is kept or recorded as failed and measured again.
 */

/** Consecutive seconds without a single transaction that make a TPS run stalled (a frozen server, not slow storage). */
export const STALL_SECONDS = 5;

/**
 * The longest stretch of seconds in which not one transaction completed, if it is at least STALL_SECONDS long:
 * the server (or the host) stopped, so the run measures the stop, not the storage. Slow storage still completes
 * some of 8-64 clients' transactions every second. Seconds are 1-based, as pgbench's progress counts them.
 */
export function tpsStall(tpsSeries: number[]): { from: number; to: number; seconds: number } | null {
  let best: { from: number; to: number; seconds: number } | null = null;
  let start = -1;
  for (let i = 0; i <= tpsSeries.length; i++) {
    const idle = i < tpsSeries.length && tpsSeries[i] === 0;
    if (idle && start < 0) start = i;
    if (!idle && start >= 0) {
      const seconds = i - start;
      if (seconds >= STALL_SECONDS && (!best || seconds > best.seconds)) best = { from: start + 1, to: i, seconds };
      start = -1;
    }
  }
  return best;
}
