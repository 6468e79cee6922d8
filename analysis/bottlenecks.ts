/**
 * What the sampler's readings say about a run: medians per class, the resource that bound each cluster, and the
 * self-checks on the breakdown, the sampler and the throttle (each phase checks its own: common/phases/). Pure;
 * aggregate.ts calls it, and unit tests call it directly.
 */
import { BREAKDOWN_KEYS, breakdownCounts, breakdownTotal, eventShare } from '../common/results/breakdown';
import { crossChecks } from './cross-checks';
import type { Check } from '../common/results/check';
import type { ClassResult, ClusterResult, LatencyMs } from '../common/results/result';
import type { SamplerSecond, VolumeWindow } from '../common/results/sampler-readings';
import { median } from '../common/core/stats';

/** The sampler must take at least this many samples a second. */
export const MIN_SAMPLES_PER_SECOND = 10;
/** The sampler's own CPU may be at most this share of the host's (the overhead target of the bench). */
export const SAMPLER_COST = 0.03;
/** A throttled device counts as "at its cap" between these shares of it; above the upper one it escaped the cap. */
export const AT_CAP = 0.8;
// A volume holds its cap; 10 % covers per-second sampling jitter (O_DIRECT writes measured at 1.02x of it).
export const ABOVE_CAP = 1.1;
/** A wait share above this names what bound the cluster. */
const DOMINANT_SHARE = 0.3;
/** CPU busy above this share of the host's cores names the CPU. */
const CPU_SATURATED = 0.85;

/** Medians of each key over records that have it. */
function medianRecord(records: Record<string, number>[]): Record<string, number> | undefined {
  if (records.length === 0) return undefined;
  const keys = [...new Set(records.flatMap((r) => Object.keys(r)))];
  return Object.fromEntries(keys.map((k) => [k, median(records.map((r) => r[k] ?? 0)) ?? 0]));
}

/** Medians per class of the breakdown, latency figures and wait shares. */
export function classReadings(
  clusters: ClusterResult[],
  limits: { iops: number | null; throughputMiBps: number | null },
): Pick<ClassResult, 'breakdownMs' | 'latencyMs' | 'waitClassShares' | 'waitEventShares' | 'boundBy'> {
  const measured = clusters.filter((c) => c.tpsRun);
  const sampled = measured.filter((c) => c.diagnostics);
  const eventShares = sampled.map((c) => {
    const events = c.diagnostics!.waitEvents;
    return Object.fromEntries(Object.keys(events).map((e) => [e, eventShare(events, e)]));
  });
  const bounds = measured.map((c) => boundBy(c, limits)?.resource).filter((b): b is string => !!b);
  return {
    breakdownMs: medianRecord(measured.flatMap((c) => (c.breakdownMs ? [c.breakdownMs] : []))),
    latencyMs: medianRecord(measured.map((c) => ({ ...c.tpsRun!.latencyMs }))) as LatencyMs | undefined,
    waitClassShares: medianRecord(sampled.map((c) => c.diagnostics!.waitClassShares)),
    waitEventShares: medianRecord(eventShares),
    boundBy: mostCommon(bounds),
  };
}

function mostCommon(values: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
}

/** The 90th percentile of a series (robust against a single idle or burst second). */
function p90(values: number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(0.9 * s.length))];
}

/**
 * How close the device ran to its emulated cap during the TPS run, for IOPS and MiB/s of reads and writes (p90 of
 * the per-second figures): `ratio` of the busiest figure still within reach of the cap, and the figures far above
 * it, which escaped the throttle (cgroup v1 charges kernel writeback to the root cgroup, not the host's).
 */
/** The figure of a class with one IOPS budget: its host's reads and writes together. */
const BUDGET_FIGURE = 'reads + writes of the host (mean, one budget)';
/** The figure of a modelled volume with one budget: the operations it served modelled, reads and writes together. */
const DEVICE_BUDGET_FIGURE = 'device operations (reads + writes, one budget)';

/** I/Os a modelled volume's count and the kernel's may differ by beyond those in flight at the two readings. */
export const ACCOUNTING_SLACK = 8;
/** The largest I/O the volume serves (its FUSE requests; the loop device's requests are capped at it). */
const MAX_IO_BYTES = 2 ** 20;

