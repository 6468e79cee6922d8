/**
 * The backlog phase, host half (its workflow-safe half is common/phases/backlog.ts): a publication and a pgoutput slot; the spec's workload (pgbench) writes
 * while no consumer is connected, until the slot holds the requested WAL back (pg_wal_lsn_diff); then a real
 * consumer (pg_recvlogical) drains the slot up to that LSN, and the phase times it: seconds and MB/s.
 * The slot and publication are dropped afterwards, on failure too, and a retry first drops what an earlier attempt left.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from 'pg';
import type { BacklogPhaseInput, BacklogPhaseResult } from '../../../common/phases/backlog';
import { FAILURE_TYPES } from '../../../common/core/errors';
import { lsnDiff } from '../../../common/core/lsn';
import { LAB_DATABASE } from '../../../common/core/names';
import { clientTool } from '../../../lib/postgres-binaries';
import { connectLocal, libpqEnv } from '../../../lib/pg';
import { runProcess } from '../../../lib/process-runner';
import { every, progressReporter, StepProgress } from '../../progress';
import { asPostgresUser, assertHost, type HostDeps } from '../deps';
import { stopLeftovers } from '../leftovers';
import { refuseScript, startWorkload } from '../pgbench';
import { HostCounters } from '../../../lib/sampler';

const SLOT = 'storage_lab_backlog';
const PUBLICATION = 'storage_lab_backlog';
const PLUGIN = 'pgoutput';
const MB = 2 ** 20;
const POLL_MS = 200;
/** A workload that adds less WAL than this in a window writes nothing worth a backlog (checkpoints add a little). */
const NO_WAL_WINDOW_MS = 30_000;
const MIN_WAL_PER_WINDOW = 2 ** 20;

