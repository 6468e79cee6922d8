/**
 * The modelled volume checked against its model with fio (lib/fio.ts): the I/O patterns a database makes, each run on a
 * real modelled volume's loop device, and what fio and the device's own counters measured beside what the model says.
 * Shared by the CI test (test/integration/volume-fio.test.ts, short runs) and the bench (bench/volume-fidelity.ts).
 *
 * - randread and randwrite of 8 KiB at queue depth 1: the model's latency (±5 %);
 * - the same at queue depth 32, and a 70/30 read/write mix: the budget (±3 %);
 * - small sequential writes, each followed by fsync (a WAL's pattern): a write and a flush each, the model's latency;
 * - a buffered writer in a small memory cgroup (a host's page cache): the kernel's writeback issues the device's
 *   writes, and the device delivers its budget (±3 %, whichever of its IOPS and bytes binds).
 *
 * Every pattern's window is also held to the device's own accounting: nothing escaped the model.
 */
import { deviceAccounting, type DeviceAccounting } from '../analysis/bottlenecks';
import type { SamplerSecond, VolumeWindow } from '../common/results/sampler-readings';
import { createHostCgroup, detectCgroups, joinScript, removeHostCgroup } from '../lib/cgroups';
import { runFio, type FioJob, type FioResult } from '../lib/fio';
import { volumeWindow } from '../lib/sampler';
import type { VolumeControl, VolumeStats } from '../lib/volume';

/** What a pattern is judged by: the model's latency at queue depth 1, or the budget at saturation. */
export type Judged = 'read latency' | 'write latency' | 'flush latency' | 'budget';

export interface Pattern {
  name: string;
  judged: Judged;
  job: FioJob;
  /** Run fio in a memory cgroup of this size (MiB): its page cache is a host's, written back by the kernel. */
  memoryCgroupMiB?: number;
}

/** A span counts as saturated when this many I/Os were in the device at both its ends (gp3 serves about 3 at once). */
export const SATURATED = 8;

/** The tolerance each judged figure is held to. */
export const TOLERANCE: Record<Judged, number> = { 'read latency': 0.05, 'write latency': 0.05, 'flush latency': 0.05, budget: 0.03 };

/** The patterns, each `seconds` long, on a loop device (the region fio uses: the first `regionMiB` of the volume). */
export function patterns(device: string, seconds: number, regionMiB = 512): Pattern[] {
  const base = { filename: `/dev/${device}`, size: `${regionMiB}M`, bs: '8k', time_based: 1, runtime: seconds, randrepeat: 0, norandommap: 1 };
  const direct = { ...base, direct: 1, ioengine: 'libaio' };
  // At saturation two jobs of 32 each: one fio process short of CPU on a busy machine leaves the other's I/O queued.
  const saturating = { ...direct, numjobs: 2, group_reporting: 1, iodepth: 32, ramp_time: 1 };
  return [
    { name: 'randread 8 KiB, QD 1', judged: 'read latency', job: { ...direct, name: 'randread-qd1', rw: 'randread', iodepth: 1 } },
    { name: 'randwrite 8 KiB, QD 1', judged: 'write latency', job: { ...direct, name: 'randwrite-qd1', rw: 'randwrite', iodepth: 1 } },
    { name: 'randread 8 KiB, QD 32 (x2)', judged: 'budget', job: { ...saturating, name: 'randread-qd32', rw: 'randread' } },
    { name: 'randwrite 8 KiB, QD 32 (x2)', judged: 'budget', job: { ...saturating, name: 'randwrite-qd32', rw: 'randwrite' } },
    { name: '70/30 read/write 8 KiB, QD 32 (x2)', judged: 'budget', job: { ...saturating, name: 'randrw-qd32', rw: 'randrw', rwmixread: 70 } },
    { name: 'sequential 8 KiB writes, fsync each', judged: 'flush latency', job: { ...base, name: 'write-fsync', rw: 'write', ioengine: 'psync', direct: 0, fsync: 1 } },
    {
      // Four writers of a host-sized page cache: their dirty pages reach the device only by the kernel's writeback.
      name: 'buffered random writes, kernel writeback (64 MiB page cache)',
      judged: 'budget',
      job: { ...base, name: 'buffered-writeback', rw: 'randwrite', ioengine: 'psync', direct: 0, numjobs: 4, group_reporting: 1 },
      memoryCgroupMiB: 64,
    },
  ];
}

