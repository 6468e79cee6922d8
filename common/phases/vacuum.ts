/**
 * The VACUUM phase, workflow-safe half: with autovacuum off on pgbench_accounts, batched UPDATEs leave the requested
 * bytes of dead tuples, then VACUUM (VERBOSE) on the table is timed (the reference: 10 GB of bloat, 964 s on gp3,
 * 366 s on NVMe). The host half is activities/host/phases/vacuum.ts.
 */
import { z } from 'zod';
import { median } from '../core/stats';
import { fmt } from '../core/format';
import type { Check } from '../results/check';
import type { LeftoverCleanup } from '../results/leftovers';
import { REFERENCE, REFERENCE_ROLES } from '../results/reference';
import type { CpuUsage, DeviceRates } from '../results/sampler-readings';
import { BOUND_BASE_SECONDS, BOUND_SAFETY, definePhase, megabytes } from './kit';

const MIB = 2 ** 20;

/** Dead bytes made must be within this of the bytes asked for. */
export const BLOAT_TOLERANCE = 0.1;

export const VacuumFragment = z
  .object({
    enabled: z.boolean(),
    /** Dead tuples to make before the timed VACUUM, in MB of 2^20 bytes (the reference: 10 GB). */
    bloatMB: megabytes('MB of dead tuples'),
  })
  .strict();
export type VacuumFragment = z.output<typeof VacuumFragment>;

export interface VacuumPhaseInput {
  hostId: string;
  /** Dead tuple bytes to produce, in MB of 2^20 bytes (as Postgres counts MB). */
  bloatMB: number;
}

/** What VACUUM (VERBOSE) reports for one relation (one "finished vacuuming" message). */
export interface VacuumVerboseReport {
  /** database.schema.table as VACUUM names it. */
  relation: string;
  indexScans: number;
  pages: { removed: number; remain: number; scanned: number };
  tuples: { removed: number; remain: number; deadNotYetRemovable: number };
  /** Dead tuples left on pages another backend had pinned (PostgreSQL 15+ prints the line only when there are any;
   * results recorded before the parser read it have no field). */
  missedDead?: { tuples: number; pages: number };
  /** Heap pages that held dead item identifiers, and how many identifiers the index pass removed. */
  deadItems: { pages: number; identifiersRemoved: number } | null;
  indexes: { name: string; pages: number; newlyDeleted: number; currentlyDeleted: number; reusable: number }[];
  /** Time spent in reads and writes (only with track_io_timing = on). */
  ioTimingsMs: { read: number; write: number } | null;
  avgReadMBps: number;
  avgWriteMBps: number;
  /** Shared-buffer hits, misses (PostgreSQL 17 calls them reads) and pages dirtied. */
  buffers: { hits: number; misses: number; dirtied: number };
  wal: { records: number; fullPageImages: number; bytes: number };
  cpu: { userSeconds: number; systemSeconds: number; elapsedSeconds: number };
}

/** The bloat + VACUUM phase of one cluster. Sizes in bytes; MB in requests is 2^20 bytes, as Postgres counts it. */
export interface VacuumPhaseResult {
  table: string;
  /** Leftovers of an earlier attempt that this one stopped first (absent: there were none). */
  cleanup?: LeftoverCleanup;
  requestedBytes: number;
  /** Dead tuple bytes produced, by pgstattuple_approx (after minus before). */
  deadBytes: number;
  deadTuples: number;
  /** deadBytes / requestedBytes - 1. */
  deadBytesDeviation: number;
  /**
   * Growth of the heap's used space (table_len - approx_free_space) while the bloat was made: the cross-check of
   * deadBytes, since the new row versions take new space (new pages, or free space an earlier VACUUM left).
   */
  usedBytesGrowth: number;
  relationBytesBefore: number;
  relationBytesAfter: number;
  rowsUpdated: number;
  /**
   * True when the host's emulated I/O cap was lifted for the preparation (the clearing VACUUM, making the dead tuples,
   * pgstattuple_approx) and applied again before VACUUM (VERBOSE): their seconds are then not storage figures. False
   * or absent: preparation ran capped (a real volume, or results from before it was lifted).
   */
  preparedWithoutCap?: boolean;
  bloatSeconds: number;
  /** Untimed VACUUM that cleared earlier dead tuples (the TPS run's) before the bloat was made. */
  preVacuumSeconds: number;
  /** Wall seconds of VACUUM (VERBOSE) on the table. */
  vacuumSeconds: number;
  verbose: VacuumVerboseReport;
  device: (DeviceRates & { name: string }) | null;
  cpu: CpuUsage | null;
  /** The table's autovacuum_enabled reloption before the phase, restored after (null: unset). */
  autovacuumSetting: string | null;
}

/** Medians of a class's VACUUM phases. */
export interface VacuumMedians {
  vacuumSeconds: number;
  deadBytes: number;
  requestedBytes: number;
  readMBps: number;
  writeMBps: number;
  clusters: number;
}

