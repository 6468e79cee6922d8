/** The latency breakdown, the diagnosis checks and the SVG charts: pure functions on made-up but plausible figures. */
import { boundBy, classReadings, samplerChecks, throttleUse } from '../../analysis/bottlenecks';
import { gp3Window } from '../helpers/volume-window';
import { fidelityMarkdown, fidelityRows, relativeDifference } from '../../analysis/report/fidelity';
import { markdownToHtml, renderHtml } from '../../analysis/report/html';
import { barChart, escapeXml, lineChart, niceTicks, textWidth } from '../../analysis/report/svg-charts';
import { aggregate } from '../../analysis/aggregate';
import { breakdownKeyOf, latencyBreakdown, waitClassShares } from '../../common/results/breakdown';
import type { SamplerReadings } from '../../common/results/sampler-readings';
import type { ClassResult, ClusterResult } from '../../common/results/result';
import { resolveSpec } from '../../common/input/resolve';

function diagnostics(waitEvents: Record<string, number>, over: Partial<SamplerReadings> = {}): SamplerReadings {
  const samples = 100;
  return {
    serverVersionNum: 150018,
    startedAt: 't',
    seconds: 10,
    intervalMs: 100,
    samples,
    samplesPerSecond: 10,
    waitEvents,
    waitClassShares: waitClassShares(waitEvents),
    avgActiveSessions: Object.values(waitEvents).reduce((s, n) => s + n, 0) / samples,
    database: { xactCommit: 1, xactRollback: 0, blksRead: 0, blksHit: 0, blkReadTimeMs: 0, blkWriteTimeMs: 0, tupUpdated: 0, tempBytes: 0, deadlocks: 0, msPerBlockRead: null, hitRatio: null },
    wal: null,
    checkpoints: null,
    io: null,
    cpu: { source: 'cgroup', seconds: 19.6, coresBusy: 1.96, cores: 2 },
    samplerCpuSeconds: 0.1,
    device: null,
    series: [],
    notes: [],
    ...over,
  };
}

function cluster(className: string, tps: number, meanMs: number, d?: SamplerReadings): ClusterResult {
  return {
    hostId: `h-${className}`,
    className,
    index: 0,
    status: 'ok',
    emulated: true,
    startedAt: 'a',
    finishedAt: 'b',
    tpsRun: {
      tps,
      transactions: tps * 10,
      failedTransactions: 0,
      durationSeconds: 10,
      clients: 64,
      threads: 2,
      latencyMs: { mean: meanMs, p50: meanMs * 0.9, p95: meanMs * 2, p99: meanMs * 3 },
      tpsSeries: [tps, tps * 1.1, tps * 0.9],
      pgbenchVersion: '15.18',
    },
    diagnostics: d,
    breakdownMs: d ? latencyBreakdown(meanMs, d.waitEvents) ?? undefined : undefined,
    failedAttempts: [],
    phases: {},
  };
}

describe('latency breakdown', () => {
  it('puts wait events into the reference parts', () => {
    expect(breakdownKeyOf('CPU')).toBe('cpu');
    expect(breakdownKeyOf('IO:DataFileRead')).toBe('pageReads');
    expect(breakdownKeyOf('IO:WALSync')).toBe('walFsync');
    expect(breakdownKeyOf('IO:WALWrite')).toBe('walFsync');
    // PostgreSQL 17's names for the same events (captured from a 17.10 server under pgbench).
    expect(breakdownKeyOf('IO:WalSync')).toBe('walFsync');
    expect(breakdownKeyOf('IO:WalWrite')).toBe('walFsync');
    expect(breakdownKeyOf('LWLock:WALWrite')).toBe('walFsync');
    expect(breakdownKeyOf('LWLock:BufferMapping')).toBe('lockAndScheduler');
    expect(breakdownKeyOf('Lock:transactionid')).toBe('lockAndScheduler');
    expect(breakdownKeyOf('IO:DataFileExtend')).toBe('other');
    expect(breakdownKeyOf('Client:ClientRead')).toBe('other');
  });

  it('apportions the mean latency by wait shares and sums to it', () => {
    // The reference's gp3 shape: about half page reads, a third WAL.
    const b = latencyBreakdown(36.9, { 'IO:DataFileRead': 51, 'IO:WALSync': 20, 'LWLock:WALWrite': 10, 'Lock:tuple': 13, CPU: 6 })!;
    expect(b.pageReads).toBeCloseTo(36.9 * 0.51, 9);
    expect(b.walFsync).toBeCloseTo(36.9 * 0.3, 9);
    expect(b.lockAndScheduler).toBeCloseTo(36.9 * 0.13, 9);
    expect(b.cpu).toBeCloseTo(36.9 * 0.06, 9);
    expect(b.other).toBe(0);
    expect(Object.values(b).reduce((s, v) => s + v, 0)).toBeCloseTo(36.9, 9);
    expect(latencyBreakdown(4, {})).toBeNull();
    expect(waitClassShares({ 'IO:DataFileRead': 3, 'IO:WALSync': 1, CPU: 4 })).toEqual({ IO: 0.5, CPU: 0.5 });
  });
});

