/**
 * How close each class of this run came to the published class it stands for (the baseline to the reference's gp3,
 * the candidate to its NVMe): TPS, mean latency and the IO:DataFileRead share with the difference in per cent, the
 * resource that bound the class, and how the emulated device used its cap. Pure; report.md and report.html show it.
 */
import { REFERENCE, REFERENCE_ROLES } from '../../common/results/reference';
import type { ClassResult, ExperimentResult } from '../../common/results/result';
import { throttleUse } from '../bottlenecks';
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
  if (cls.kind === 'emulated-ebs') return cls.emulated ? `emulated ${name}` : `${name} (not emulated)`;
  return name;
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
  // How the emulated devices spent their caps: a volume holds reads and writes alike.
  const caps = Object.values(result.classes).flatMap((cls) =>
    cls.emulated && cls.limits.iops
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
  const budgets = Object.entries(result.spec.storageClasses).filter(([name, cls]) => cls.kind === 'emulated-ebs' && result.classes[name]?.emulated);
  for (const [name, cls] of budgets)
    lines.push(
      cls.iopsBudget === 'shared'
        ? `${name}: one IOPS budget for reads and writes, as EBS (iopsBudget "shared"), the page cache's writeback included. The reference's 64 GiB absorbed the pages its 5-minute run dirtied, so its 3,000 IOPS went to reads and the WAL; this host's memory cannot hold a run's dirtied pages, so here the writeback pays from the same budget and the class's throughput sits below the reference's (docs/storage-emulation.md, "The reference's bound").`
        : `${name}: reads and writes each had ${fmt(cls.iops ?? 3000, 0)} IOPS (the kernel's separate limits, iopsBudget "separate"), where an EBS volume has one budget for both.`,
      '',
    );
  return lines;
}
