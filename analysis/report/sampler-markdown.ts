/** report.md sections from the sampler's readings: the latency breakdown next to the reference, wait events, each TPS run's readings. */
import type { ExperimentResult } from '../../common/results/result';
import { fmt } from '../../common/core/format';
import { breakdownRows } from './summary';

const MIB = 2 ** 20;
const pct = (v: number | undefined) => (v === undefined ? '–' : `${fmt(v * 100, 1)} %`);

/** The most sampled wait events of a class, largest first. */
export function topEvents(shares: Record<string, number> | undefined, count: number): [string, number][] {
  return Object.entries(shares ?? {})
    .sort((a, b) => b[1] - a[1])
    .slice(0, count);
}

export function samplerMarkdown(result: ExperimentResult): string[] {
  const lines: string[] = [];
  const rows = breakdownRows(result);
  if (rows.length && result.compare) {
    const { baseline, candidate } = result.compare;
    lines.push('## Latency per transaction, broken down (ms)', '');
    lines.push(
      'Mean latency apportioned by the shares of sampled wait events of active pgbench backends (medians across clusters); the reference shows the same parts.',
      '',
    );
    lines.push(`| part | ${baseline} (this run) | ${candidate} (this run) | gp3 (reference) | NVMe (reference) |`, '|---|---|---|---|---|');
    for (const r of rows) lines.push(`| ${r.part} | ${r.values.join(' | ')} |`);
    lines.push('');
  }

  const sampled = Object.entries(result.classes).filter(([, c]) => c.waitEventShares);
  if (sampled.length) {
    lines.push('## Wait events of active backends', '');
    lines.push('| class | bound by | wait types (share of active samples) | top wait events |', '|---|---|---|---|');
    for (const [name, c] of sampled) {
      const types = topEvents(c.waitClassShares, 6)
        .map(([k, v]) => `${k} ${pct(v)}`)
        .join(', ');
      const events = topEvents(c.waitEventShares, 5)
        .map(([k, v]) => `${k} ${pct(v)}`)
        .join(', ');
      lines.push(`| ${name} | ${c.boundBy ?? '–'} | ${types} | ${events} |`);
    }
    lines.push('');
  }

  const clusters = Object.values(result.classes).flatMap((c) => c.clusters);
  const diagnosed = clusters.filter((c) => c.diagnostics);
  if (diagnosed.length) {
    lines.push('## Sampler readings of the TPS runs', '');
    lines.push(
      '| host | samples/s | active backends | CPU s (cores busy) | device r / w IOPS | device r / w MiB/s | read latency (ms) | ms per block read | checkpoints | WAL MiB |',
      '|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const c of diagnosed) {
      const d = c.diagnostics!;
      const dev = d.device;
      const walBytes = d.wal?.wal_bytes;
      lines.push(
        `| ${c.hostId} | ${fmt(d.samplesPerSecond)} | ${fmt(d.avgActiveSessions)} | ${d.cpu ? `${fmt(d.cpu.seconds)} (${fmt(d.cpu.coresBusy, 2)} of ${d.cpu.cores}, ${d.cpu.source})` : '–'} | ${dev ? `${fmt(dev.readIops, 0)} / ${fmt(dev.writeIops, 0)}` : '–'} | ${dev ? `${fmt(dev.readMBps)} / ${fmt(dev.writeMBps)}` : '–'} | ${fmt(dev?.readLatencyMs, 2)} | ${fmt(d.database.msPerBlockRead, 3)} | ${d.checkpoints ? fmt(d.checkpoints.timed + d.checkpoints.requested, 0) : '–'} | ${walBytes === undefined ? '–' : fmt(walBytes / MIB)} |`,
      );
    }
    const notes = [...new Set(diagnosed.flatMap((c) => c.diagnostics!.notes))];
    if (notes.length) lines.push('', ...notes.map((n) => `Note: ${n}.`));
    lines.push('');
  }
  return lines;
}
