/**
 * Cross-checks of a TPS run from independent measurements: the same quantity seen two ways, each within a stated
 * tolerance, so a sampler that misses backends, a server statistic that was not timed, or a run disturbed from
 * outside shows up as a failed check instead of a confident figure. Pure; unit tests feed each one data that fails.
 *
 * - page-read time per transaction: the wait-event samples (backends seen in IO:DataFileRead, times the window)
 *   vs the server's own read timing (pg_stat_io's client backends on 16+, else pg_stat_database.blk_read_time,
 *   track_io_timing = on);
 * - WAL time per transaction: the samples in IO:WALWrite / IO:WALSync vs pg_stat_wal's write and sync time
 *   (track_wal_io_timing = on); the server's figure also counts the WAL writer, so the samples may be lower;
 * - server occupancy (Little's law on the server): average active workload backends / TPS vs pgbench's mean latency.
 */
import type { SamplerReadings } from '../common/results/sampler-readings';
import type { Check } from '../common/results/check';
import type { TpsRun } from '../common/results/result';

/** Two estimates of a per-transaction time agree when within this share of the larger one... */
export const CROSS_CHECK_TOLERANCE = 0.25;
/** ...or within this many ms (both near zero: a data set in memory reads almost nothing). */
export const CROSS_CHECK_FLOOR_MS = 0.05;
/** Server time per transaction from the samples may differ from the client's latency by this share... */
export const OCCUPANCY_TOLERANCE = 0.15;
/**
 * ...or by this many ms: each transaction's round trip through the client (socket, pgbench's own work, scheduling)
 * is outside the server whatever the latency; measured 0.31-0.38 ms here (2 cores, 8 clients, unix socket).
 */
export const OCCUPANCY_FLOOR_MS = 0.5;

/**
 * pgbench's clients spent more than this share of the latency between transactions: the load generator was short
 * of CPU (the "load generator kept up" warning), and then part of each transaction's latency is pgbench waiting for
 * the CPU too, outside the server.
 */
export const LOAD_GENERATOR_GAP_SHARE = 0.05;

/** The clients' own time between transactions as a share of the mean latency (pgbench's per-transaction log). */
export function clientGapShare(run: Pick<TpsRun, 'clientGapMs' | 'latencyMs'>): number {
  return run.latencyMs.mean > 0 ? (run.clientGapMs ?? 0) / run.latencyMs.mean : 0;
}

/** The wait events of a backend writing or flushing WAL itself, in the names of every supported major. */
export const WAL_IO_EVENTS = ['IO:WALWrite', 'IO:WALSync', 'IO:WalWrite', 'IO:WalSync'];

export function sampledMsPerTransaction(d: SamplerReadings, events: string[], transactions: number): number {
  if (d.samples === 0 || transactions === 0) return 0;
  const seen = events.reduce((s, e) => s + (d.waitEvents[e] ?? 0), 0);
  return ((seen / d.samples) * d.seconds * 1000) / transactions;
}

/** The two figures agree: within the tolerance of the larger, or both within the floor. */
function agree(a: number, b: number): boolean {
  return Math.abs(a - b) <= Math.max(CROSS_CHECK_TOLERANCE * Math.max(a, b), CROSS_CHECK_FLOOR_MS);
}

const ms = (v: number) => (v < 1 ? v.toFixed(3) : v.toFixed(2));