/** The reference's VACUUM: MB of bloat a second on each of its devices (10 GB in 964 s on gp3, 366 s on NVMe). */
const referenceMBps = (device: 'gp3' | 'nvme') => (REFERENCE.setup.vacuumBloatGB * 1024) / REFERENCE.results[device].vacuumSeconds;

/** What VACUUM said it could not remove, and why: the reason a check falls short, or a near miss worth seeing. */
function leftBehind(verbose: VacuumVerboseReport): string {
  const missed = verbose.missedDead ?? { tuples: 0, pages: 0 };
  const parts = [
    ...(verbose.tuples.deadNotYetRemovable > 0 ? [`${verbose.tuples.deadNotYetRemovable} still visible to another session's snapshot`] : []),
    ...(missed.tuples > 0 ? [`${missed.tuples} on ${missed.pages} pages another backend had pinned`] : []),
  ];
  return parts.length > 0 ? `; left dead: ${parts.join(', ')}` : '';
}

const mib = (bytes: number) => (bytes / MIB).toFixed(1);

/**
 * The device may read at most this many times the bytes VACUUM missed in shared_buffers, plus the slack below. Seen
 * (2026-12-04, local-quick's hosts, 9 runs): 0.96-1.02 in 8, and 3.51 in one nvme run whose VACUUM took 60.5 s where
 * the other nvme runs took 11-13 s: 13.9 GiB read for 3.9 GiB of misses.
 */
export const DEVICE_READ_LIMIT = 1.5;
/**
 * Readahead past the pages VACUUM skips, the VM and FSM forks, and on a device the host shares (the local-disk class)
 * other readers' odd cold read: below a second of VACUUM at the ci preset's size, this is more than all of them.
 */
export const DEVICE_READ_SLACK_BYTES = 64 * MIB;
/** Postgres' default block size: VACUUM (VERBOSE) counts its misses in blocks. */
const BLOCK_BYTES = 8192;

/**
 * VACUUM's reads reached the device once: its seconds measure the device, not pages read again after they were
 * evicted (the host's page cache under its memory limit) or another reader of the same device. Why it happened in
 * the one run seen is not known (docs/storage-emulation.md); this check is what makes such a run say so.
 */
function deviceReadOnce(scope: string, v: VacuumPhaseResult): Check[] {
  if (!v.device) return [];
  const deviceBytes = v.device.readMBps * MIB * v.vacuumSeconds;
  const missedBytes = v.verbose.buffers.misses * BLOCK_BYTES;
  const limit = DEVICE_READ_LIMIT * missedBytes + DEVICE_READ_SLACK_BYTES;
  return [
    {
      name: "VACUUM's reads reached the device once",
      scope,
      ok: deviceBytes <= limit,
      detail: `${v.device.name} read ${mib(deviceBytes)} MiB during VACUUM, which missed ${mib(missedBytes)} MiB in shared_buffers (at most ${DEVICE_READ_LIMIT}x + ${mib(DEVICE_READ_SLACK_BYTES)} MiB; ${fmt(missedBytes > 0 ? deviceBytes / missedBytes : 0, 2)}x)${deviceBytes <= limit ? '' : ': pages were read more than once, or another process read the device, so the VACUUM seconds are not the device\'s alone'}`,
    },
  ];
}

const HEALTHY: VacuumPhaseResult = {
  table: 'pgbench_accounts',
  requestedBytes: 8 * MIB,
  deadBytes: 8 * MIB,
  deadTuples: 80_000,
  deadBytesDeviation: 0,
  usedBytesGrowth: 8 * MIB,
  relationBytesBefore: 30 * MIB,
  relationBytesAfter: 38 * MIB,
  rowsUpdated: 80_000,
  bloatSeconds: 1,
  preVacuumSeconds: 1,
  vacuumSeconds: 2,
  verbose: {
    relation: 'storage_lab.public.pgbench_accounts',
    indexScans: 1,
    pages: { removed: 0, remain: 4_800, scanned: 1_000 },
    tuples: { removed: 80_000, remain: 200_000, deadNotYetRemovable: 0 },
    deadItems: { pages: 1_000, identifiersRemoved: 80_000 },
    indexes: [],
    ioTimingsMs: null,
    avgReadMBps: 20,
    avgWriteMBps: 10,
    buffers: { hits: 2_000, misses: 1_000, dirtied: 1_000 },
    wal: { records: 2_000, fullPageImages: 1_000, bytes: 8 * MIB },
    cpu: { userSeconds: 0.5, systemSeconds: 0.1, elapsedSeconds: 2 },
  },
  // Read 0.93 times the misses' bytes in the window, as healthy runs did (some misses hit the page cache).
  device: { name: 'loop0', readIops: 460, writeIops: 250, readMBps: 3.65, writeMBps: 2, readLatencyMs: 0.25, writeLatencyMs: 0.85, utilization: 0.5 },
  cpu: null,
  autovacuumSetting: null,
};

