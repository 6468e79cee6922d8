/**
 * How close each class of this run came to the published class it stands for (the baseline to the reference's gp3,
 * the candidate to its NVMe): TPS, mean latency and the IO:DataFileRead share with the difference in per cent, the
 * resource that bound the class; each modelled device beside the published figures it stands for, what it delivered,
 * and why a budget-bound class was bound (its operations per transaction, and where the run's dirtied pages went).
 * Pure; report.md and report.html show it.
 */
import { REFERENCE, REFERENCE_ROLES } from '../../common/results/reference';
import type { ClassResult, ClusterResult, ExperimentResult } from '../../common/results/result';
import { describeBudget, type DeviceModel } from '../../common/model/devices';
import { referenceClassLabel, referenceFromRun, REFERENCE_FROM_RUN_GOAL_PCT } from '../../common/model/predict-reference';
import { throttleUse, AT_CAP } from '../bottlenecks';
import { fmt } from '../../common/core/format';

/** The wait event whose share the reference publishes per class. */
const DATA_FILE_READ = 'IO:DataFileRead';

/** One class next to its published counterpart; null figures were not measured. */
export interface FidelityRow {
  comparison: string;
  tps: { run: number | null; published: number; difference: number | null };
  latencyMs: { run: number | null; published: number; difference: number | null };
  dataFileReadShare: { run: number | null; published: number; difference: number | null };
  boundBy: string | null;
}

/** (run - published) / published, or null when the run has no figure. */
export function relativeDifference(run: number | null | undefined, published: number): number | null {
  return run === null || run === undefined || published === 0 ? null : (run - published) / published;
}

function describe(name: string, cls: ClassResult): string {
  if (cls.device) return `modelled ${name}`;
  if (cls.kind === 'emulated-ebs' || cls.kind === 'nvme') return cls.emulated ? `emulated ${name}` : `${name} (not emulated)`;
  return name;
}

/** Postgres data pages, KiB. */
const PAGE_KIB = 8;

/**
 * Why a class on a modelled volume was bound by its budget, from the device's own counts: its operations per
 * transaction (reads, and writes: the WAL's and the data pages'), the bound the budget puts on TPS, and what the run's
 * dirtied pages did (stayed in shared_buffers, or were written back from the budget). Null without the figures.
 */
export function budgetBoundWhy(name: string, c: ClusterResult, sharedBuffersMiB: number): string | null {
  const d = c.diagnostics;
  const v = d?.volume;
  const run = c.tpsRun;
  if (!d || !v || !run || v.params.iops <= 0 || v.seconds <= 0) return null;
  const tx = run.tps * v.seconds;
  if (tx <= 0) return null;
  const rate = v.modelled.units / v.seconds;
  const used = rate / v.params.iops;
  const perTx = (n: number) => n / tx;
  const walFlushes = d.wal?.wal_sync ?? null;
  const dataWrites = d.bufferWrites ?? null;
  const heapBytes = c.load?.heapBytes ?? c.dataSet?.heapBytes;
  const heapPages = heapBytes ? heapBytes / (PAGE_KIB * 1024) : null;
  // A random single-row UPDATE dirties one heap page; over T transactions on N pages, N (1 - e^(-T/N)) distinct ones.
  const window = run.transactions;
  const dirtied = heapPages ? heapPages * (1 - Math.exp(-window / heapPages)) : null;
  const sbPages = (sharedBuffersMiB * 1024) / PAGE_KIB;
  const opsPerTx = perTx(v.modelled.units);
  const parts = [
    `${name} ${used >= AT_CAP ? 'was bound by' : 'ran below'} its budget of ${fmt(v.params.iops, 0)} operations a second: it served ${fmt(rate, 0)} (${fmt(100 * used, 0)} %), ${fmt(perTx(v.modelled.reads), 2)} reads and ${fmt(perTx(v.modelled.writes), 2)} writes a transaction (${fmt(opsPerTx, 2)} operations in its units)`,
    `so the budget allows at most ${fmt(v.params.iops / opsPerTx, 0)} TPS; it ran ${fmt(run.tps, 0)}`,
    walFlushes !== null || dataWrites !== null
      ? `of the writes, ${walFlushes !== null ? `${fmt(perTx(walFlushes), 2)} a transaction were WAL flushes` : 'the WAL flushes were not counted'} and ${dataWrites !== null ? `${fmt(perTx(dataWrites), 2)} data pages written out of shared_buffers` : 'data pages were not counted'}`
      : null,
    dirtied !== null
      ? `the run dirtied about ${fmt(dirtied, 0)} pages (${fmt((dirtied * PAGE_KIB) / 1024, 0)} MiB, one heap page an UPDATE) against ${fmt(sharedBuffersMiB, 0)} MiB of shared_buffers: ${dirtied < sbPages * 0.5 ? 'memory held them, so the budget went to reads and the WAL, as in the reference' : 'more than memory holds for the run, so their writeback paid from the budget, where the reference\'s 16 GiB absorbed its run\'s 4 GB'}`
      : null,
  ].filter(Boolean);
  return `${parts.join('; ')}.`;
}