describe('diagnosis', () => {
  const limits = { iops: 3000, throughputMiBps: 125 };
  const second = (readIops: number) => ({ second: 1, activeSessions: 60, dataFileRead: 30, cpuCores: 0.5, readIops, writeIops: 500, readMBps: readIops / 128, writeMBps: 10 });

  it('names the resource that bound a cluster', () => {
    const cpuBound = cluster('local-disk', 2500, 25.6, diagnostics({ CPU: 5000, 'IO:DataFileRead': 800, 'IO:WALSync': 200 }));
    expect(boundBy(cpuBound)?.resource).toBe('CPU-bound at 2 cores');
    const ioBound = cluster('gp3', 1770, 36.1, diagnostics({ 'IO:DataFileRead': 3200, CPU: 1000, 'IO:WALSync': 1800 }, { cpu: { source: 'cgroup', seconds: 8, coresBusy: 0.8, cores: 2 } }));
    expect(boundBy(ioBound, limits)?.resource).toBe('IO-bound (page reads)');
    expect(boundBy(cluster('x', 1, 1))).toBeNull();
  });

  it('sees the throttle engaged from per-second device figures near the cap', () => {
    const d = diagnostics({ 'IO:DataFileRead': 10 }, { series: Array.from({ length: 10 }, () => second(2900)) });
    const t = throttleUse(cluster('gp3', 1, 1, d), limits)!;
    expect(t.ratio).toBeCloseTo(2900 / 3000, 6);
    expect(t.detail).toMatch(/read IOPS 2900 of the 3000 cap/);
    expect(boundBy(cluster('gp3', 1, 1, d), limits)?.resource).toBe('IO-bound (read IOPS at the cap)');
  });

  it('judges a modelled volume by its own counters: near its budget, and nothing escaped', () => {
    const cls = { emulated: true, limits: { ...limits, memoryLimitMiB: 384 } } as ClassResult;
    const cold = diagnostics({ 'IO:DataFileRead': 10 }, { volume: gp3Window(300) });
    const checks = samplerChecks(cluster('gp3', 100, 640, cold), cls, false);
    const engaged = checks.find((c) => c.name === 'budget engaged')!;
    expect(engaged.ok).toBe(false);
    expect(engaged.severity).toBe('warning'); // The data fits in memory: a caveat, not an error.
    expect(samplerChecks(cluster('gp3', 100, 640, cold), cls, true).find((c) => c.name === 'budget engaged')!.severity).toBe('error');
    expect(checks.find((c) => c.name === 'nothing escaped the device model')!.ok).toBe(true);
    const busy = diagnostics({ 'IO:DataFileRead': 10 }, { volume: gp3Window(2950) });
    expect(throttleUse(cluster('gp3', 1, 1, busy), limits)!.detail).toMatch(/device operations \(reads \+ writes, one budget\) 2950 of the 3000 budget/);
    expect(boundBy(cluster('gp3', 1, 1, busy), limits)?.resource).toBe('IO-bound (page reads at the IOPS budget)');
    // An emulated class whose window has no counters of its volume cannot say that nothing escaped.
    const blind = samplerChecks(cluster('gp3', 1, 1, diagnostics({ 'IO:DataFileRead': 10 })), cls, true);
    expect(blind.find((c) => c.name === 'nothing escaped the device model')).toMatchObject({ ok: false });
    // A class without a modelled device has nothing to account for.
    const free = { emulated: false, limits: { iops: null, throughputMiBps: null, memoryLimitMiB: 384 } } as ClassResult;
    expect(samplerChecks(cluster('local-disk', 1, 1, busy), free, true).find((c) => c.name === 'nothing escaped the device model')).toBeUndefined();
  });

  it('checks the sampler rate and the server-side time per transaction; the breakdown is not a check (it sums by construction)', () => {
    const cls = { emulated: false, limits: { iops: null, throughputMiBps: null, memoryLimitMiB: 384 } } as ClassResult;
    // 64 clients at 2500 TPS: 25.6 ms mean; 60 active backends / 2500 TPS = 24 ms in the server.
    const d = diagnostics({ CPU: 5000, 'IO:DataFileRead': 1000 }, { avgActiveSessions: 60, samplesPerSecond: 9 });
    const checks = samplerChecks(cluster('local-disk', 2500, 25.6, d), cls, true);
    const by = (name: string) => checks.find((c) => c.name === name)!;
    expect(by('sampler rate').ok).toBe(false);
    expect(by('server occupancy matches the latency').ok).toBe(true);
    expect(by('sampler cost').ok).toBe(true); // 0.1 CPU s of the host's 19.6
    expect(checks.find((c) => c.name === 'latency breakdown sums to the mean latency')).toBeUndefined();
    const costly = diagnostics({ CPU: 10 }, { samplerCpuSeconds: 1 });
    expect(samplerChecks(cluster('local-disk', 2500, 25.6, costly), cls, true).find((c) => c.name === 'sampler cost')!.ok).toBe(false);
    const slowClient = diagnostics({ CPU: 10 }, { avgActiveSessions: 30 });
    expect(samplerChecks(cluster('local-disk', 2500, 25.6, slowClient), cls, true).find((c) => c.name === 'server occupancy matches the latency')!.ok).toBe(false);
  });

  it('takes medians per class and ratios of VACUUM and drain seconds', () => {
    // The ci preset's phases but the checkpoint, which these clusters did not measure.
    const spec = resolveSpec({ preset: 'ci', phases: { checkpoint: { enabled: false } } });
    const vacuum = (s: number) => ({ vacuumSeconds: s, deadBytes: 8 << 20, requestedBytes: 8 << 20, deadBytesDeviation: 0, verbose: { avgReadMBps: 1, avgWriteMBps: 2, tuples: { removed: 10 }, pages: { scanned: 1 } } });
    const backlog = (s: number) => ({ drainSeconds: s, backlogBytes: 16 << 20, requestedBytes: 16 << 20, drainMBps: 16 / s, retainedBytes: 16 << 20, reachedBeforeDrain: true });
    const a = cluster('local-disk', 2500, 25.6, diagnostics({ CPU: 9, 'IO:DataFileRead': 1 }));
    const b = cluster('gp3', 1700, 37.6, diagnostics({ CPU: 5, 'IO:DataFileRead': 5 }));
    a.phases = { vacuum: vacuum(2) as never, backlog: backlog(1) as never };
    b.phases = { vacuum: vacuum(5) as never, backlog: backlog(1.7) as never };
    const result = aggregate({ runId: 'r', spec, clusters: [a, b], startedAt: 's', finishedAt: 'f', environment: { cpus: 2, memoryMiB: 1, kernel: 'k', provider: 'local' }, cancelled: false });
    expect(result.ratios.vacuum).toBe(2.5);
    expect(result.ratios.backlog).toBe(1.7);
    expect(result.classes.gp3.phases.vacuum?.vacuumSeconds).toBe(5);
    expect(result.classes.gp3.breakdownMs!.pageReads).toBeCloseTo(37.6 / 2, 6);
    expect(result.classes.gp3.latencyMs!.p99).toBeCloseTo(37.6 * 3, 6);
    expect(result.status).toBe('completed');
    expect(classReadings([a], { iops: null, throughputMiBps: null }).waitEventShares).toEqual({ CPU: 0.9, 'IO:DataFileRead': 0.1 });
    // A class without its VACUUM figure did not measure everything the spec asked for.
    b.phases = {};
    expect(aggregate({ runId: 'r', spec, clusters: [a, b], startedAt: 's', finishedAt: 'f', environment: { cpus: 2, memoryMiB: 1, kernel: 'k', provider: 'local' }, cancelled: false }).status).toBe('failed');

    const html = renderHtml(result);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html.match(/<svg /g)?.length).toBe(6);
    expect(html).toContain('VACUUM over 8 MB of bloat');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/); // Self-contained: nothing to run or fetch.
  });
});