export async function runBacklogPhase(deps: HostDeps, input: BacklogPhaseInput): Promise<BacklogPhaseResult> {
  assertHost(deps, input);
  refuseScript(deps, input.script);
  if (!(input.backlogMB > 0))
    throw ApplicationFailure.nonRetryable('phases.backlog.backlogMB must be positive', FAILURE_TYPES.invalidSpec);
  const ctx = Context.current();
  const report = progressReporter(input.hostId, 'backlog');
  const requested = Math.round(input.backlogMB * MB);
  // A retry after the agent died may find the earlier attempt's workload or consumer still running: stop them first.
  const cleanup = await stopLeftovers(deps);
  const db = await connectLocal(deps.config, { applicationName: 'storage-lab backlog phase' });
  try {
    const walLevel = (await db.query<{ v: string }>("SELECT current_setting('wal_level') AS v")).rows[0].v;
    if (walLevel !== 'logical')
      throw ApplicationFailure.nonRetryable(
        `the backlog phase needs wal_level = logical, the server has ${walLevel}; remove postgres.settings.wal_level from the spec (the lab sets it when phases.backlog.enabled)`,
        FAILURE_TYPES.invalidSpec,
      );
    await dropSlotAndPublication(db);
    // Preparation (the checkpoint, writing the backlog) runs with the host's emulated I/O cap lifted (lib/io-cap.ts);
    // the cap is back before the drain, also when the preparation fails. No CHECKPOINT after the fill: the WAL is
    // flushed at every commit, and the dirty pages the workload left in shared_buffers are what a capped fill left
    // too; only a checkpoint (or the background writer's trickle) writes them during the drain. The page cache's dirty
    // pages are written before it (below). The drain reads the same WAL either way.
    const {
      value: { startLsn, fillSeconds },
      preparedWithoutCap,
    } = await deps.ioCap.prepare(async () => {
      // From a checkpoint, the first change to each page logs a full-page image, as nearly every random update does
      // on a table far larger than memory; a tiny table then yields the same kind of WAL.
      const stopBeat = every(2_000, () => report({ percent: 0, detail: { step: 'checkpoint' } }));
      await db.query('CHECKPOINT').finally(stopBeat);
      await db.query(`CREATE PUBLICATION ${PUBLICATION} FOR ALL TABLES`);
      await db.query('SELECT pg_create_logical_replication_slot($1, $2)', [SLOT, PLUGIN]);
      const startLsn = (await slotState(db)).confirmedFlushLsn;

      // Fill: the workload runs with no consumer until the slot holds the requested WAL back.
      const fillStarted = Date.now();
      const fill = new StepProgress('writing backlog', 'bytes');
      await fillBacklog(deps, db, input, requested, (retained) => {
        // The fill's own ETA; the drain after it has none until it runs, so the phase has none yet.
        const { eta, measure } = fill.read(retained, requested);
        report({
          percent: Math.min(49, Math.round((50 * retained) / requested)),
          measure,
          detail: { step: 'writing backlog', backlogMB: Math.round(retained / MB), requestedMB: Math.round(requested / MB), ...(eta !== undefined ? { stepEtaSeconds: eta } : {}) },
        });
      });
      const fillSeconds = (Date.now() - fillStarted) / 1000;
      // The fill's evictions and writes left dirty pages in the host's page cache. The kernel writes a dirty page
      // out 30 s after it was dirtied, so, left alone, they reach the capped device during the drain and take its
      // budget: 319 to 1,596 writes a second in local-quick's gp3 drains, which took 8.7 to 13.5 s with the same
      // backlog (2026-12-05). Written here, uncapped, the drain reads its backlog against the same device every run.
      await runProcess('sync', ['--file-system', deps.config.dataDir], { timeoutMs: 10 * 60_000 });
      return { startLsn, fillSeconds };
    });
    const target = await slotState(db);
    const targetLsn = target.currentLsn;
    const backlogBytes = Number((await db.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2) AS d', [targetLsn, startLsn])).rows[0].d);
    const reachedBeforeDrain = target.retainedBytes >= requested;
    if (!reachedBeforeDrain)
      throw new Error(`the slot held ${target.retainedBytes} bytes back, fewer than the ${requested} asked for; not draining`);

    // Drain: a real consumer from the slot's position to the target LSN, timed until it confirms the target.
    const counters = new HostCounters(deps.config);
    const window = counters.window();
    const drainStarted = Date.now();
    const drain = new StepProgress('draining', 'bytes');
    const stopProgress = every(1_000, () => {
      void slotState(db)
        .then((s) => {
          const done = Math.max(0, backlogBytes - Math.max(0, s.lagToTarget(targetLsn)));
          const { eta, measure } = drain.read(done, backlogBytes);
          report({
            percent: 50 + Math.min(49, Math.round((50 * done) / Math.max(1, backlogBytes))),
            etaSeconds: eta,
            measure,
            detail: { step: 'draining', drainedMB: Math.round(done / MB), backlogMB: Math.round(backlogBytes / MB) },
          });
        })
        .catch(() => undefined);
    });
    try {
      await runProcess(
        clientTool(deps.config, 'pg_recvlogical'),
        [
          '--dbname', LAB_DATABASE,
          '--slot', SLOT,
          '--start',
          `--endpos=${targetLsn}`,
          '--file', '/dev/null',
          '--fsync-interval', '0',
          '--status-interval', '1',
          '--option', 'proto_version=1',
          '--option', `publication_names=${PUBLICATION}`,
          '--no-loop',
        ],
        // The lab's consumer, not the spec's: it connects as the lab's role, so it runs as the Postgres user (peer map).
        { ...asPostgresUser(deps), env: libpqEnv(deps.config), cwd: deps.config.hostDir, signal: ctx.cancellationSignal },
      );
    } finally {
      stopProgress();
    }
    const drainSeconds = (Date.now() - drainStarted) / 1000;
    const host = window.end();
    const done = await db.query<{ lsn: string; reached: boolean }>(
      'SELECT confirmed_flush_lsn::text AS lsn, confirmed_flush_lsn >= $2::pg_lsn AS reached FROM pg_replication_slots WHERE slot_name = $1',
      [SLOT, targetLsn],
    );
    if (!done.rows[0]?.reached)
      throw new Error(`pg_recvlogical exited but the slot confirmed only ${done.rows[0]?.lsn}, not the target ${targetLsn}`);
    report({ percent: 100, detail: { step: 'done', drainSeconds: Math.round(drainSeconds * 10) / 10 } });
    return {
      slot: SLOT,
      ...(cleanup ? { cleanup } : {}),
      plugin: PLUGIN,
      publication: PUBLICATION,
      requestedBytes: requested,
      startLsn,
      targetLsn,
      backlogBytes,
      retainedBytes: target.retainedBytes,
      reachedBeforeDrain,
      preparedWithoutCap,
      fillSeconds,
      drainSeconds,
      drainMBps: backlogBytes / MB / drainSeconds,
      confirmedFlushLsn: done.rows[0].lsn,
      consumer: 'pg_recvlogical (pgoutput, proto_version 1)',
      device: host.device,
      cpu: host.cpu,
    };
  } finally {
    await dropSlotAndPublication(db).catch(() => undefined);
    await db.end().catch(() => undefined);
  }
}

interface SlotState {
  confirmedFlushLsn: string;
  currentLsn: string;
  /** pg_current_wal_lsn() - restart_lsn: the WAL the slot holds back. */
  retainedBytes: number;
  lagToTarget(targetLsn: string): number;
}

async function slotState(db: Client): Promise<SlotState> {
  const r = await db.query<{ confirmed: string; current: string; retained: string }>(
    `SELECT confirmed_flush_lsn::text AS confirmed, pg_current_wal_lsn()::text AS current,
            pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) AS retained
       FROM pg_replication_slots WHERE slot_name = $1`,
    [SLOT],
  );
  const row = r.rows[0];
  if (!row) throw new Error(`replication slot ${SLOT} is gone`);
  const confirmed = row.confirmed;
  return {
    confirmedFlushLsn: confirmed,
    currentLsn: row.current,
    retainedBytes: Number(row.retained),
    lagToTarget: (targetLsn) => lsnDiff(targetLsn, confirmed),
  };
}

/** Runs the workload until the slot retains `requested` bytes, then stops it and waits for its backends to go. */
async function fillBacklog(
  deps: HostDeps,
  db: Client,
  input: BacklogPhaseInput,
  requested: number,
  onProgress: (retained: number) => void,
): Promise<void> {
  const ctx = Context.current();
  const workload = startWorkload(deps, db, { label: 'backlog', ...input });
  const window = { at: Date.now(), bytes: 0 };
  try {
    for (;;) {
      const { retainedBytes } = await slotState(db);
      onProgress(retainedBytes);
      if (retainedBytes >= requested) break;
      // A workload that writes (nearly) no WAL would never fill the backlog: say so instead of waiting forever.
      if (Date.now() - window.at >= NO_WAL_WINDOW_MS) {
        if (retainedBytes - window.bytes < MIN_WAL_PER_WINDOW)
          throw ApplicationFailure.nonRetryable(
            `workload.script wrote ${retainedBytes - window.bytes} bytes of WAL in ${NO_WAL_WINDOW_MS / 1000} s: the backlog phase needs a workload that writes (INSERT, UPDATE, DELETE); change the script or set phases.backlog.enabled to false`,
            FAILURE_TYPES.invalidSpec,
          );
        Object.assign(window, { at: Date.now(), bytes: retainedBytes });
      }
      const ended = workload.ended();
      if (ended) throw new Error(`the workload ended before the slot held ${requested} bytes back: ${await ended}`);
      if (ctx.cancellationSignal.aborted) throw new Error('backlog phase cancelled');
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    await workload.stop();
  }
}

/** Drops the phase's slot (ending a consumer still attached to it) and its publication, if they exist. */
async function dropSlotAndPublication(db: Client): Promise<void> {
  await db.query(`DROP PUBLICATION IF EXISTS ${PUBLICATION}`);
  for (let i = 0; ; i++) {
    const r = await db.query<{ active_pid: number | null }>('SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1', [SLOT]);
    if (r.rowCount === 0) return;
    const pid = r.rows[0].active_pid;
    if (pid === null) {
      await db.query('SELECT pg_drop_replication_slot($1)', [SLOT]);
      return;
    }
    if (i >= 50) throw new Error(`replication slot ${SLOT} is still in use by pid ${pid}`);
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    await new Promise((res) => setTimeout(res, 100));
  }
}
