/**
 * The backlog phase, workflow-safe half: the spec's workload writes while a pgoutput slot holds the requested WAL
 * back with no consumer connected, then a real consumer (pg_recvlogical) drains it, timed (the reference: 10 GB,
 * 238 s on gp3, 139 s on NVMe). The host half is activities/host/phases/backlog.ts.
 */
import { z } from 'zod';
import { median } from '../core/stats';
import { fmt } from '../core/format';
import { scriptWrites } from '../input/workload-script';
import type { LeftoverCleanup } from '../results/leftovers';
import { REFERENCE, REFERENCE_ROLES } from '../results/reference';
import type { CpuUsage, DeviceRates } from '../results/sampler-readings';
import { BOUND_BASE_SECONDS, BOUND_SAFETY, definePhase, megabytes } from './kit';

const MIB = 2 ** 20;

/** The WAL the consumer decodes and the WAL the slot held back are two readings of one backlog: this far apart at most. */
export const RETAINED_TOLERANCE = 0.1;

export const BacklogFragment = z
  .object({
    enabled: z.boolean(),
    /** WAL the slot holds back before the drain, in MB of 2^20 bytes (the reference: 10 GB). */
    backlogMB: megabytes('MB of WAL retained'),
  })
  .strict();
export type BacklogFragment = z.output<typeof BacklogFragment>;

export interface BacklogPhaseInput {
  hostId: string;
  /** WAL the slot must hold back before the consumer starts, in MB of 2^20 bytes. */
  backlogMB: number;
  /** The spec's workload, which writes the backlog. */
  scale: number;
  clients: number;
  threads: number;
  script: string;
}

/** The replication backlog + drain phase of one cluster. */
export interface BacklogPhaseResult {
  slot: string;
  /** Leftovers of an earlier attempt that this one stopped first (absent: there were none). */
  cleanup?: LeftoverCleanup;
  plugin: string;
  publication: string;
  requestedBytes: number;
  /** The slot's confirmed_flush_lsn when the workload started, and pg_current_wal_lsn() when it stopped. */
  startLsn: string;
  targetLsn: string;
  /** WAL the consumer must decode: targetLsn - startLsn. */
  backlogBytes: number;
  /** WAL the slot held back when the workload stopped (pg_current_wal_lsn() - restart_lsn). */
  retainedBytes: number;
  /** True when the slot held at least the requested size before the consumer started. */
  reachedBeforeDrain: boolean;
  /**
   * True when the host's emulated I/O cap was lifted for the preparation (the checkpoint, writing the backlog) and
   * applied again before the drain: their seconds are then not storage figures. False or absent: preparation ran
   * capped (a real volume, or results from before it was lifted).
   */
  preparedWithoutCap?: boolean;
  fillSeconds: number;
  drainSeconds: number;
  /** backlogBytes / drainSeconds, in MB (2^20 bytes) a second. */
  drainMBps: number;
  confirmedFlushLsn: string;
  consumer: string;
  device: (DeviceRates & { name: string }) | null;
  cpu: CpuUsage | null;
}

/** Medians of a class's backlog phases. */
export interface BacklogMedians {
  drainSeconds: number;
  backlogBytes: number;
  requestedBytes: number;
  drainMBps: number;
  clusters: number;
}

/** The reference's drain: MB of backlog a second on each of its devices (10 GB in 238 s on gp3, 139 s on NVMe). */
const referenceMBps = (device: 'gp3' | 'nvme') => (REFERENCE.setup.replicationBacklogGB * 1024) / REFERENCE.results[device].backlogDrainSeconds;

const HEALTHY: BacklogPhaseResult = {
  slot: 'storage_lab_backlog',
  plugin: 'pgoutput',
  publication: 'storage_lab_backlog',
  requestedBytes: 16 * MIB,
  startLsn: '0/5000060',
  targetLsn: '0/6200000',
  backlogBytes: 0x6200000 - 0x5000060,
  retainedBytes: 0x6200000 - 0x5000028,
  reachedBeforeDrain: true,
  fillSeconds: 3,
  drainSeconds: 0.5,
  drainMBps: (0x6200000 - 0x5000060) / MIB / 0.5,
  confirmedFlushLsn: '0/6200000',
  consumer: 'pg_recvlogical (pgoutput, proto_version 1)',
  device: null,
  cpu: null,
};

