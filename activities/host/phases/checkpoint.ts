/**
 * The checkpoint phase, host half (its workflow-safe half is common/phases/checkpoint.ts): with the spec's workload
 * running through it (or not), a CHECKPOINT on its own connection is timed. The buffers it wrote come from the stats
 * view, read until it has counted the checkpoint (the checkpointer reports its counters just after it wakes the
 * waiting backend); the dirty buffers before it from pg_buffercache; the device and the CPU from the host's counters
 * over the command; the TPS from pgbench's per-second progress, stamped with the epoch so each second is placed
 * against the command. Retry-safe: an attempt first stops what an earlier one left; a CHECKPOINT has nothing to undo.
 */
import { Context } from '@temporalio/activity';
import { performance } from 'node:perf_hooks';
import type { Client, QueryResult } from 'pg';
import type { CheckpointPhaseInput, CheckpointPhaseResult, CheckpointWorkload } from '../../../common/phases/checkpoint';
import { mean } from '../../../common/core/stats';
import { checkpointDeltas, type StatRow, type StatSnapshot } from '../../../lib/parsers/pg-stats';
import { connectLocal } from '../../../lib/pg';
import { HostCounters } from '../../../lib/sampler';
import { every, progressReporter, type ReportProgress } from '../../progress';
import { assertHost, type HostDeps } from '../deps';
import { stopLeftovers } from '../leftovers';
import { refuseScript, startWorkload, type BackgroundWorkload } from '../pgbench';

const MIB = 2 ** 20;
/** How long the stats view may take to count a finished checkpoint (it is a few milliseconds). */
const COUNTED_WAIT_MS = 10_000;
/** Beyond its seconds, how long the workload may take to print them (connecting, a slow first second). */
const PROGRESS_GRACE_MS = 30_000;
const POLL_MS = 50;

/** One second of pgbench's progress: when it ended (epoch seconds) and the TPS over it. */
interface Second {
  end: number;
  tps: number;
}

