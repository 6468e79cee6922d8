/**
 * A diagnose capture of any PostgreSQL (storage-lab diagnose, diagnoseWorkflow) and the verdict it comes to: what
 * bounds the server (storage, CPU, locks, its clients) or that it is idle, with the evidence. Pure and
 * workflow-safe: the CLI, the workflow's activity, the report and predict share it. What a diagnose takes (the DSN
 * and its rules) is common/input/diagnose.ts.
 */
import { breakdownKeyOf, CPU_EVENT, SYNC_REP_EVENT } from './breakdown';
import type { SamplerReadings } from './sampler-readings';
import { median } from '../core/stats';

export const CAPTURE_KIND = 'storage-lab/diagnose-capture';
export const CAPTURE_SCHEMA_VERSION = 1;

export const VERDICTS = ['storage-bound', 'cpu-bound', 'lock-bound', 'client-bound', 'idle'] as const;
export type DiagnoseVerdict = (typeof VERDICTS)[number];

/** Below this many sessions in a transaction on average, nothing bounds the server: it is idle. */
export const IDLE_SESSIONS = 0.1;

/** What the verdict rests on: where in-transaction time went, and the storage's own figures. */
export interface VerdictEvidence {
  /** Samples of in-transaction client backends (active plus idle in a transaction), and their mean number. */
  samples: number;
  avgActive: number;
  avgIdleInTransaction: number;
  /** Shares (0-1) of in-transaction time: storage waits, CPU, locks, the client (idle in a transaction, Client:*), other. */
  shares: Record<VerdictGroup, number>;
  /** The three wait events with the most samples, with their share. */
  topEvents: { event: string; share: number }[];
  /** blk_read_time / blks_read over the window; null without reads or without track_io_timing. */
  msPerBlockRead: number | null;
  trackIoTiming: boolean;
  /** pg_test_fsync's time for one 8 kB write + the server's wal_sync_method, when probed. */
  fsyncMs: number | null;
  /** Host CPU while sampled, when the server runs on this machine. */
  cpu: { coresBusy: number; cores: number } | null;
}

export const VERDICT_GROUPS = ['storage', 'cpu', 'lock', 'client', 'other'] as const;
export type VerdictGroup = (typeof VERDICT_GROUPS)[number];

/** The state the sampler gives an "idle in transaction" backend, as a pseudo event. */
export const IDLE_IN_TRANSACTION_EVENT = 'Client:IdleInTransaction';

/** Where a sampled wait event counts: I/O waits (and waits on another backend's I/O) are storage. */
export function verdictGroupOf(event: string): VerdictGroup {
  if (event === CPU_EVENT) return 'cpu';
  const [type, name = ''] = event.split(':');
  if (type === 'Client') return 'client';
  // Waiting for a synchronous standby is the network's and the standby's time, not this server's storage.
  if (event === SYNC_REP_EVENT) return 'other';
  if (type === 'IO' || name === 'BufferIO' || name === 'buffer_io') return 'storage';
  const part = breakdownKeyOf(event);
  if (part === 'pageReads' || part === 'walFsync') return 'storage';
  if (part === 'lockAndScheduler') return 'lock';
  return 'other';
}

/** The evidence from what the sampler saw, plus the capture's own figures. */
export function verdictEvidence(
  d: Pick<SamplerReadings, 'waitEvents' | 'samples' | 'avgActiveSessions' | 'database' | 'cpu' | 'sessions'>,
  extra: { trackIoTiming: boolean; fsyncMs: number | null },
): VerdictEvidence {
  const counts: Record<string, number> = { ...d.waitEvents };
  const idle = (d.sessions?.avgIdleInTransaction ?? 0) * d.samples;
  if (idle > 0) counts[IDLE_IN_TRANSACTION_EVENT] = idle;
  const total = Object.values(counts).reduce((s, n) => s + n, 0);
  const shares = Object.fromEntries(VERDICT_GROUPS.map((g) => [g, 0])) as Record<VerdictGroup, number>;
  for (const [event, n] of Object.entries(counts)) shares[verdictGroupOf(event)] += total > 0 ? n / total : 0;
  const topEvents = Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([event, n]) => ({ event, share: total > 0 ? n / total : 0 }));
  return {
    samples: d.samples,
    avgActive: d.avgActiveSessions,
    avgIdleInTransaction: d.sessions?.avgIdleInTransaction ?? 0,
    shares,
    topEvents,
    msPerBlockRead: extra.trackIoTiming ? d.database.msPerBlockRead : null,
    trackIoTiming: extra.trackIoTiming,
    fsyncMs: extra.fsyncMs,
    cpu: d.cpu ? { coresBusy: d.cpu.coresBusy, cores: d.cpu.cores } : null,
  };
}

