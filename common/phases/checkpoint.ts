/**
 * The checkpoint phase, workflow-safe half: right after the TPS run, a CHECKPOINT is timed, with the buffers it wrote
 * (pg_stat_checkpointer on 17+, pg_stat_bgwriter before), the dirty buffers it found (pg_buffercache), the device's
 * IOPS and MiB/s while it ran, and, with a second pgbench running through it, the TPS before, during and after: the
 * dip gp3 users ask about first. The host half is activities/host/phases/checkpoint.ts.
 */
import { z } from 'zod';
import { median } from '../core/stats';
import { fmt } from '../core/format';
import type { LeftoverCleanup } from '../results/leftovers';
import type { CheckpointDeltas, CpuUsage, DeviceRates } from '../results/sampler-readings';
import { BOUND_BASE_SECONDS, BOUND_SAFETY, definePhase } from './kit';

const MIB = 2 ** 20;

/** The device must have written at least this share of the bytes the checkpoint says it wrote. */
export const DEVICE_WRITE_SHARE = 0.9;
/** A checkpoint writes the buffers dirty at its start: at most this much more than were counted just before it... */
export const DIRTY_TOLERANCE = 0.1;
/** ...plus those a running workload dirtied between the count and the checkpoint's start. */
export const DIRTY_SLACK_BUFFERS = 256;

const seconds = (min: number, max: number, what: string) =>
  z
    .number({ error: `must be a whole number (seconds ${what})` })
    .int({ error: `must be a whole number (seconds ${what})` })
    .min(min, { error: `must be at least ${min} (seconds ${what})` })
    .max(max, { error: `must be at most ${max} (seconds ${what})` });

export const CheckpointFragment = z
  .object({
    enabled: z.boolean(),
    /** A second pgbench (the spec's workload) runs through the checkpoint, so the TPS dip is measured. */
    workload: z.boolean({ error: 'must be true or false' }).default(true),
    /** Seconds of that pgbench before the CHECKPOINT: the TPS it dips from (its first second is ramp-up). */
    leadSeconds: seconds(2, 3_600, 'of workload before the CHECKPOINT').default(5),
    /** Seconds of that pgbench after the CHECKPOINT: the TPS it recovers to. */
    tailSeconds: seconds(0, 3_600, 'of workload after the CHECKPOINT').default(3),
  })
  .strict();
export type CheckpointFragment = z.output<typeof CheckpointFragment>;

export interface CheckpointPhaseInput {
  hostId: string;
  /** The spec's workload, run through the checkpoint when `workload` is set. */
  workload: boolean;
  scale: number;
  clients: number;
  threads: number;
  script: string;
  leadSeconds: number;
  tailSeconds: number;
}

/** One second of the workload through the checkpoint: its TPS, and when it ended, from the CHECKPOINT's start. */
export interface CheckpointSecond {
  at: number;
  tps: number;
}

/** The second pgbench through the checkpoint, from its per-second progress. */
export interface CheckpointWorkload {
  clients: number;
  /** Mean TPS of the whole seconds before the CHECKPOINT (the first, ramp-up, left out). */
  tpsBefore: number;
  /** Mean and lowest TPS of the seconds that overlap the CHECKPOINT; null when none does. */
  tpsDuring: number | null;
  tpsMinDuring: number | null;
  /** Mean TPS of the whole seconds after it; null without a tail. */
  tpsAfter: number | null;
  /** 1 - tpsMinDuring / tpsBefore: how far throughput fell at the worst second of the checkpoint. */
  dip: number | null;
  series: CheckpointSecond[];
}