export async function runCheckpointPhase(deps: HostDeps, input: CheckpointPhaseInput): Promise<CheckpointPhaseResult> {
  assertHost(deps, input);
  if (input.workload) refuseScript(deps, input.script);
  const report = progressReporter(input.hostId, 'checkpoint');
  // An earlier attempt whose agent died may have left its pgbench or its CHECKPOINT's backend: stop them first.
  const cleanup = await stopLeftovers(deps);
  const db = await connectLocal(deps.config, { applicationName: 'storage-lab checkpoint phase' });
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_buffercache SCHEMA public');
    const server = (
      await db.query<{ version: number; block: number; buffers: string }>(
        "SELECT current_setting('server_version_num')::int AS version, current_setting('block_size')::int AS block, (SELECT setting FROM pg_settings WHERE name = 'shared_buffers') AS buffers",
      )
    ).rows[0];
    const seconds: Second[] = [];
    const workload = input.workload
      ? startWorkload(deps, db, { label: 'checkpoint', ...input, onProgress: (s) => seconds.push({ end: s.second, tps: s.tps }) })
      : null;
    try {
      if (workload) {
        // The lead: whole seconds of the workload before the CHECKPOINT (the first is its ramp-up).
        await waitFor(workload, () => seconds.length >= input.leadSeconds, input.leadSeconds, () =>
          report({ percent: Math.round((40 * seconds.length) / input.leadSeconds), detail: { step: 'workload before the CHECKPOINT', tps: seconds.at(-1)?.tps ?? 0 } }),
        );
      }
      const before = await checkpointStats(db, server.version);
      // The CHECKPOINT's own session is ready before the dirty buffers are counted, so that the count and the command
      // go out together on it: one query string, the count then the CHECKPOINT, run by the server back to back with
      // no round trip to this process between them. Opened between them (a backend started, two queries), it let a
      // workload at 6,282 TPS dirty some 4,000 more buffers on a loaded machine: the checkpoint wrote 118 % of the
      // count (the demo, 2026-12-05 15:14), where it writes 33-71 % of it otherwise (backends write the rest as they
      // evict); as two queries back to back on it, still 117 % once (26,119 of 22,375: a demo, 2026-12-06 06:10, the
      // machine's two cores full), the worker's reply and next send waiting for a core.
      const session = await checkpointSession(deps, db);
      let dirty: number;
      let startedAt: number;
      let checkpointSeconds: number;
      let host: ReturnType<ReturnType<HostCounters['window']>['end']>;
      const windowAt = performance.now();
      try {
        const window = new HostCounters(deps.config).window();
        ({ dirty, startedAt, checkpointSeconds } = await session.countDirtyThenCheckpoint(report));
        host = window.end();
      } finally {
        await session.end();
      }
      const windowSeconds = (performance.now() - windowAt) / 1000;
      const counters = await countedAfter(db, server.version, before);
      const start = startedAt / 1000;
      const end = start + checkpointSeconds;
      if (workload && input.tailSeconds > 0)
        await waitFor(workload, () => seconds.filter((s) => s.end - 1 >= end).length >= input.tailSeconds, input.tailSeconds, () =>
          report({ percent: 90, detail: { step: 'workload after the CHECKPOINT', tps: seconds.at(-1)?.tps ?? 0 } }),
        );
      report({ percent: 100, detail: { step: 'done', checkpointSeconds: Math.round(checkpointSeconds * 100) / 100 } });
      return {
        ...(cleanup ? { cleanup } : {}),
        serverVersionNum: server.version,
        statsView: server.version >= 170000 ? 'pg_stat_checkpointer' : 'pg_stat_bgwriter',
        blockBytes: server.block,
        sharedBuffers: Number(server.buffers),
        dirtyBuffersBefore: dirty,
        checkpointSeconds,
        counters,
        device: host.device,
        deviceWriteBytes: host.device ? host.device.writeMBps * MIB * windowSeconds : null,
        cpu: host.cpu,
        workload: workload ? throughTheCheckpoint(input.clients, seconds, start, end) : null,
      };
    } finally {
      await workload?.stop();
    }
  } finally {
    await db.end().catch(() => undefined);
  }
}

/**
 * The workload's seconds against the CHECKPOINT's [start, end] (epoch seconds): each progress line covers the second
 * that ends at its stamp. Before: whole seconds that ended by the start, the first (ramp-up) left out; during: every
 * second that overlaps the command; after: whole seconds that began after it ended.
 */
export function throughTheCheckpoint(clients: number, seconds: Second[], start: number, end: number): CheckpointWorkload {
  const before = seconds.filter((s) => s.end <= start).slice(1);
  const during = seconds.filter((s) => s.end > start && s.end - 1 < end);
  const after = seconds.filter((s) => s.end - 1 >= end);
  const tps = (xs: Second[]) => (xs.length ? mean(xs.map((s) => s.tps)) : null);
  const tpsBefore = tps(before) ?? 0;
  const tpsMinDuring = during.length ? Math.min(...during.map((s) => s.tps)) : null;
  return {
    clients,
    tpsBefore,
    tpsDuring: tps(during),
    tpsMinDuring,
    tpsAfter: tps(after),
    dip: tpsMinDuring !== null && tpsBefore > 0 ? 1 - tpsMinDuring / tpsBefore : null,
    series: seconds.map((s) => ({ at: Math.round((s.end - start) * 1000) / 1000, tps: s.tps })),
  };
}