/** One pattern's outcome: fio's figures, the device's over the same span, the model's figure beside the measured one. */
export interface PatternResult {
  pattern: string;
  judged: Judged;
  fio: FioResult;
  window: VolumeWindow;
  /** The model's figure and the measured one: ms for a latency, the binding budget's share for the budget (1 = all of it). */
  model: number;
  measured: number;
  /** (measured - model) / model. */
  error: number;
  withinTolerance: boolean;
  /** For a budget pattern, the share of its time the device spent saturated (the budget holding I/Os back). */
  saturatedShare: number | null;
  /** Operations a second the device served (its units), and fio's I/Os a second. */
  deviceOpsPerSecond: number;
  fioIops: number;
  accounting: DeviceAccounting;
}

/** The share of the binding budget a window used: the largest of its operations and bytes against their rates. */
export function budgetShare(v: VolumeWindow): number {
  const p = v.params;
  const shares = [
    p.iops > 0 ? v.modelled.units / v.seconds / p.iops : 0,
    p.bytesPerSecond > 0 ? (v.modelled.readBytes + v.modelled.writeBytes) / v.seconds / p.bytesPerSecond : 0,
    p.readIops > 0 ? v.modelled.reads / v.seconds / p.readIops : 0,
    p.writeIops > 0 ? v.modelled.writes / v.seconds / p.writeIops : 0,
  ];
  return Math.max(...shares);
}

/** Reads the volume every `everyMs` while `run` runs: the readings, the first and last left out by the caller. */
async function readWhile<T>(control: VolumeControl, everyMs: number, run: () => Promise<T>): Promise<{ result: T; readings: VolumeStats[] }> {
  const readings: VolumeStats[] = [await control.stats()];
  let done = false;
  const reader = (async () => {
    while (!done) {
      await new Promise((r) => setTimeout(r, everyMs));
      if (!done) readings.push(await control.stats());
    }
  })();
  try {
    const result = await run();
    return { result, readings };
  } finally {
    done = true;
    await reader;
    readings.push(await control.stats());
  }
}

