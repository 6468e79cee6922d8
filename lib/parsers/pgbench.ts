/**
 * pgbench output → typed results. Pure functions, tested on output captured from real pgbench runs
 * (test/fixtures/pgbench-15). Latency comes from the per-transaction log, not from pgbench's own
 * "latency average" (which pgbench derives from clients and TPS, so a Little's-law check on it would be circular).
 */

/** One `-P` progress line: `progress: 2.0 s, 19582.6 tps, lat 0.201 ms stddev 0.074, 0 failed`. */
export interface ProgressSample {
  second: number;
  tps: number;
  latencyMs: number;
  stddevMs: number | null;
  failed: number;
}

const PROGRESS_RE =
  /^progress: (?<sec>[\d.]+) s, (?<tps>[\d.]+) tps, lat (?<lat>[\d.]+|NaN) ms(?: stddev (?<sd>[\d.]+|NaN))?(?:, (?<failed>\d+) failed)?/;

/** Parses one progress line, or returns null for any other line. */
export function parseProgressLine(line: string): ProgressSample | null {
  const m = PROGRESS_RE.exec(line.trim());
  if (!m?.groups) return null;
  const num = (s: string | undefined) => (s === undefined || s === 'NaN' ? null : Number(s));
  return {
    second: Number(m.groups.sec),
    tps: Number(m.groups.tps),
    latencyMs: num(m.groups.lat) ?? 0,
    stddevMs: num(m.groups.sd),
    failed: m.groups.failed ? Number(m.groups.failed) : 0,
  };
}

/** The end-of-run summary pgbench prints on stdout. */
export interface PgbenchSummary {
  version: string;
  scale: number;
  clients: number;
  threads: number;
  durationSeconds: number;
  transactions: number;
  failedTransactions: number;
  tps: number;
}

/** Parses pgbench's final summary; throws when a field it always prints is missing (a truncated run). */
export function parseSummary(stdout: string): PgbenchSummary {
  const field = (re: RegExp, name: string): string => {
    const m = re.exec(stdout);
    if (!m) throw new Error(`pgbench summary has no "${name}" line: the run did not finish`);
    return m[1];
  };
  const failed = /^number of failed transactions: (\d+)/m.exec(stdout);
  return {
    version: field(/^pgbench \((\d[\w.]*)/m, 'pgbench (version)'),
    scale: Number(field(/^scaling factor: (\d+)/m, 'scaling factor')),
    clients: Number(field(/^number of clients: (\d+)/m, 'number of clients')),
    threads: Number(field(/^number of threads: (\d+)/m, 'number of threads')),
    durationSeconds: Number(field(/^duration: (\d+) s/m, 'duration')),
    transactions: Number(field(/^number of transactions actually processed: (\d+)/m, 'transactions processed')),
    failedTransactions: failed ? Number(failed[1]) : 0,
    tps: Number(field(/^tps = ([\d.]+)/m, 'tps')),
  };
}

/** One line of the `--log` per-transaction log: `client_id transaction_no time script_no time_epoch time_us`. */
export type TransactionLogEntry =
  | { kind: 'ok'; client: number; latencyUs: number; epochSecond: number; endUs: number }
  | { kind: 'failed' | 'skipped'; client: number; epochSecond: number; endUs: number };

/** Parses one transaction-log line; null for blank or foreign lines. */
export function parseTransactionLogLine(line: string): TransactionLogEntry | null {
  const parts = line.trim().split(/\s+/);
  if (parts.length < 6) return null;
  const [client, , time, , epoch, micros] = parts;
  // When the transaction ended, in µs since the epoch (below 2^53 until the year 2255).
  const base = { client: Number(client), epochSecond: Number(epoch), endUs: Number(epoch) * 1e6 + Number(micros) };
  if (!Number.isFinite(base.client) || !Number.isFinite(base.endUs)) return null;
  if (time === 'skipped') return { kind: 'skipped', ...base };
  // 'failed', or with --failures-detailed the failure's kind.
  if (time === 'failed' || time === 'serialization' || time === 'deadlock') return { kind: 'failed', ...base };
  const latencyUs = Number(time);
  if (!Number.isFinite(latencyUs)) return null;
  return { kind: 'ok', latencyUs, ...base };
}

/**
 * Latency histogram with ~1 % relative precision and constant memory, so a 300 s run at 16,000 TPS
 * (4.8 million log lines) is summarised without keeping the lines.
 */
export class LatencyHistogram {
  private static readonly GROWTH = 1.01;
  private readonly buckets = new Map<number, number>();
  private sumUs = 0;
  count = 0;
  failed = 0;
  skipped = 0;

  add(entry: TransactionLogEntry): void {
    if (entry.kind === 'ok') this.record(entry.latencyUs);
    else if (entry.kind === 'failed') this.failed++;
    else this.skipped++;
  }

  record(latencyUs: number): void {
    const us = Math.max(1, latencyUs);
    const bucket = Math.floor(Math.log(us) / Math.log(LatencyHistogram.GROWTH));
    this.buckets.set(bucket, (this.buckets.get(bucket) ?? 0) + 1);
    this.sumUs += latencyUs;
    this.count++;
  }

  meanMs(): number {
    return this.count === 0 ? 0 : this.sumUs / this.count / 1000;
  }

  /** The q-quantile (0..1) in ms: the geometric middle of the bucket holding it. */
  quantileMs(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (const bucket of [...this.buckets.keys()].sort((a, b) => a - b)) {
      seen += this.buckets.get(bucket) ?? 0;
      if (seen >= rank) return Math.pow(LatencyHistogram.GROWTH, bucket + 0.5) / 1000;
    }
    return 0;
  }

  summary(): { mean: number; p50: number; p95: number; p99: number } {
    return { mean: this.meanMs(), p50: this.quantileMs(0.5), p95: this.quantileMs(0.95), p99: this.quantileMs(0.99) };
  }
}

/**
 * The time each client spends between its transactions (pgbench's own work: building the next query, its thread
 * being scheduled). In a closed loop TPS = clients / (latency + gap); on a CPU-starved host the gap grows and TPS falls
 * below clients / latency without the server being any slower. Lines of one client are in completion order within
 * its thread's log file, which is all this needs.
 */
export class ClientGaps {
  private readonly lastEndUs = new Map<number, number>();
  private sumUs = 0;
  private count = 0;

  add(entry: TransactionLogEntry): void {
    const last = this.lastEndUs.get(entry.client);
    if (entry.kind === 'ok' && last !== undefined) {
      const startUs = entry.endUs - entry.latencyUs;
      if (startUs >= last) {
        this.sumUs += startUs - last;
        this.count++;
      }
    }
    this.lastEndUs.set(entry.client, entry.endUs);
  }

  meanMs(): number {
    return this.count === 0 ? 0 : this.sumUs / this.count / 1000;
  }
}
