/**
 * The per-transaction latency breakdown, as the reference shows it: the mean latency apportioned by the shares of
 * sampled wait events of active workload backends. Pure; workflows, aggregation and the report share it.
 */

/** The breakdown's parts; the first four are named as in the reference's latencyBreakdownMs. */
export const BREAKDOWN_KEYS = ['pageReads', 'walFsync', 'lockAndScheduler', 'cpu', 'other'] as const;
export type BreakdownKey = (typeof BREAKDOWN_KEYS)[number];
export type LatencyBreakdown = Record<BreakdownKey, number>;

/** How each part is labelled in reports. */
export const BREAKDOWN_LABELS: Record<BreakdownKey, string> = {
  pageReads: 'page reads (IO:DataFileRead)',
  walFsync: 'WAL write/fsync at commit (and synchronous standbys)',
  lockAndScheduler: 'locks and LWLocks',
  cpu: 'CPU (no wait event)',
  other: 'other waits (e.g. IO:DataFileWrite)',
};

/** The name the sampler gives an active backend with no wait event. */
export const CPU_EVENT = 'CPU';

/** The wait event of a commit waiting for its synchronous standbys to flush its WAL. */
export const SYNC_REP_EVENT = 'IPC:SyncRep';

/** Which part of the breakdown a sampled wait event ("Type:Event", or "CPU") belongs to. */
export function breakdownKeyOf(event: string): BreakdownKey {
  if (event === CPU_EVENT) return 'cpu';
  const [type, name = ''] = event.split(':');
  if (type === 'IO' && (name === 'DataFileRead' || name === 'DataFilePrefetch')) return 'pageReads';
  // WAL writes and flushes, and the LWLocks a commit waits on while another backend flushes (WALWrite, WALInsert).
  // PostgreSQL 17 renamed the IO events (IO:WALSync became IO:WalSync), so the prefix is matched in any case.
  if ((type === 'IO' || type === 'LWLock') && /^wal/i.test(name)) return 'walFsync';
  // A commit waiting for its synchronous standbys to flush the same WAL: the rest of its commit wait.
  if (event === SYNC_REP_EVENT) return 'walFsync';
  if (type === 'Lock' || type === 'LWLock') return 'lockAndScheduler';
  return 'other';
}

/** Sample counts per breakdown part. */
export function breakdownCounts(waitEvents: Record<string, number>): LatencyBreakdown {
  const counts = Object.fromEntries(BREAKDOWN_KEYS.map((k) => [k, 0])) as LatencyBreakdown;
  for (const [event, n] of Object.entries(waitEvents)) counts[breakdownKeyOf(event)] += n;
  return counts;
}

/**
 * Mean latency apportioned by wait shares: each part is mean × its share of the active samples, so the parts sum
 * to the mean. Null without samples (nothing to apportion by).
 */
export function latencyBreakdown(meanMs: number, waitEvents: Record<string, number>): LatencyBreakdown | null {
  const counts = breakdownCounts(waitEvents);
  const total = BREAKDOWN_KEYS.reduce((s, k) => s + counts[k], 0);
  if (total === 0) return null;
  return Object.fromEntries(BREAKDOWN_KEYS.map((k) => [k, (meanMs * counts[k]) / total])) as LatencyBreakdown;
}

/** Shares (0-1) of samples per wait event type ("IO", "LWLock", "Lock", "CPU", ...); they sum to 1. */
export function waitClassShares(waitEvents: Record<string, number>): Record<string, number> {
  const byClass: Record<string, number> = {};
  let total = 0;
  for (const [event, n] of Object.entries(waitEvents)) {
    const cls = event.split(':')[0];
    byClass[cls] = (byClass[cls] ?? 0) + n;
    total += n;
  }
  if (total === 0) return {};
  return Object.fromEntries(Object.entries(byClass).map(([k, v]) => [k, v / total]));
}

/** Share (0-1) of samples on one wait event, e.g. "IO:DataFileRead"; 0 without samples. */
export function eventShare(waitEvents: Record<string, number>, event: string): number {
  const total = Object.values(waitEvents).reduce((s, n) => s + n, 0);
  return total === 0 ? 0 : (waitEvents[event] ?? 0) / total;
}

/** Sum of the parts of a breakdown. */
export function breakdownTotal(b: Partial<Record<BreakdownKey, number>>): number {
  return BREAKDOWN_KEYS.reduce((s, k) => s + (b[k] ?? 0), 0);
}