/** A timed CHECKPOINT right after the TPS run. Buffers are of `blockBytes` each. */
export interface CheckpointPhaseResult {
  /** Leftovers of an earlier attempt that this one stopped first (absent: there were none). */
  cleanup?: LeftoverCleanup;
  serverVersionNum: number;
  /** Where the checkpoint's counters come from: pg_stat_checkpointer (17+) or pg_stat_bgwriter. */
  statsView: 'pg_stat_checkpointer' | 'pg_stat_bgwriter';
  blockBytes: number;
  sharedBuffers: number;
  /** Dirty buffers in shared_buffers just before the CHECKPOINT (pg_buffercache). */
  dirtyBuffersBefore: number;
  /** Wall seconds of the CHECKPOINT command. */
  checkpointSeconds: number;
  /** The stats view's deltas over the command: checkpoints counted, buffers written, write and sync time. */
  counters: CheckpointDeltas;
  /** The host's data device while the CHECKPOINT ran; null when its device is not known. */
  device: (DeviceRates & { name: string }) | null;
  /** Bytes the device wrote while the CHECKPOINT ran (its write rate over the command's seconds); null without a device. */
  deviceWriteBytes: number | null;
  cpu: CpuUsage | null;
  /** The pgbench that ran through it; null when the spec ran none. */
  workload: CheckpointWorkload | null;
}

/** Medians of a class's checkpoint phases. */
export interface CheckpointMedians {
  checkpointSeconds: number;
  buffersWritten: number;
  /** Bytes written by the checkpoint a second, in MiB. */
  writeMiBps: number;
  deviceWriteIops: number | null;
  dip: number | null;
  clusters: number;
}

const writtenBytes = (r: CheckpointPhaseResult) => r.counters.buffersWritten * r.blockBytes;
const present = (values: (number | null)[]) => values.filter((v): v is number => v !== null);
const pct = (share: number | null) => (share === null ? '–' : `${fmt(100 * share, 0)} %`);

const HEALTHY: CheckpointPhaseResult = {
  serverVersionNum: 170005,
  statsView: 'pg_stat_checkpointer',
  blockBytes: 8192,
  sharedBuffers: 4096,
  dirtyBuffersBefore: 2000,
  checkpointSeconds: 1.5,
  counters: { timed: 0, requested: 1, writeTimeMs: 900, syncTimeMs: 400, buffersWritten: 1980 },
  device: { name: 'loop7', readIops: 100, writeIops: 1500, readMBps: 1, writeMBps: 12, readLatencyMs: 0.5, writeLatencyMs: 2, utilization: 0.9 },
  deviceWriteBytes: 12 * MIB * 1.5,
  cpu: null,
  workload: {
    clients: 8,
    tpsBefore: 1000,
    tpsDuring: 700,
    tpsMinDuring: 500,
    tpsAfter: 980,
    dip: 0.5,
    series: [
      { at: -3, tps: 900 },
      { at: -2, tps: 1000 },
      { at: -1, tps: 1000 },
      { at: 0.2, tps: 500 },
      { at: 1.2, tps: 900 },
      { at: 2.2, tps: 980 },
    ],
  },
};