/**
 * The verdict: idle when fewer than IDLE_SESSIONS sessions were in a transaction on average; otherwise the group
 * that took the largest share of in-transaction time among storage, CPU, locks and the client ("other" waits,
 * such as IPC or timeouts, name no bound of their own).
 */
export function classify(e: VerdictEvidence): { verdict: DiagnoseVerdict; reason: string } {
  const sessions = e.avgActive + e.avgIdleInTransaction;
  if (e.samples === 0 || sessions < IDLE_SESSIONS)
    return { verdict: 'idle', reason: `${sessions.toFixed(2)} sessions in a transaction on average (idle below ${IDLE_SESSIONS})` };
  const ranked = (['storage', 'cpu', 'lock', 'client'] as const).map((g) => [g, e.shares[g]] as const).sort((a, b) => b[1] - a[1]);
  const [group, share] = ranked[0];
  const verdict: DiagnoseVerdict = group === 'storage' ? 'storage-bound' : group === 'cpu' ? 'cpu-bound' : group === 'lock' ? 'lock-bound' : 'client-bound';
  return { verdict, reason: `${labels[group]} took ${pct(share)} of in-transaction time, the largest share` };
}

const labels: Record<VerdictGroup, string> = {
  storage: 'storage waits (IO:*, WAL)',
  cpu: 'CPU (active, no wait event)',
  lock: 'locks and LWLocks',
  client: 'waiting on the client (idle in transaction, Client:*)',
  other: 'other waits',
};

/** The evidence in one line: the shares, the top events, ms per read, fsync latency, CPU. */
export function evidenceLine(e: VerdictEvidence): string {
  const parts = [
    `storage ${pct(e.shares.storage)}, CPU ${pct(e.shares.cpu)}, locks ${pct(e.shares.lock)}, client ${pct(e.shares.client)}, other ${pct(e.shares.other)} of in-transaction time`,
    `${e.avgActive.toFixed(2)} active + ${e.avgIdleInTransaction.toFixed(2)} idle in transaction on average`,
    e.topEvents.length ? `top: ${e.topEvents.map((t) => `${t.event} ${pct(t.share)}`).join(', ')}` : null,
    e.trackIoTiming ? (e.msPerBlockRead === null ? 'no block reads' : `${e.msPerBlockRead.toFixed(3)} ms per block read`) : 'ms per block read unknown (track_io_timing off)',
    e.fsyncMs === null ? null : `fsync ${e.fsyncMs.toFixed(2)} ms (pg_test_fsync, one 8 kB write)`,
    e.cpu ? `CPU ${e.cpu.coresBusy.toFixed(2)} of ${e.cpu.cores} cores busy` : null,
  ];
  return parts.filter(Boolean).join('; ');
}

/** The verdict line the CLI prints and tests look for. */
export function verdictLine(verdict: DiagnoseVerdict, e: VerdictEvidence): string {
  return `verdict: ${verdict} (${evidenceLine(e)})`;
}

/** pg_test_fsync's figures for the method the server uses, and where it wrote its test file. */
export interface FsyncProbe {
  method: string;
  opsPerSecond: number;
  usecsPerOp: number;
  /** Every method it compared with one 8 kB write: ops/s (null: not supported here). */
  oneWrite: Record<string, number | null>;
  testFileDir: string;
  device: string | null;
  seconds: number;
}

/** A standby streaming from the captured server, as pg_stat_replication showed it at the end of the window. */
export interface CapturedStandby {
  name: string;
  /** async, potential, sync or quorum. */
  syncState: string;
  state: string;
  /** Time between a local WAL flush and the standby's report of having flushed it (null: nothing recent to time). */
  flushLagMs: number | null;
  /** Of how many readings over the window flushLagMs is the median. */
  flushLagReadings?: number;
}