/** A device model beside the published figures it stands for, and what the device delivered in the TPS run. */
function deviceLines(name: string, cls: ClassResult): string[] {
  const m: DeviceModel | undefined = cls.device;
  if (!m) return [];
  const lines = [
    `- **${name}**: the ${m.name} model, standing for ${m.standsFor}: ${describeBudget(m)}; ${m.readLatencyMs} ms a read, ${m.writeLatencyMs} ms a write, ${m.flushLatencyMs} ms a flush; queue depth ${m.queueDepth}. Sources: ${m.sources.map((src) => `${src.figure} (${src.source})`).join('; ')}.`,
  ];
  for (const c of cls.clusters) {
    const v = c.diagnostics?.volume;
    if (!v) continue;
    const ms = (x: number | null) => (x === null ? '–' : fmt(x, 3));
    lines.push(
      `  - ${c.hostId}: served ${fmt((v.modelled.reads + v.modelled.writes) / v.seconds, 0)} I/Os a second (${fmt(v.modelled.reads / v.seconds, 0)} reads, ${fmt(v.modelled.writes / v.seconds, 0)} writes, ${fmt(v.served.flushes / v.seconds, 0)} flushes); mean read ${ms(v.meanReadLatencyMs)} ms, write ${ms(v.meanWriteLatencyMs)} ms from arrival (the block device: ${ms(v.kernel?.readLatencyMs ?? null)} / ${ms(v.kernel?.writeLatencyMs ?? null)} ms); ${fmt(v.meanQueue, 1)} I/Os in the device on average; ${fmt(v.throttleWaits, 0)} I/Os held by the budget; bytes in ${v.backing === 'ram' ? 'RAM' : 'a file'}; the server used ${fmt((100 * v.serverCpuSeconds) / v.seconds, 1)} % of a core`,
    );
  }
  return lines;
}

/** The baseline and candidate classes next to the reference's gp3 and NVMe; empty without a comparison. */
export function fidelityRows(result: ExperimentResult): FidelityRow[] {
  if (!result.compare) return [];
  const roles = [
    [result.compare.baseline, REFERENCE_ROLES.baseline],
    [result.compare.candidate, REFERENCE_ROLES.candidate],
  ] as const;
  return roles.flatMap(([name, refName]) => {
    const cls = result.classes[name];
    if (!cls) return [];
    const ref = REFERENCE.results[refName];
    const share = cls.waitEventShares ? (cls.waitEventShares[DATA_FILE_READ] ?? 0) : null;
    return [
      {
        comparison: `${describe(name, cls)} vs published ${refName === 'nvme' ? 'NVMe' : refName}`,
        tps: { run: cls.medianTps, published: ref.medianTps, difference: relativeDifference(cls.medianTps, ref.medianTps) },
        latencyMs: {
          run: cls.medianLatencyMs,
          published: ref.medianLatencyMs,
          difference: relativeDifference(cls.medianLatencyMs, ref.medianLatencyMs),
        },
        dataFileReadShare: {
          run: share,
          published: ref.dataFileReadWaitShare,
          difference: relativeDifference(share, ref.dataFileReadWaitShare),
        },
        boundBy: cls.boundBy ?? null,
      },
    ];
  });
}

const signedPct = (v: number | null) => (v === null ? '–' : `${v >= 0 ? '+' : ''}${fmt(v * 100, 1)} %`);
const sharePct = (v: number | null) => (v === null ? '–' : `${fmt(v * 100, 1)} %`);