describe('fidelity to the reference', () => {
  it('puts each class next to its published counterpart, with differences in per cent and what bound it', () => {
    const spec = resolveSpec({ preset: 'local-quick' });
    const series = (readIops: number, writeIops: number) => Array.from({ length: 10 }, (_, i) => ({ second: i + 1, activeSessions: 60, dataFileRead: 30, cpuCores: 0.5, readIops, writeIops, readMBps: 20, writeMBps: 25 }));
    // gp3 at its budget: 2,950 operations a second over 10 s, 1.79 a transaction.
    const gp3 = cluster('gp3', 1647.3, 38.745, diagnostics({ 'IO:DataFileRead': 47, 'IO:WALSync': 30, CPU: 23 }, { series: series(2065, 885), volume: gp3Window(2950), bufferWrites: 1647 * 2, wal: { wal_sync: 1647 * 3 } }));
    gp3.load = { rows: 25_000_000, chunks: 50, chunksResumed: 0, loadSeconds: 60, indexSeconds: 10, vacuumSeconds: 5, heapBytes: 3.6e9, rowsPerSecond: 1 };
    const nvme = cluster('nvme', 4000, 16, diagnostics({ CPU: 86, 'IO:DataFileRead': 14 }));
    const result = aggregate({ runId: 'r', spec, clusters: [gp3, nvme], startedAt: 's', finishedAt: 'f', environment: { cpus: 2, memoryMiB: 1, kernel: 'k', provider: 'local' }, cancelled: false });
    const rows = fidelityRows(result);
    expect(rows.map((r) => r.comparison)).toEqual(['modelled gp3 vs published gp3', 'modelled nvme vs published NVMe']);
    expect(rows[0].tps).toEqual({ run: 1647.3, published: 1734, difference: (1647.3 - 1734) / 1734 });
    const latency = result.classes.gp3.medianLatencyMs!;
    expect(latency).toBeCloseTo(38.745, 1);
    expect(rows[0].latencyMs.difference).toBeCloseTo((latency - 36.9) / 36.9, 9);
    expect(rows[0].dataFileReadShare.run).toBeCloseTo(0.47, 9);
    expect(rows[0].dataFileReadShare.difference).toBeCloseTo(0.02 / 0.45, 9);
    expect(rows[0].boundBy).toBe('IO-bound (page reads at the IOPS budget)');
    expect(rows[1].boundBy).toBe('CPU-bound at 2 cores');
    const md = fidelityMarkdown(result).join('\n');
    expect(md).toContain('| modelled gp3 vs published gp3 | 1,647 / 1,734 (-5 %) | 38.74 / 36.9 (+5 %) | 47 % / 45 % (+4.4 %) | IO-bound (page reads at the IOPS budget) |');
    // Each modelled device beside what it stands for, with its sources, and what it delivered.
    expect(md).toMatch(/\*\*gp3\*\*: the gp3 model, standing for EBS gp3 at 3000 IOPS and 125 MiB\/s: 3,000 IOPS and 125 MiB\/s, reads and writes together; 1.05 ms a read, 2 ms a write/);
    expect(md).toMatch(/\*\*nvme\*\*: the nvme model, standing for m6id.4xlarge's instance-store NVMe SSD.*268,336 read \/ 134,168 write IOPS/);
    expect(md).toMatch(/Netflix service-capacity-modeling/);
    expect(md).toMatch(/h-gp3: served 2,950 I\/Os a second \(2,065 reads, 885 writes/);
    // Why gp3 was bound, from its device's own counts and the pages its run dirtied.
    expect(md).toMatch(/gp3 was bound by its budget of 3,000 operations a second: it served 2,950 \(98 %\), 1.25 reads and 0.54 writes a transaction \(1.79 operations in its units\); so the budget allows at most 1,675 TPS; it ran 1,647/);
    expect(md).toMatch(/the run dirtied about [\d,]+ pages .* against 256 MiB of shared_buffers/);
    expect(md).toContain('Data files are written through the page cache (postgres.directIo "off"), as the reference ran.');
    const direct = fidelityMarkdown({ ...result, spec: { ...result.spec, postgres: { ...result.spec.postgres, directIo: 'data' } } }).join('\n');
    expect(direct).toContain('O_DIRECT (postgres.directIo "data")');
    // Both reports carry it; a run without a comparison has no such section.
    expect(renderHtml(result)).toContain('<td>modelled gp3 vs published gp3</td>');
    expect(fidelityMarkdown({ ...result, compare: null })).toEqual([]);
    expect(relativeDifference(null, 1734)).toBeNull();
  });
});

describe('SVG charts', () => {
  it('chooses round ticks', () => {
    expect(niceTicks(0, 17)).toEqual([0, 5, 10, 15, 20]);
    expect(niceTicks(0, 1734)).toEqual([0, 500, 1000, 1500, 2000]);
    expect(niceTicks(0, 0.37)).toEqual([0, 0.1, 0.2, 0.3, 0.4]);
    expect(niceTicks(0, 0)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('draws a line per series and bars per value, with escaped labels', () => {
    const line = lineChart({ title: 'TPS <per second>', xLabel: 's', series: [{ name: 'a&b', points: [{ x: 1, y: 10 }, { x: 2, y: 20 }] }, { name: 'c', points: [{ x: 1, y: 5 }] }] });
    expect(line.match(/<path /g)?.length).toBe(2);
    expect(line).toContain('TPS &lt;per second&gt;');
    expect(line).toContain('a&amp;b');
    const grouped = barChart({ title: 'lat', categories: ['p50', 'p99'], series: [{ name: 'x', values: [1, 2] }, { name: 'y', values: [3, null] }] });
    expect(grouped.match(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" fill="#/g)?.length).toBe(3 + 2); // 3 bars + 2 legend keys
    const stacked = barChart({ title: 'b', categories: ['run'], series: [{ name: 'x', values: [19] }, { name: 'y', values: [11] }], stacked: true });
    expect(stacked).toContain('>30<'); // The stack's total above it.
    expect(barChart({ title: 'none', categories: ['a'], series: [{ name: 'x', values: [null] }] })).toContain('no data measured');
    expect(escapeXml('"<&>"')).toBe('&quot;&lt;&amp;&gt;&quot;');
  });

  it('sizes a chart from its labels: whole legend names, level or turned category labels, values only where they fit', () => {
    // DejaVu Sans at 12 px without kerning: no narrower than Chromium on Debian drew it (176 px), and close to it.
    expect(textWidth('page reads (IO:DataFileRead)')).toBeGreaterThanOrEqual(176);
    expect(textWidth('page reads (IO:DataFileRead)')).toBeLessThan(176 * 1.02);
    expect(textWidth('Wait', 14, true)).toBeGreaterThan(textWidth('Wait', 14));
    const size = (svg: string) => /width="(\d+)" height="(\d+)"/.exec(svg)!.slice(1).map(Number);
    const short = barChart({ title: 't', categories: ['a', 'b'], series: [{ name: 'x', values: [1, 2] }] });
    expect(size(short)).toEqual([760, 312]); // The default size, 12 px above the plot for the values over the bars.
    const longName = 'WAL write/fsync at commit (and synchronous standbys)';
    const long = barChart({ title: 't', categories: ['a', 'b'], series: [{ name: longName, values: [1, 2] }] });
    expect(long).toContain(`>${longName}</text>`);
    expect(size(long)[0]).toBe(Math.ceil(64 + 496 + 14 + 18 + textWidth(longName) + 8));
    const wide = barChart({ title: 't', categories: ['gp3-3000-mem1536-x06', 'local-c64-xxxxxxxx03'], series: [{ name: 'x', values: [1, 2] }] });
    expect(wide).not.toMatch(/rotate\(-35/);
    const many = Array.from({ length: 8 }, (_, i) => `gp3-3000-mem1536-x0${i}`);
    const turned = barChart({ title: 't', categories: many, series: [{ name: 'x', values: many.map((_, i) => i + 1) }] });
    expect(turned.match(/rotate\(-35 /g)).toHaveLength(8);
    expect(size(turned)[1]).toBeGreaterThan(312);
    // Eight series of four categories: a bar's slot is 12 px, too narrow for "55.6"; its tooltip carries it.
    const crowded = barChart({ title: 't', categories: ['mean', 'p50', 'p95', 'p99'], series: many.map((name) => ({ name, values: [55.6, 1, 7, 9] })) });
    expect(crowded).toContain(': 55.6</title>');
    expect(crowded).not.toContain('>55.6</text>');
    expect(crowded).toContain('>7</text>');
  });

  it('turns the report Markdown into HTML tables and lists', () => {
    const html = markdownToHtml('# T\n\n| a | b |\n|---|---|\n| 1 | `x` |\n\n- PASS ok\n- **FAIL** bad');
    expect(html).toContain('<h1>T</h1>');
    expect(html).toContain('<th>a</th><th>b</th>');
    expect(html).toContain('<td>1</td><td><code>x</code></td>');
    expect(html).toContain('<li class="FAIL"><strong>FAIL</strong> bad</li>');
  });
});
