import { aggregate, median, pgbenchConsistencyChecks, speedup } from '../../analysis/aggregate';
import type { ClusterResult, TpsRun } from '../../common/results/result';
import { resolveSpec } from '../../common/input/resolve';
import { NO_PHASES } from '../helpers/phases';

const env = { cpus: 2, memoryMiB: 24000, kernel: 'test', provider: 'local' };

function run(tps: number, meanMs: number, clients = 8): TpsRun {
  return {
    tps,
    transactions: tps * 5,
    failedTransactions: 0,
    durationSeconds: 5,
    clients,
    threads: 2,
    latencyMs: { mean: meanMs, p50: meanMs, p95: meanMs * 2, p99: meanMs * 3 },
    tpsSeries: [tps, tps],
    pgbenchVersion: '15.18',
  };
}

function cluster(className: string, index: number, tpsRun?: TpsRun, status: ClusterResult['status'] = 'ok'): ClusterResult {
  return {
    hostId: `h-${className}-${index}`,
    className,
    index,
    status,
    emulated: true,
    startedAt: 't0',
    finishedAt: 't1',
    tpsRun,
    failedAttempts: [],
    phases: {},
  };
}

describe('aggregate', () => {
  // These clusters measure TPS only; a spec with its phases on would count them as missing.
  const spec = resolveSpec({ preset: 'ci', phases: NO_PHASES });
  const aggregateOf = (clusters: ClusterResult[]) =>
    aggregate({ runId: 'r', spec, startedAt: 'a', finishedAt: 'b', environment: env, cancelled: false, clusters });

  it('takes medians per class and speedups of the candidate over the baseline', () => {
    const result = aggregateOf([
      cluster('local-disk', 0, run(2000, 4)),
      cluster('local-disk', 1, run(3000, 2.67)),
      cluster('local-disk', 2, run(2500, 3.2)),
      cluster('gp3', 0, run(250, 32)),
    ]);
    expect(result.classes['local-disk'].medianTps).toBe(2500);
    expect(result.classes.gp3.medianTps).toBe(250);
    expect(result.ratios.tps).toBe(10);
    expect(result.ratios.latency).toBe(10);
    expect(result.status).toBe('completed');
  });

  it('leaves failed clusters out of the medians and flags them', () => {
    const result = aggregateOf([cluster('local-disk', 0, run(2000, 4)), cluster('gp3', 0, undefined, 'failed')]);
    expect(result.classes.gp3.medianTps).toBeNull();
    expect(result.ratios.tps).toBeNull();
    expect(result.status).toBe('failed');
    expect(result.checks.some((c) => !c.ok && c.scope === 'h-gp3-0')).toBe(true);
  });

  it("flags a run whose summary disagrees with its own log (clients / latency)", () => {
    const result = aggregateOf([cluster('local-disk', 0, run(1000, 4)), cluster('gp3', 0, run(250, 32))]);
    const little = result.checks.filter((c) => c.name === 'pgbench summary matches its transaction log');
    expect(little.find((c) => c.scope === 'h-local-disk-0')?.ok).toBe(false); // 8 / 4 ms = 2000, not 1000
    expect(little.find((c) => c.scope === 'h-gp3-0')?.ok).toBe(true);
  });

  it("counts the clients' own time between transactions, and warns when pgbench could not keep up", () => {
    // 64 clients, 8 ms latency, 1 ms between transactions: 64 / 9 ms = 7,111 TPS.
    const starved = { ...run(7111, 8, 64), clientGapMs: 1 };
    const checks = pgbenchConsistencyChecks('h', starved);
    expect(checks.find((c) => c.name === 'pgbench summary matches its transaction log')?.ok).toBe(true);
    const kept = checks.find((c) => c.name === 'load generator kept up');
    expect(kept).toMatchObject({ ok: false, severity: 'warning' });
    expect(kept?.detail).toMatch(/12\.5 % of the 8 ms latency: pgbench was short of CPU/);
    expect(pgbenchConsistencyChecks('h', { ...run(8000, 8, 64), clientGapMs: 0.1 }).every((c) => c.ok)).toBe(true);
  });

  it('has plain medians and speedups', () => {
    expect(median([])).toBeNull();
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(speedup(10, 0)).toBeNull();
    expect(speedup(16030, 1734)).toBe(9.24);
  });
});