export const checkpointPhase = definePhase({
  name: 'checkpoint',
  title: 'a CHECKPOINT timed right after the TPS run, with the buffers it wrote, the device during it and the TPS dip',
  activity: 'runCheckpointPhase',
  fragment: CheckpointFragment,
  progressWeight: 2,
  input: (f, context, hostId): CheckpointPhaseInput => ({
    hostId,
    workload: f.workload,
    scale: context.scale,
    ...context.workload,
    leadSeconds: f.leadSeconds,
    tailSeconds: f.tailSeconds,
  }),
  summary: (f) => (f.workload ? `CHECKPOINT, timed, with pgbench through it (${f.leadSeconds} s before, ${f.tailSeconds} s after)` : 'CHECKPOINT, timed'),
  // At worst it writes all of shared_buffers at the storage's pace; the workload runs around it.
  boundSeconds: (f, context) =>
    BOUND_BASE_SECONDS + (f.workload ? f.leadSeconds + f.tailSeconds : 0) + Math.ceil((BOUND_SAFETY * context.sharedBuffersMiB) / context.storageMiBps),
  // The reference timed no checkpoint: half of shared_buffers dirty, written at the class's pace.
  estimateSeconds: (f, context) => (f.workload ? f.leadSeconds + f.tailSeconds : 0) + context.sharedBuffersMiB / 2 / context.storageMiBps,
  // It writes pages the data set already has, and WAL within max_wal_size.
  volumeBytes: () => 0,
  medians: (results: CheckpointPhaseResult[]): CheckpointMedians => {
    const dips = present(results.map((r) => r.workload?.dip ?? null));
    const iops = present(results.map((r) => r.device?.writeIops ?? null));
    return {
      checkpointSeconds: median(results.map((r) => r.checkpointSeconds))!,
      buffersWritten: median(results.map((r) => r.counters.buffersWritten))!,
      writeMiBps: median(results.map((r) => writtenBytes(r) / MIB / Math.max(r.checkpointSeconds, 1e-3)))!,
      deviceWriteIops: median(iops),
      dip: median(dips),
      clusters: results.length,
    };
  },
  checks: (scope, r) => {
    const written = r.counters.buffersWritten;
    const checks = [
      {
        // A timed checkpoint in the window, or a second one requested (max_wal_size reached), mixes its buffers in.
        name: 'the checkpoint alone in its window',
        scope,
        ok: r.counters.requested === 1 && r.counters.timed === 0,
        detail: `${r.statsView} counted ${r.counters.requested} requested and ${r.counters.timed} timed checkpoints while the CHECKPOINT ran (${fmt(r.checkpointSeconds, 2)} s)`,
      },
      {
        // It writes only buffers dirty at its start: the view's count against pg_buffercache's just before it.
        name: 'checkpoint wrote what was dirty',
        scope,
        ok: written <= r.dirtyBuffersBefore * (1 + DIRTY_TOLERANCE) + (r.workload ? DIRTY_SLACK_BUFFERS : 0),
        detail: `${written} buffers written of ${r.dirtyBuffersBefore} dirty just before (of ${r.sharedBuffers} in shared_buffers; tolerance ${DIRTY_TOLERANCE * 100} %${r.workload ? ` + ${DIRTY_SLACK_BUFFERS} the workload dirtied meanwhile` : ''})`,
      },
    ];
    if (r.device && r.deviceWriteBytes !== null)
      checks.push({
        name: "device saw the checkpoint's writes",
        scope,
        ok: r.deviceWriteBytes >= DEVICE_WRITE_SHARE * writtenBytes(r),
        detail: `${r.device.name} wrote ${fmt(r.deviceWriteBytes / MIB)} MiB while the checkpoint wrote ${fmt(writtenBytes(r) / MIB)} MiB of buffers (at least ${DEVICE_WRITE_SHARE * 100} % must reach the device)`,
      });
    return checks;
  },
  report: (clusters) => [
    '## Checkpoint after the TPS run',
    '',
    'A CHECKPOINT right after the TPS run, timed; with the workload running through it, the TPS it dips from and to.',
    '',
    '| host | CHECKPOINT (s) | dirty buffers before | written MiB (buffers) | write / sync (s) | device w IOPS / MiB/s during it | TPS before → lowest during → after | dip |',
    '|---|---|---|---|---|---|---|---|',
    ...clusters.map(({ hostId, result: r }) => {
      const w = r.workload;
      const tps = w ? `${fmt(w.tpsBefore, 0)} → ${fmt(w.tpsMinDuring, 0)} → ${fmt(w.tpsAfter, 0)}` : '–';
      return `| ${hostId} | ${fmt(r.checkpointSeconds, 2)} | ${fmt(r.dirtyBuffersBefore, 0)} | ${fmt(writtenBytes(r) / MIB)} (${fmt(r.counters.buffersWritten, 0)}) | ${fmt(r.counters.writeTimeMs / 1000, 2)} / ${fmt(r.counters.syncTimeMs / 1000, 2)} | ${r.device ? `${fmt(r.device.writeIops, 0)} / ${fmt(r.device.writeMBps)}` : '–'} | ${tps} | ${pct(w?.dip ?? null)} |`;
    }),
    '',
  ],
  selfTest: {
    healthy: HEALTHY,
    breaks: {
      // A timed checkpoint came due while ours ran: the view's buffers are two checkpoints'.
      'the checkpoint alone in its window': (r) => void (r.counters.timed = 1),
      // Four times the buffers that were dirty: counters read from the wrong view, or another checkpoint's.
      'checkpoint wrote what was dirty': (r) => void (r.dirtyBuffersBefore = r.counters.buffersWritten / 4),
      // The device saw a tenth of it: the writes went somewhere else (the wrong device, a cache in between).
      "device saw the checkpoint's writes": (r) => void (r.deviceWriteBytes = writtenBytes(r) / 10),
    },
  },
});
