/** The cost model: prices times quantities, the duration model's shape, measured host-hours, missing prices. */
import { actualCost, costMarkdown, estimateCost, estimatedHostHours, formatCost, HOURS_PER_MONTH, runCost } from '../../common/input/cost';
import type { ClusterResult } from '../../common/results/result';
import { resolveSpec } from '../../common/input/resolve';

const seedFull = () => resolveSpec({ preset: 'seed-full' });

function cluster(className: string, hours: number): ClusterResult {
  const start = Date.parse('2026-03-01T00:00:00Z');
  return {
    hostId: `h-${className}`,
    className,
    index: 0,
    status: 'ok',
    emulated: true,
    startedAt: new Date(start).toISOString(),
    finishedAt: new Date(start + hours * 3_600_000).toISOString(),
    failedAttempts: [],
    phases: {},
  };
}

describe('cost', () => {
  it('prices seed-full: 8 m6id.4xlarge hosts, four 685 GiB gp3 volumes at the baseline, root volumes, S3', () => {
    const spec = seedFull();
    const est = estimateCost(spec);
    const instance = est.lines.find((l) => l.item.startsWith('m6id.4xlarge'))!;
    const hoursNvme = estimatedHostHours(spec, 'nvme');
    const hoursGp3 = estimatedHostHours(spec, 'gp3');
    expect(instance.quantity).toBeCloseTo(4 * hoursNvme + 4 * hoursGp3, 2);
    expect(instance.usd).toBeCloseTo(instance.quantity * 0.9492, 1);
    const data = est.lines.find((l) => l.item.includes('gp3 data volumes'))!;
    expect(data.item).toContain('685 GiB');
    expect(data.quantity).toBeCloseTo((685 * 4 * hoursGp3) / HOURS_PER_MONTH, 2);
    // At the gp3 baseline (3,000 IOPS, 125 MiB/s) nothing is paid above it.
    expect(est.lines.some((l) => l.item.includes('above'))).toBe(false);
    expect(est.totalUsd).toBeCloseTo(est.lines.reduce((s, l) => s + (l.usd ?? 0), 0), 1);
    // A throttled gp3 load takes longer than NVMe's, and the whole run fits in one wave of 8.
    expect(hoursGp3).toBeGreaterThan(hoursNvme);
    expect(est.wallHours).toBeCloseTo(Math.max(hoursGp3, hoursNvme), 1);
    expect(est.totalUsd).toBeGreaterThan(10);
    expect(est.totalUsd).toBeLessThan(100);
  });

  it('charges IOPS and throughput above the gp3 baseline', () => {
    const spec = resolveSpec({ preset: 'seed-full', storageClasses: { gp3: { iops: 6000, throughputMiBps: 250 } } });
    const est = estimateCost(spec);
    const months = (4 * estimatedHostHours(spec, 'gp3')) / HOURS_PER_MONTH;
    expect(est.lines.find((l) => l.item.includes('IOPS above 3000'))!.quantity).toBeCloseTo(3000 * months, 1);
    expect(est.lines.find((l) => l.item.includes('throughput above 125'))!.quantity).toBeCloseTo(125 * months, 1);
  });

  it('names the missing price instead of inventing one', () => {
    const est = estimateCost(resolveSpec({ preset: 'seed-full', host: { instanceType: 'i4i.4xlarge' } }));
    expect(est.totalUsd).toBeNull();
    expect(est.missingPrices).toEqual(['aws.hourlyPriceUsd.i4i.4xlarge']);
    expect(formatCost(est).join('\n')).toContain('add prices for a complete figure: aws.hourlyPriceUsd.i4i.4xlarge');
  });

  it('computes the actual figure from the clusters\' measured hours', () => {
    const spec = seedFull();
    const actual = actualCost(spec, [cluster('nvme', 2), cluster('gp3', 3)])!;
    expect(actual.basis).toBe('measured');
    expect(actual.hostHours).toBe(5);
    expect(actual.lines.find((l) => l.item.startsWith('m6id'))!.usd).toBeCloseTo(5 * 0.9492, 2);
    expect(actual.lines.find((l) => l.item.includes('gp3 data volumes'))!.quantity).toBeCloseTo((685 * 3) / HOURS_PER_MONTH, 3);
    expect(actualCost(spec, [])).toBeNull();
    const cost = runCost(spec, [cluster('gp3', 1)]);
    expect(cost.currency).toBe('USD');
    expect(costMarkdown(cost).join('\n')).toMatch(/Estimated cost: \$[\d.]+[\s\S]*Measured cost: \$[\d.]+ for 1\.0 host-hours/);
  });
});