export const vacuumPhase = definePhase({
  name: 'vacuum',
  title: 'dead tuples made with autovacuum off, then VACUUM (VERBOSE) timed',
  activity: 'runVacuumPhase',
  fragment: VacuumFragment,
  progressWeight: 8,
  input: (f, _context, hostId): VacuumPhaseInput => ({ hostId, bloatMB: f.bloatMB }),
  summary: (f) => `${f.bloatMB} MB of dead tuples, then VACUUM (VERBOSE)`,
  // The bloat is written, read back by pgstattuple and VACUUM, and written again: about four passes.
  boundSeconds: (f, context) => BOUND_BASE_SECONDS + Math.ceil((BOUND_SAFETY * 4 * f.bloatMB) / context.storageMiBps),
  estimateSeconds: (f, _context, device) => f.bloatMB / referenceMBps(device),
  // The dead tuples, then the pages VACUUM rewrites (MB of 10^6 bytes, the volume's own unit, twice over).
  volumeBytes: (f) => f.bloatMB * 2 * 1e6,
  medians: (vac: VacuumPhaseResult[]): VacuumMedians => ({
    vacuumSeconds: median(vac.map((v) => v.vacuumSeconds))!,
    deadBytes: median(vac.map((v) => v.deadBytes))!,
    requestedBytes: vac[0].requestedBytes,
    readMBps: median(vac.map((v) => v.verbose.avgReadMBps))!,
    writeMBps: median(vac.map((v) => v.verbose.avgWriteMBps))!,
    clusters: vac.length,
  }),
  checks: (scope, v) => [
    ...deviceReadOnce(scope, v),
    {
      name: 'dead bytes as requested',
      scope,
      ok: Math.abs(v.deadBytesDeviation) <= BLOAT_TOLERANCE,
      detail: `pgstattuple_approx counted ${mib(v.deadBytes)} MiB of dead tuples for ${mib(v.requestedBytes)} MiB requested (${(v.deadBytesDeviation * 100).toFixed(1)} %, tolerance ${BLOAT_TOLERANCE * 100} %); heap used space grew ${mib(v.usedBytesGrowth)} MiB`,
    },
    {
      name: 'VACUUM removed the dead tuples',
      scope,
      ok: v.verbose.tuples.removed >= v.deadTuples * (1 - BLOAT_TOLERANCE),
      detail: `${v.verbose.tuples.removed} tuples removed of ${v.deadTuples} made dead, ${v.verbose.pages.scanned} pages scanned in ${v.vacuumSeconds.toFixed(1)} s${leftBehind(v.verbose)}`,
    },
  ],
  report: (clusters) => [
    '## VACUUM over bloat',
    '',
    '| host | dead MiB (requested) | VACUUM (s) | pages scanned | tuples removed | VACUUM read / write MB/s | device r / w IOPS during VACUUM |',
    '|---|---|---|---|---|---|---|',
    ...clusters.map(
      ({ hostId, result: v }) =>
        `| ${hostId} | ${fmt(v.deadBytes / MIB)} (${fmt(v.requestedBytes / MIB)}) | ${fmt(v.vacuumSeconds, 2)} | ${fmt(v.verbose.pages.scanned, 0)} | ${fmt(v.verbose.tuples.removed, 0)} | ${fmt(v.verbose.avgReadMBps)} / ${fmt(v.verbose.avgWriteMBps)} | ${v.device ? `${fmt(v.device.readIops, 0)} / ${fmt(v.device.writeIops, 0)}` : '–'} |`,
    ),
    '',
  ],
  uncapped: (v) => (v.preparedWithoutCap ? 'making the dead tuples' : null),
  comparison: {
    ratioKey: 'vacuum',
    label: 'VACUUM',
    metric: (f) => `VACUUM over ${fmt(f.bloatMB, 0)} MB of bloat (s; reference: ${REFERENCE.setup.vacuumBloatGB} GB)`,
    seconds: (m) => m.vacuumSeconds,
    reference: {
      baseline: REFERENCE.results[REFERENCE_ROLES.baseline].vacuumSeconds,
      candidate: REFERENCE.results[REFERENCE_ROLES.candidate].vacuumSeconds,
      ratio: REFERENCE.ratios.vacuum,
    },
  },
  selfTest: {
    healthy: HEALTHY,
    breaks: {
      'dead bytes as requested': (v) => void Object.assign(v, { deadBytes: 5 * MIB, deadBytesDeviation: -0.375 }),
      'VACUUM removed the dead tuples': (v) => void (v.verbose.tuples.removed = 20_000),
      // The nvme run of 2026-12-04 (exp-local-quick-20261204-085556): 234.8 MiB/s for 60.46 s, 517,394 misses.
      "VACUUM's reads reached the device once": (v) =>
        void Object.assign(v, { vacuumSeconds: 60.46, device: { ...v.device!, readMBps: 234.8 }, verbose: { ...v.verbose, buffers: { hits: 489_036, misses: 517_394, dirtied: 281_724 } } }),
    },
  },
});