export const backlogPhase = definePhase({
  name: 'backlog',
  title: 'a logical-replication backlog made by the workload, then drained by pg_recvlogical, timed',
  activity: 'runBacklogPhase',
  fragment: BacklogFragment,
  progressWeight: 8,
  input: (f, context, hostId): BacklogPhaseInput => ({ hostId, backlogMB: f.backlogMB, scale: context.scale, ...context.workload }),
  summary: (f) => `${f.backlogMB} MB logical-replication backlog, then drain`,
  // The backlog is written, kept, then read back: bounded like the VACUUM's four passes.
  boundSeconds: (f, context) => BOUND_BASE_SECONDS + Math.ceil((BOUND_SAFETY * 4 * f.backlogMB) / context.storageMiBps),
  estimateSeconds: (f, _context, device) => f.backlogMB / referenceMBps(device),
  // The retained WAL beside the WAL the volume keeps anyway (MB of 10^6 bytes, twice over).
  volumeBytes: (f) => f.backlogMB * 2 * 1e6,
  // A backlog is WAL the workload writes: a script that writes nothing cannot fill one.
  specProblems: (_f, context) =>
    scriptWrites(context.workload.script)
      ? []
      : [
          {
            path: 'workload.script',
            message:
              'writes nothing (no INSERT, UPDATE, DELETE, MERGE, COPY or DDL), so it cannot fill the backlog phase with WAL; add a data-modifying statement or set phases.backlog.enabled to false',
          },
        ],
  needsLogicalWal: true,
  medians: (back: BacklogPhaseResult[]): BacklogMedians => ({
    drainSeconds: median(back.map((b) => b.drainSeconds))!,
    backlogBytes: median(back.map((b) => b.backlogBytes))!,
    requestedBytes: back[0].requestedBytes,
    drainMBps: median(back.map((b) => b.drainMBps))!,
    clusters: back.length,
  }),
  checks: (scope, b) => {
    // Two readings of one backlog: the consumer's span (target - the slot's first confirmed LSN) and what the slot
    // held back (current - restart_lsn); they differ by the WAL before the slot's consistent point, a few KiB.
    const apart = Math.abs(b.backlogBytes - b.retainedBytes);
    return [
      {
        name: 'drained backlog is the WAL the slot held',
        scope,
        ok: apart <= RETAINED_TOLERANCE * b.retainedBytes,
        detail: `the consumer decoded ${(b.backlogBytes / MIB).toFixed(1)} MiB (${b.startLsn} to ${b.targetLsn}); the slot held ${(b.retainedBytes / MIB).toFixed(1)} MiB back (tolerance ${RETAINED_TOLERANCE * 100} %)`,
      },
    ];
  },
  report: (clusters) => [
    '## Logical-replication backlog drain',
    '',
    '| host | backlog MiB (requested) | fill (s) | drain (s) | drain MB/s | device r / w IOPS during the drain |',
    '|---|---|---|---|---|---|',
    ...clusters.map(
      ({ hostId, result: b }) =>
        `| ${hostId} | ${fmt(b.backlogBytes / MIB)} (${fmt(b.requestedBytes / MIB)}) | ${fmt(b.fillSeconds, 1)} | ${fmt(b.drainSeconds, 2)} | ${fmt(b.drainMBps)} | ${b.device ? `${fmt(b.device.readIops, 0)} / ${fmt(b.device.writeIops, 0)}` : '–'} |`,
    ),
    '',
  ],
  uncapped: (b) => (b.preparedWithoutCap ? 'writing the backlog' : null),
  comparison: {
    ratioKey: 'backlog',
    label: 'backlog drain',
    metric: (f) => `drain a ${fmt(f.backlogMB, 0)} MB logical-replication backlog (s; reference: ${REFERENCE.setup.replicationBacklogGB} GB)`,
    seconds: (m) => m.drainSeconds,
    reference: {
      baseline: REFERENCE.results[REFERENCE_ROLES.baseline].backlogDrainSeconds,
      candidate: REFERENCE.results[REFERENCE_ROLES.candidate].backlogDrainSeconds,
      ratio: REFERENCE.ratios.backlogDrain,
    },
  },
  selfTest: {
    healthy: HEALTHY,
    breaks: {
      // A consumer that decoded from the wrong place: half the WAL the slot held.
      'drained backlog is the WAL the slot held': (b) => void (b.backlogBytes = b.retainedBytes / 2),
    },
  },
});