export function crossChecks(scope: string, run: TpsRun, d: SamplerReadings): Check[] {
  const checks: Check[] = [];
  const tx = run.transactions;
  const tolerance = `tolerance ${CROSS_CHECK_TOLERANCE * 100} % or ${CROSS_CHECK_FLOOR_MS} ms`;

  const sampledReads = sampledMsPerTransaction(d, ['IO:DataFileRead'], tx);
  const clientIo = d.io?.['client backend'];
  const serverReads = (clientIo ? clientIo.readTimeMs : d.database.blkReadTimeMs) / Math.max(1, tx);
  const readSource = clientIo ? "pg_stat_io (client backends' read_time)" : 'pg_stat_database.blk_read_time';
  const readsTimed = d.database.blksRead === 0 || d.database.blkReadTimeMs > 0;
  checks.push({
    name: 'page-read time: samples vs server',
    scope,
    ok: readsTimed && agree(sampledReads, serverReads),
    detail: readsTimed
      ? `${ms(sampledReads)} ms per transaction in IO:DataFileRead from the wait-event samples vs ${ms(serverReads)} ms from ${readSource} (${tolerance})`
      : `${d.database.blksRead} blocks read but no read time recorded: track_io_timing is off, so the samples cannot be checked`,
  });

  const wal = d.wal;
  if (wal) {
    const syncs = wal.wal_sync ?? 0;
    const walTimed = syncs === 0 || (wal.wal_sync_time ?? 0) > 0;
    // Up to 16 the events are IO:WALWrite and IO:WALSync; 17 renamed them IO:WalWrite and IO:WalSync.
    const sampledWal = sampledMsPerTransaction(d, WAL_IO_EVENTS, tx);
    const serverWal = ((wal.wal_write_time ?? 0) + (wal.wal_sync_time ?? 0)) / Math.max(1, tx);
    // The WAL writer's own writes and syncs are in the server's figure, not in the client backends' samples.
    const ok = walTimed && (agree(sampledWal, serverWal) || (sampledWal <= serverWal && sampledWal >= (1 - 2 * CROSS_CHECK_TOLERANCE) * serverWal));
    checks.push({
      name: 'WAL time: samples vs server',
      scope,
      ok,
      detail: walTimed
        ? `${ms(sampledWal)} ms per transaction in IO:WALWrite/IO:WALSync (IO:WalWrite/IO:WalSync on 17) from the wait-event samples vs ${ms(serverWal)} ms of WAL write + sync time in pg_stat_wal (${syncs} syncs; ${tolerance}, or up to ${2 * CROSS_CHECK_TOLERANCE * 100} % below: the WAL writer's share is the server's only)`
        : `${syncs} WAL syncs but no sync time recorded: track_wal_io_timing is off, so the samples cannot be checked`,
    });
  }

  // Little's law on the server side: backends active on average = TPS × time each transaction spends in the server.
  const serverMs = run.tps > 0 ? (1000 * d.avgActiveSessions) / run.tps : 0;
  const outsideMs = run.latencyMs.mean - serverMs;
  const outside = run.latencyMs.mean > 0 ? outsideMs / run.latencyMs.mean : 0;
  const ok = Math.abs(outsideMs) <= Math.max(OCCUPANCY_TOLERANCE * run.latencyMs.mean, OCCUPANCY_FLOOR_MS);
  // More time outside the server than the tolerance, with pgbench short of CPU: the client's own wait explains it, so
  // it is a warning that says so. Less time outside than inside, or with pgbench keeping up, stays an error.
  const clientShort = !ok && outsideMs > 0 && clientGapShare(run) > LOAD_GENERATOR_GAP_SHARE;
  checks.push({
    name: 'server occupancy matches the latency',
    scope,
    ok,
    ...(clientShort ? { severity: 'warning' as const } : {}),
    detail: `${d.avgActiveSessions.toFixed(1)} active workload backends on average / ${run.tps.toFixed(0)} TPS = ${ms(serverMs)} ms in the server per transaction vs ${ms(run.latencyMs.mean)} ms mean latency from pgbench's log (${ms(outsideMs)} ms, ${(outside * 100).toFixed(0)} %, outside the server; tolerance ${OCCUPANCY_TOLERANCE * 100} % or ${OCCUPANCY_FLOOR_MS} ms)${clientShort ? `: pgbench was short of CPU (its clients spent ${(clientGapShare(run) * 100).toFixed(0)} % of the latency between transactions), so part of each latency is the client waiting for a core` : ''}`,
  });
  return checks;
}