/**
 * The standbys of the last reading, each with the median of its flush lags over all readings (pg_stat_replication
 * shows one recent commit's lag, and readings a second apart vary several-fold).
 */
export function medianFlushLags(readings: CapturedStandby[][]): CapturedStandby[] {
  const last = readings[readings.length - 1] ?? [];
  return last.map((standby) => {
    const lags = readings.flatMap((r) => r.filter((s) => s.name === standby.name).map((s) => s.flushLagMs)).filter((v): v is number => v !== null);
    return { ...standby, flushLagMs: median(lags), flushLagReadings: lags.length };
  });
}

/**
 * How long a commit waits for its synchronous standbys beyond its own flush: the flush lag of the standby it waits
 * for last. Quorum (ANY k): the k-th fastest of the candidates; priority (FIRST k, or a plain list): the slowest of
 * the k standbys in sync. Null when commits do not wait for a standby (synchronous_commit off or local, no standby in
 * sync) or no flush lag was timed.
 */
export function syncStandbyWait(capture: Pick<DiagnoseCapture, 'settings' | 'replication'>): { waitMs: number; detail: string } | null {
  const commit = capture.settings.synchronous_commit;
  if (commit === 'off' || commit === 'local') return null;
  const standbys = capture.replication?.standbys ?? [];
  const quorum = standbys.filter((s) => s.syncState === 'quorum');
  const sync = standbys.filter((s) => s.syncState === 'sync');
  const lags = (list: CapturedStandby[]) => list.map((s) => s.flushLagMs).filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (quorum.length > 0) {
    const k = Number(/^\s*ANY\s+(\d+)/i.exec(capture.settings.synchronous_standby_names ?? '')?.[1] ?? 1);
    const timed = lags(quorum);
    if (timed.length < k) return null;
    return { waitMs: timed[k - 1], detail: `quorum: the ${ordinal(k)}fastest of ${standbyCount(quorum.length)} (${quorum.map((s) => s.name).join(', ')}) flushes ${timed[k - 1].toFixed(2)} ms after the primary` };
  }
  if (sync.length > 0) {
    const timed = lags(sync);
    if (timed.length < sync.length) return null;
    const slowest = timed[timed.length - 1];
    return { waitMs: slowest, detail: `priority: the slowest of ${standbyCount(sync.length)} in sync (${sync.map((s) => s.name).join(', ')}) flushes ${slowest.toFixed(2)} ms after the primary` };
  }
  return null;
}

const standbyCount = (n: number) => `${n} standby${n === 1 ? '' : 's'}`;

/** "", "2nd ", "3rd ", "4th ": the k of "the k-th fastest", nothing for the first. */
const ordinal = (n: number) => (n === 1 ? '' : `${n}${n === 2 ? 'nd' : n === 3 ? 'rd' : 'th'} `);

/** Everything a capture holds: what was sampled, the server's settings that matter, the probe, the verdict. */
export interface DiagnoseCapture {
  kind: typeof CAPTURE_KIND;
  schemaVersion: typeof CAPTURE_SCHEMA_VERSION;
  capturedAt: string;
  /** The server, without any password: user@host:port/database. */
  target: string;
  serverVersion: string;
  /** Whether the role could see other roles' sessions (pg_monitor or superuser). */
  privileges: { pgMonitor: boolean; superuser: boolean };
  settings: Record<string, string>;
  /** Whether the server's data directory is on this machine (then CPU, device and the fsync probe are its own). */
  local: { dataDirectory: string; device: string | null; memoryMiB: number; pageCacheMiB: number } | null;
  diagnostics: SamplerReadings;
  /** Transactions a second, the capture's own left out. */
  tps: number;
  fsync: FsyncProbe | null;
  /** Standbys streaming from the server (captures before this field was added have none recorded). */
  replication?: { standbys: CapturedStandby[] };
  evidence: VerdictEvidence;
  verdict: DiagnoseVerdict;
  reason: string;
  /** What could not be measured and how to turn it on. */
  advice: string[];
}

/** What the workflow returns: the verdict and where the capture and its report are (never the DSN's password). */
export interface DiagnoseSummary {
  runId: string;
  target: string;
  location: string;
  verdict: DiagnoseVerdict;
  reason: string;
  verdictLine: string;
  tps: number;
}

const pct = (v: number) => `${Math.round(v * 100)} %`;