const fmtMiB = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** A modelled volume's own accounting over a window: nothing escaped its model, and nothing passed beyond its budgets. */
export interface DeviceAccounting {
  ok: boolean;
  /** The kernel's count of the device's I/Os less the server's (null without the kernel's count). */
  escaped: number | null;
  /** I/Os served with the model off. */
  unmodelled: number;
  /** Budgets the window went beyond, in words. */
  overBudget: string[];
  detail: string;
}

export function deviceAccounting(v: VolumeWindow, series: SamplerSecond[] = []): DeviceAccounting {
  const p = v.params;
  const served = v.served.reads + v.served.writes;
  const k = v.kernel;
  // The kernel counts an empty flush as a write of no bytes: its writes beyond the server's are at most its flushes.
  // What the kernel completed on the device that the server never served escaped the model: reads it counted beyond
  // the server's, writes beyond the server's and the flushes, and above all bytes it moved beyond the server's.
  const readsApart = k ? k.reads - v.served.reads : null;
  const writesBeyond = k ? k.writes - v.served.writes - k.flushes : null;
  const bytesApart = k ? k.readBytes + k.writeBytes - (v.served.readBytes + v.served.writeBytes) : null;
  const escaped = k ? Math.max(0, readsApart!) + Math.max(0, writesBeyond!) : null;
  // An I/O the server counted just before a reading and the kernel completed just after it (or one in the server at
  // the start): the counts may differ by those in flight.
  const slack = ACCOUNTING_SLACK + v.inFlight.start + v.inFlight.end;
  const unmodelled = served - (v.modelled.reads + v.modelled.writes);
  const burst = p.burstMs / 1000;
  const overBudget: string[] = [];
  const budgets: [string, number, number, number][] = [
    ['operations', p.iops, v.modelled.units, p.queueDepth],
    ['bytes', p.bytesPerSecond, v.modelled.readBytes + v.modelled.writeBytes, p.queueDepth * MAX_IO_BYTES],
    ['read operations', p.readIops, v.modelled.reads, p.queueDepth],
    ['write operations', p.writeIops, v.modelled.writes, p.queueDepth],
    ['read bytes', p.readBytesPerSecond, v.modelled.readBytes, p.queueDepth * MAX_IO_BYTES],
    ['write bytes', p.writeBytesPerSecond, v.modelled.writeBytes, p.queueDepth * MAX_IO_BYTES],
  ];
  for (const [name, rate, done, inFlight] of budgets) {
    if (rate <= 0) continue;
    // The budget over the window and its bucket's depth, and what was in the device when the window opened.
    const allowed = rate * (v.seconds + burst) + inFlight;
    if (done > allowed) overBudget.push(`${name} ${Math.round(done)} in ${v.seconds.toFixed(1)} s, more than the ${rate} a second allow (${Math.round(allowed)})`);
  }
  const perSecond = series.map((s) => s.deviceOps).filter((x): x is number => typeof x === 'number');
  const busiest = perSecond.length ? Math.max(...perSecond) : null;
  if (p.iops > 0 && busiest !== null && busiest > p.iops * (1 + burst) + p.queueDepth)
    overBudget.push(`${Math.round(busiest)} operations in one second on a budget of ${p.iops}`);
  const modelOn = v.modelOn.start && v.modelOn.end;
  const countsAgree = k !== null && Math.abs(readsApart!) <= slack && writesBeyond! <= slack && Math.abs(bytesApart!) <= slack * MAX_IO_BYTES;
  const ok = countsAgree && unmodelled === 0 && overBudget.length === 0 && modelOn;
  const rate = v.seconds > 0 ? v.modelled.units / v.seconds : 0;
  const detail = [
    k === null
      ? 'the kernel\'s count of the device was not read: nothing can be said of what escaped'
      : `${served} I/Os served by the ${v.model} model (${v.served.reads} reads, ${v.served.writes} writes, ${v.served.flushes} flushes), the kernel completed ${k.reads} reads and ${k.writes} writes (its ${k.flushes} flushes among them as empty writes) on the device: ${escaped} beyond the model's (up to ${slack} may be in flight), ${fmtMiB(bytesApart!)} MiB moved apart`,
    `${unmodelled} served with the model off${modelOn ? '' : ' (the model was off at a reading)'}`,
    `${Math.round(rate)} operations a second${p.iops > 0 ? ` of the ${p.iops} budget` : ''}${busiest !== null ? `, the busiest second ${Math.round(busiest)}` : ''}`,
    ...(overBudget.length ? [`beyond its budget: ${overBudget.join('; ')}`] : []),
  ].join('; ');
  return { ok, escaped, unmodelled, overBudget, detail };
}