/** Runs one pattern on the volume and judges it against the model. */
export async function runPattern(control: VolumeControl, pattern: Pattern): Promise<PatternResult> {
  let wrap: ((argv: string[]) => string[]) | undefined;
  let cleanup = () => undefined as void;
  if (pattern.memoryCgroupMiB) {
    const support = detectCgroups();
    if (!support.kind) throw new Error(`the pattern "${pattern.name}" needs a memory cgroup: ${support.reason}`);
    const cg = createHostCgroup(support.kind, `volume-fio-${process.pid}-${Date.now()}`, pattern.memoryCgroupMiB);
    wrap = (argv) => ['sh', '-c', `${joinScript(cg)} && exec "$@"`, 'sh', ...argv];
    cleanup = () => removeHostCgroup(cg);
  }
  let fio: FioResult;
  let readings: VolumeStats[];
  try {
    ({ result: fio, readings } = await readWhile(control, 250, () => runFio(pattern.job, { wrap })));
  } finally {
    cleanup();
  }
  const window = volumeWindow(readings[0], readings[readings.length - 1]);
  // The device's operations second by second (its own clock), for the accounting's per-second bound.
  const series: SamplerSecond[] = [];
  for (let i = 4; i < readings.length; i += 4) {
    const a = readings[i - 4];
    const b = readings[i];
    series.push({ second: series.length + 1, activeSessions: 0, dataFileRead: 0, cpuCores: null, readIops: null, writeIops: null, readMBps: null, writeMBps: null, deviceOps: (b.modelledUnits - a.modelledUnits) / (b.atSeconds - a.atSeconds) });
  }
  const p = window.params;
  let model: number;
  let measured: number;
  let saturatedShare: number | null = null;
  if (pattern.judged === 'budget') {
    // At saturation: the spans between readings that began and ended with at least SATURATED I/Os in the device
    // (more than its latency keeps in service: the budget was holding them back); the share of the budget the
    // device delivered over those spans, by its own count of completed I/Os.
    let span = { seconds: 0, units: 0, bytes: 0, reads: 0, writes: 0 };
    for (let i = 1; i < readings.length; i++) {
      const a = readings[i - 1];
      const b = readings[i];
      const dt = b.atSeconds - a.atSeconds;
      if (dt <= 0 || a.inFlight < SATURATED || b.inFlight < SATURATED) continue;
      span = {
        seconds: span.seconds + dt,
        units: span.units + b.modelledUnits - a.modelledUnits,
        bytes: span.bytes + b.modelledReadBytes + b.modelledWriteBytes - a.modelledReadBytes - a.modelledWriteBytes,
        reads: span.reads + b.modelledReads - a.modelledReads,
        writes: span.writes + b.modelledWrites - a.modelledWrites,
      };
    }
    saturatedShare = span.seconds / window.seconds;
    model = 1;
    measured = span.seconds > 0 ? budgetShare({ ...window, seconds: span.seconds, modelled: { units: span.units, readBytes: span.bytes, writeBytes: 0, reads: span.reads, writes: span.writes } }) : 0;
  } else if (pattern.judged === 'read latency') {
    model = p.readLatencyUs / 1000;
    measured = fio.readLatencyMs ?? NaN;
  } else if (pattern.judged === 'write latency') {
    model = p.writeLatencyUs / 1000;
    measured = fio.writeLatencyMs ?? NaN;
  } else {
    // An fsync of one written page: the page's write, then the flush.
    model = (p.writeLatencyUs + p.flushLatencyUs) / 1000;
    measured = fio.syncLatencyMs ?? NaN;
  }
  const error = (measured - model) / model;
  return {
    pattern: pattern.name,
    judged: pattern.judged,
    fio,
    window,
    model,
    measured,
    error,
    withinTolerance: Math.abs(error) <= TOLERANCE[pattern.judged],
    saturatedShare,
    deviceOpsPerSecond: window.modelled.units / window.seconds,
    fioIops: fio.readIops + fio.writeIops,
    accounting: deviceAccounting(window, series),
  };
}

/** The results as a Markdown table: pattern, model, measured, error, fio's and the device's rates, accounting. */
export function fidelityTable(results: PatternResult[]): string[] {
  const f = (v: number, d = 0) => v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const figure = (r: PatternResult, v: number) => (r.judged === 'budget' ? `${f(100 * v, 1)} % of the budget` : `${f(v, 3)} ms`);
  return [
    '| pattern | judged by | model | measured | error | saturated | fio IOPS | device ops/s | I/Os the kernel counted, not the model | served unmodelled |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.pattern} | ${r.judged} | ${figure(r, r.model)} | ${figure(r, r.measured)} | ${r.error >= 0 ? '+' : ''}${f(100 * r.error, 1)} %${r.withinTolerance ? '' : ' (outside ±' + f(100 * TOLERANCE[r.judged], 0) + ' %)'} | ${r.saturatedShare === null ? '–' : `${f(100 * r.saturatedShare, 0)} % of the time`} | ${f(r.fioIops)} | ${f(r.deviceOpsPerSecond)} | ${r.accounting.escaped ?? '–'} | ${r.accounting.unmodelled} |`,
    ),
  ];
}
