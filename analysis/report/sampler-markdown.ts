/** report.md sections for the diagnostics: the latency breakdown next to the reference, wait events, phases, samplers. */
import type { ExperimentResult } from '../../common/results/result';
import { breakdownRows, fmt } from './summary';

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
  if (clusters.some((c) => c.phases.vacuum || c.phases.backlog)) {
    lines.push('## VACUUM over bloat and replication backlog', '');
    lines.push(
      '| host | dead MiB (requested) | VACUUM (s) | pages scanned | tuples removed | VACUUM read / write MB/s | device r / w IOPS during VACUUM | backlog MiB (requested) | drain (s) | drain MB/s |',
      '|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const c of clusters) {
      const v = c.phases.vacuum;
      const b = c.phases.backlog;
      lines.push(
        `| ${c.hostId} | ${v ? `${fmt(v.deadBytes / MIB)} (${fmt(v.requestedBytes / MIB)})` : '–'} | ${fmt(v?.vacuumSeconds, 2)} | ${fmt(v?.verbose.pages.scanned, 0)} | ${fmt(v?.verbose.tuples.removed, 0)} | ${v ? `${fmt(v.verbose.avgReadMBps)} / ${fmt(v.verbose.avgWriteMBps)}` : '–'} | ${v?.device ? `${fmt(v.device.readIops, 0)} / ${fmt(v.device.writeIops, 0)}` : '–'} | ${b ? `${fmt(b.backlogBytes / MIB)} (${fmt(b.requestedBytes / MIB)})` : '–'} | ${fmt(b?.drainSeconds, 2)} | ${fmt(b?.drainMBps)} |`,
      );
    }
    lines.push('');
  }

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