export function throttleUse(
  c: ClusterResult,
  limits: { iops: number | null; throughputMiBps: number | null; iopsBudget?: 'shared' | 'separate' },
): { ratio: number; busiest: string | null; escaped: string[]; detail: string } | null {
  const v = c.diagnostics?.volume;
  if (v) {
    // A modelled volume: what it served against its own budgets (a per-direction one too, where it has one).
    const p = v.params;
    const figures = [
      ...(p.iops > 0 ? [{ name: DEVICE_BUDGET_FIGURE, value: v.modelled.units / v.seconds, cap: p.iops }] : []),
      ...(p.bytesPerSecond > 0 ? [{ name: 'device MiB/s (one budget)', value: (v.modelled.readBytes + v.modelled.writeBytes) / 2 ** 20 / v.seconds, cap: p.bytesPerSecond / 2 ** 20 }] : []),
      ...(p.readIops > 0 ? [{ name: 'device read IOPS', value: v.modelled.reads / v.seconds, cap: p.readIops }] : []),
      ...(p.writeIops > 0 ? [{ name: 'device write IOPS', value: v.modelled.writes / v.seconds, cap: p.writeIops }] : []),
    ].map((f) => ({ ...f, ratio: f.value / f.cap }));
    if (figures.length === 0 || v.seconds <= 0) return null;
    const top = figures.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    return {
      ratio: top.ratio,
      busiest: top.name,
      escaped: deviceAccounting(v, c.diagnostics!.series).overBudget,
      detail: `${top.name} ${Math.round(top.value)} of the ${top.cap} budget (mean over the window; ${figures.map((f) => `${f.name} ${Math.round(f.value)}`).join(', ')})`,
    };
  }
  const series = c.diagnostics?.series.filter((s) => s.readIops !== null) ?? [];
  if (!limits.iops || !limits.throughputMiBps || series.length === 0) return null;
  const own = c.diagnostics?.cgroupIo;
  const figures = [
    { name: 'read IOPS', value: p90(series.map((s) => s.readIops!))!, cap: limits.iops },
    { name: 'write IOPS', value: p90(series.map((s) => s.writeIops!))!, cap: limits.iops },
    { name: 'read MiB/s', value: p90(series.map((s) => s.readMBps!))!, cap: limits.throughputMiBps },
    { name: 'write MiB/s', value: p90(series.map((s) => s.writeMBps!))!, cap: limits.throughputMiBps },
    // One budget for reads and writes: what the host's own cgroup did on the device, both ways, over the window (a
    // mean: the split follows demand second by second, the sum is what the budget holds).
    ...(limits.iopsBudget === 'shared' && own ? [{ name: BUDGET_FIGURE, value: own.readIops + own.writeIops, cap: limits.iops }] : []),
  ].map((f) => ({ ...f, ratio: f.value / f.cap }));
  const within = figures.filter((f) => f.ratio <= ABOVE_CAP);
  const top = within.length ? within.reduce((a, b) => (b.ratio > a.ratio ? b : a)) : null;
  const escaped = figures.filter((f) => f.ratio > ABOVE_CAP).map((f) => `${f.name} ${Math.round(f.value)} (cap ${f.cap})`);
  return {
    ratio: top?.ratio ?? 0,
    busiest: top?.name ?? null,
    escaped,
    detail: `${top ? `${top.name} ${Math.round(top.value)} of the ${top.cap} cap` : 'no figure near its cap'} (p90 of per-second figures; ${figures.map((f) => `${f.name} ${Math.round(f.value)}`).join(', ')})`,
  };
}