/** Waits until `done`, heartbeating; fails when the workload ended by itself or its seconds never came. */
async function waitFor(workload: BackgroundWorkload, done: () => boolean, seconds: number, beat: () => void): Promise<void> {
  const ctx = Context.current();
  const deadline = Date.now() + seconds * 1000 + PROGRESS_GRACE_MS;
  for (let i = 0; !done(); i++) {
    const ended = workload.ended();
    if (ended) throw new Error(`the workload through the checkpoint ended by itself: ${await ended}`);
    if (ctx.cancellationSignal.aborted) throw new Error('checkpoint phase cancelled');
    if (Date.now() > deadline) throw new Error(`the workload printed no progress for ${seconds} s of it within ${seconds + PROGRESS_GRACE_MS / 1000} s`);
    if (i % 20 === 0) beat();
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * The CHECKPOINT's connection of its own, opened before anything is counted: its dirty-buffer count, then the command
 * (heartbeating while it runs), back to back; cancelled with the activity.
 */
async function checkpointSession(deps: HostDeps, monitor: Client) {
  const ctx = Context.current();
  const conn = await connectLocal(deps.config, { applicationName: 'storage-lab checkpoint' });
  let pid: number;
  try {
    // A CHECKPOINT whose agent died must not be waited for: the server checks its client's socket every second.
    await conn.query(`SET client_connection_check_interval = '1s'`);
    pid = (await conn.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  } catch (err) {
    await conn.end().catch(() => undefined);
    throw err;
  }
  const cancel = () => void monitor.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
  ctx.cancellationSignal.addEventListener('abort', cancel);
  return {
    /**
     * The dirty buffers, then the CHECKPOINT, in one query string (the simple protocol runs its statements in order,
     * with no round trip between them); the server's clock after the count and after the CHECKPOINT times it
     * (epoch ms at its start, seconds it took).
     */
    countDirtyThenCheckpoint: async (report: ReportProgress): Promise<{ dirty: number; startedAt: number; checkpointSeconds: number }> => {
      const started = Date.now();
      const stop = every(2_000, () => report({ percent: 50, detail: { step: 'CHECKPOINT', elapsedSeconds: Math.round((Date.now() - started) / 1000) } }));
      try {
        const results = (await conn.query(
          'SELECT count(*) FILTER (WHERE isdirty)::int AS n, extract(epoch FROM clock_timestamp())::float8 AS at FROM public.pg_buffercache; ' +
            'CHECKPOINT; SELECT extract(epoch FROM clock_timestamp())::float8 AS at',
        )) as unknown as QueryResult[];
        const at0 = Number(results[0].rows[0].at);
        const at1 = Number(results[2].rows[0].at);
        return { dirty: Number(results[0].rows[0].n), startedAt: at0 * 1000, checkpointSeconds: Math.max(0, at1 - at0) };
      } finally {
        stop();
      }
    },
    end: async (): Promise<void> => {
      ctx.cancellationSignal.removeEventListener('abort', cancel);
      await conn.end().catch(() => undefined);
    },
  };
}

/** The checkpoint counters: pg_stat_checkpointer from 17 (its columns' home since), pg_stat_bgwriter before. */
async function checkpointStats(db: Client, versionNum: number): Promise<StatSnapshot> {
  const r = await db.query<{ bgwriter: StatRow; checkpointer: StatRow | null }>(
    `SELECT (SELECT to_jsonb(b) FROM pg_stat_bgwriter b) AS bgwriter, ${versionNum >= 170000 ? '(SELECT to_jsonb(c) FROM pg_stat_checkpointer c)' : 'NULL'} AS checkpointer`,
  );
  return { db: {}, wal: null, io: null, ...r.rows[0] };
}

/**
 * The counters' deltas once the view has counted the checkpoint: the checkpointer reports them just after it wakes
 * the backend that waited, so the first reading can miss them. Past the wait, what was read is kept (and the phase's
 * check that one checkpoint was counted fails, saying so).
 */
async function countedAfter(db: Client, versionNum: number, before: StatSnapshot): Promise<CheckpointPhaseResult['counters']> {
  const deadline = Date.now() + COUNTED_WAIT_MS;
  for (;;) {
    const deltas = checkpointDeltas(before, await checkpointStats(db, versionNum))!;
    if (deltas.requested + deltas.timed > 0 || Date.now() > deadline) return deltas;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