/** The "Fidelity to the reference" section of report.md; empty without a comparison. */
export function fidelityMarkdown(result: ExperimentResult): string[] {
  const rows = fidelityRows(result);
  if (rows.length === 0) return [];
  const lines = ['## Fidelity to the reference', ''];
  lines.push(
    'Each class next to the published class it stands for: this run / published (difference in per cent of the published figure). The machines differ (here the host\'s cores and memory limit, there 16 vCPUs and 64 GiB), so the baseline\'s row is the one the emulation answers for.',
    '',
  );
  lines.push('| comparison | TPS | mean latency (ms) | IO:DataFileRead share | bound by (this run) |', '|---|---|---|---|---|');
  for (const r of rows)
    lines.push(
      `| ${r.comparison} | ${fmt(r.tps.run, 0)} / ${fmt(r.tps.published, 0)} (${signedPct(r.tps.difference)}) | ${fmt(r.latencyMs.run, 2)} / ${fmt(r.latencyMs.published, 1)} (${signedPct(r.latencyMs.difference)}) | ${sharePct(r.dataFileReadShare.run)} / ${sharePct(r.dataFileReadShare.published)} (${signedPct(r.dataFileReadShare.difference)}) | ${r.boundBy ?? '–'} |`,
    );
  lines.push('');
  // Each modelled device beside the published one it stands for, and what it delivered.
  const devices = Object.entries(result.classes).flatMap(([name, cls]) => deviceLines(name, cls));
  if (devices.length) lines.push('Modelled devices (docs/storage-emulation.md), during the TPS run:', '', ...devices, '');
  // Devices of runs before the modelled volume: how their throttles spent the cap.
  const caps = Object.values(result.classes).flatMap((cls) =>
    cls.emulated && cls.limits.iops && !cls.device
      ? cls.clusters.flatMap((c) => {
          const t = throttleUse(c, cls.limits);
          return t ? [`- ${c.hostId}: ${t.detail}${t.escaped.length ? `; above the cap: ${t.escaped.join(', ')}` : ''}`] : [];
        })
      : [],
  );
  if (caps.length) lines.push('Emulated devices during the TPS run:', '', ...caps, '');
  const direct = result.spec.postgres.directIo;
  lines.push(
    direct === 'off'
      ? 'Data files are written through the page cache (postgres.directIo "off"), as the reference ran.'
      : `Postgres opened ${direct === 'data' ? 'its data files' : 'its data files and WAL'} with O_DIRECT (postgres.directIo "${direct}") on every class: writes reach the device as the backend's own I/O, inside its host's I/O limit, and shared_buffers is each class's only cache of the data.`,
    '',
  );
  // Why a budget-bound class was bound, from its device's own counts.
  for (const [name, cls] of Object.entries(result.classes)) {
    const c = cls.clusters.find((k) => k.tpsRun && k.diagnostics?.volume);
    const why = c ? budgetBoundWhy(name, c, result.spec.postgres.sharedBuffersMiB) : null;
    if (why) lines.push(why, '');
  }
  lines.push(...referenceScaleMarkdown(result));
  return lines;
}

/**
 * The reference's two classes at their own scale, predicted from this run's modelled classes (common/model/
 * predict-reference.ts), beside the published TPS: what `storage-lab predict --reference --from RUN` prints.
 */
export function referenceScaleMarkdown(result: ExperimentResult): string[] {
  let found: ReturnType<typeof referenceFromRun>;
  try {
    found = referenceFromRun(result);
  } catch (err) {
    return ['### Predicted at the reference\'s scale', '', `Not predicted: ${(err as Error).message}.`, ''];
  }
  const { rows, problems } = found;
  if (!rows.length) return problems.length && Object.values(result.classes).some((c) => c.device) ? ['### Predicted at the reference\'s scale', '', `Not predicted: ${problems.join('; ')}.`, ''] : [];
  const n = (v: number) => fmt(v, 0);
  const lines = [
    '### Predicted at the reference\'s scale',
    '',
    `Each published class predicted from each class of this run (the model, docs/prediction-model.md, on the lab's model of its device, ${REFERENCE.setup.vcpus} vCPUs, ${REFERENCE.setup.memoryGiB} GiB, ${REFERENCE.setup.clients} clients, ${REFERENCE.setup.heapGiB} GiB of heap; no published result enters a prediction). Goal: within ${REFERENCE_FROM_RUN_GOAL_PCT} %.`,
    '',
    '| published class | from | predicted (interval) | published | error | interval holds it | the terms |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows)
    lines.push(
      `| ${referenceClassLabel(r.target)} | ${r.source} | ${n(r.prediction.tps)} (${n(r.prediction.interval.low)}-${n(r.prediction.interval.high)}) | ${n(r.published.tps)} | ${signedPct(r.tpsErrorPct / 100)} | ${r.held ? 'yes' : 'no'} | ${r.terms} |`,
    );
  lines.push('');
  for (const p of problems) lines.push(`Not a source: ${p}.`, '');
  return lines;
}
