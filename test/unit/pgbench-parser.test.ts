import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ClientGaps,
  LatencyHistogram,
  parseProgressLine,
  parseSummary,
  parseTransactionLogLine,
} from '../../lib/parsers/pgbench';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const fixture = (name: string) => readFileSync(path.join(PROJECT_ROOT, 'test/fixtures/pgbench-15', name), 'utf8');

describe('pgbench output (captured from pgbench 15.18)', () => {
  it('parses -P progress lines into a per-second series', () => {
    const samples = fixture('run-stderr.txt').split('\n').map(parseProgressLine).filter((s) => s !== null);
    expect(samples.map((s) => s.tps)).toEqual([13057.0, 19582.6, 19500.9]);
    expect(samples[1]).toEqual({ second: 2, tps: 19582.6, latencyMs: 0.201, stddevMs: 0.074, failed: 0 });
    expect(parseProgressLine('starting vacuum...end.')).toBeNull();
  });

  it('parses failed counts in progress lines', () => {
    const first = parseProgressLine(fixture('deadlock-stderr.txt').split('\n')[0]);
    expect(first).toMatchObject({ tps: 80.9, failed: 105 });
  });

  it('parses the summary', () => {
    expect(parseSummary(fixture('run-stdout.txt'))).toEqual({
      version: '15.18',
      scale: 1,
      clients: 4,
      threads: 2,
      durationSeconds: 3,
      transactions: 52144,
      failedTransactions: 0,
      tps: 17421.711052,
    });
    expect(parseSummary(fixture('deadlock-stdout.txt')).failedTransactions).toBe(325);
  });

  it('refuses a truncated summary', () => {
    expect(() => parseSummary('pgbench (15.18)\nscaling factor: 1\n')).toThrow(/did not finish/);
  });

  it('parses transaction log lines, including failures', () => {
    expect(parseTransactionLogLine('0 1 1458 0 1796020896 272847')).toEqual({
      kind: 'ok',
      client: 0,
      latencyUs: 1458,
      epochSecond: 1796020896,
      endUs: 1796020896272847,
    });
    expect(parseTransactionLogLine('1 1 deadlock 0 1796020905 928397')?.kind).toBe('failed');
    expect(parseTransactionLogLine('1 1 failed 0 1796020905 928397')?.kind).toBe('failed');
    expect(parseTransactionLogLine('2 9 skipped 0 1796020905 928397')?.kind).toBe('skipped');
    expect(parseTransactionLogLine('')).toBeNull();
  });

  it('summarises a real log into mean and percentiles', () => {
    const h = new LatencyHistogram();
    const latencies: number[] = [];
    for (const line of fixture('transaction-log.txt').split('\n')) {
      const e = parseTransactionLogLine(line);
      if (!e) continue;
      h.add(e);
      if (e.kind === 'ok') latencies.push(e.latencyUs / 1000);
    }
    latencies.sort((a, b) => a - b);
    const exactMean = latencies.reduce((s, v) => s + v, 0) / latencies.length;
    expect(h.count).toBe(400);
    expect(h.meanMs()).toBeCloseTo(exactMean, 6);
    // Histogram buckets are 1 % wide.
    expect(h.quantileMs(0.5)).toBeCloseTo(latencies[199], 1);
    expect(Math.abs(h.quantileMs(0.99) - latencies[395]) / latencies[395]).toBeLessThan(0.02);
  });

  it('counts failures apart from latencies', () => {
    const h = new LatencyHistogram();
    for (const line of fixture('deadlock-transaction-log.txt').split('\n')) {
      const e = parseTransactionLogLine(line);
      if (e) h.add(e);
    }
    expect(h.failed).toBeGreaterThan(0);
    expect(h.failed + h.count).toBe(200);
  });

  it("measures the clients' own time between transactions", () => {
    const gaps = new ClientGaps();
    // Client 0: ends at .001000 after 1 ms, next starts at .001500 (0.5 ms gap), ends .002500.
    // Client 1: a failed transaction gives no gap but moves its clock; then 0.25 ms gap.
    for (const line of [
      '0 1 1000 0 100 1000',
      '1 1 failed 0 100 1200',
      '0 2 1000 0 100 2500',
      '1 2 500 0 100 1950',
    ])
      gaps.add(parseTransactionLogLine(line)!);
    expect(gaps.meanMs()).toBeCloseTo((0.5 + 0.25) / 2, 6);
  });

  it('finds a small gap in a real log of a client-light run', () => {
    const gaps = new ClientGaps();
    for (const line of fixture('transaction-log.txt').split('\n')) {
      const e = parseTransactionLogLine(line);
      if (e) gaps.add(e);
    }
    // 4 clients on 2 threads at 17,000 TPS: pgbench spends a little time of its own between transactions.
    expect(gaps.meanMs()).toBeGreaterThan(0);
    expect(gaps.meanMs()).toBeLessThan(0.5);
  });
});