/** The resource that bound a cluster's throughput, from its wait shares, CPU and device, or null without sampler readings. */
export function boundBy(
  c: ClusterResult,
  limits: { iops: number | null; throughputMiBps: number | null; iopsBudget?: 'shared' | 'separate' } = { iops: null, throughputMiBps: null },
): { resource: string; detail: string } | null {
  const d = c.diagnostics;
  if (!d) return null;
  const counts = breakdownCounts(d.waitEvents);
  const total = breakdownTotal(counts);
  if (total === 0) return null;
  const share = (k: (typeof BREAKDOWN_KEYS)[number]) => counts[k] / total;
  const cpu = d.cpu ? d.cpu.coresBusy / d.cpu.cores : null;
  const pct = (v: number) => `${Math.round(v * 100)} %`;
  const throttle = throttleUse(c, limits);
  const detail = [
    `page reads ${pct(share('pageReads'))}, WAL ${pct(share('walFsync'))}, locks ${pct(share('lockAndScheduler'))}, CPU ${pct(share('cpu'))} of active time`,
    d.cpu ? `${d.cpu.coresBusy.toFixed(2)} of ${d.cpu.cores} cores busy (${d.cpu.source})` : 'CPU not measured',
    throttle ? `device ${throttle.detail}` : null,
  ]
    .filter(Boolean)
    .join('; ');
  // The device at its cap names the bound by the figure that hit it: with O_DIRECT data files that can be the writes.
  // One budget for both is named by what the backends waited on at it (reads, or the WAL's flushes).
  if (throttle && throttle.ratio >= AT_CAP && (throttle.busiest === BUDGET_FIGURE || throttle.busiest === DEVICE_BUDGET_FIGURE)) {
    const waitedOn = share('pageReads') >= share('walFsync') ? 'page reads' : 'WAL flushes';
    return { resource: `IO-bound (${waitedOn} at the IOPS budget)`, detail };
  }
  if (throttle && throttle.ratio >= AT_CAP) return { resource: `IO-bound (${throttle.busiest} at the cap)`, detail };
  if (share('pageReads') >= DOMINANT_SHARE) return { resource: 'IO-bound (page reads)', detail };
  if (share('walFsync') >= DOMINANT_SHARE) return { resource: 'IO-bound (WAL flushes)', detail };
  if (cpu !== null && cpu >= CPU_SATURATED) return { resource: `CPU-bound at ${d.cpu!.cores} cores`, detail };
  if (share('lockAndScheduler') >= DOMINANT_SHARE) return { resource: 'lock-bound', detail };
  return { resource: 'no single bound', detail };
}

/** Self-checks of one cluster's sampler readings. `dataExceedsMemory` decides whether a cold throttle is an error. */
export function samplerChecks(c: ClusterResult, cls: ClassResult, dataExceedsMemory: boolean): Check[] {
  const checks: Check[] = [];
  const scope = c.hostId;
  const run = c.tpsRun;
  const d = c.diagnostics;
  if (run && d) {
    checks.push({
      name: 'sampler rate',
      scope,
      ok: d.samplesPerSecond >= MIN_SAMPLES_PER_SECOND,
      detail: `${d.samples} wait-event samples in ${d.seconds.toFixed(1)} s = ${d.samplesPerSecond.toFixed(1)}/s (at least ${MIN_SAMPLES_PER_SECOND}/s)`,
    });
    if (d.samplerCpuSeconds !== null && d.cpu && d.cpu.seconds > 0)
      checks.push({
        name: 'sampler cost',
        scope,
        ok: d.samplerCpuSeconds <= SAMPLER_COST * d.cpu.seconds,
        severity: 'warning',
        detail: `the sampler's backend used ${d.samplerCpuSeconds.toFixed(2)} CPU s of the host's ${d.cpu.seconds.toFixed(1)} (${((100 * d.samplerCpuSeconds) / d.cpu.seconds).toFixed(1)} %, target <= ${SAMPLER_COST * 100} %)`,
      });
    checks.push(...crossChecks(scope, run, d));
    if (cls.emulated && d.volume) {
      // A modelled volume: its own accounting says whether anything escaped its model.
      const t = throttleUse(c, cls.limits);
      if (d.volume.params.iops > 0)
        checks.push({
          name: 'budget engaged',
          scope,
          ok: t !== null && t.ratio >= AT_CAP,
          severity: dataExceedsMemory ? 'error' : 'warning',
          detail: t
            ? `${t.detail}${t.ratio < AT_CAP ? `: below ${AT_CAP * 100} % of the budget${dataExceedsMemory ? '' : ' (the data fits in memory, so the device is rarely needed)'}` : ''}`
            : 'no device figures: the budget could not be observed',
        });
      const a = deviceAccounting(d.volume, d.series);
      checks.push({ name: 'nothing escaped the device model', scope, ok: a.ok, detail: a.detail });
    } else if (cls.emulated && cls.limits.iops) {
      checks.push({ name: 'nothing escaped the device model', scope, ok: false, detail: 'no modelled volume\'s counters for this window: its accounting could not be checked (the server did not answer, or the run predates the modelled volume)' });
    }
  } else if (run) {
    checks.push({ name: 'sampler readings taken', scope, ok: false, severity: 'warning', detail: 'the TPS run has no sampler readings (sampler disabled?)' });
  }
  return checks;
}
