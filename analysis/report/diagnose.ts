/**
 * A diagnose capture as text (the CLI), report.md and a self-contained report.html in the lab's report style
 * (the same page, tables and SVG charts as a run's report).
 */
import { BREAKDOWN_LABELS, breakdownKeyOf } from '../../common/results/breakdown';
import { syncStandbyWait, VERDICT_GROUPS, verdictLine, type DiagnoseCapture, type VerdictGroup } from '../../common/results/diagnose-capture';
import { chartFigure, htmlPage } from './html';
import { fmt } from '../../common/core/format';
import { barChart, lineChart } from './svg-charts';

const MIB = 2 ** 20;
const pct = (v: number | null | undefined) => (v === null || v === undefined ? '–' : `${fmt(v * 100, 1)} %`);

const GROUP_LABELS: Record<VerdictGroup, string> = {
  storage: 'storage (IO:*, WAL waits, BufferIO)',
  cpu: 'CPU (active, no wait event)',
  lock: 'locks and LWLocks',
  client: 'client (idle in transaction, Client:*)',
  other: 'other waits (IPC, Timeout, ...)',
};

/** The lines the CLI prints: the verdict line first after the header, then the evidence and the advice. */
export function captureText(c: DiagnoseCapture): string[] {
  const d = c.diagnostics;
  const lines = [
    `storage-lab diagnose: ${c.target}, PostgreSQL ${c.serverVersion}, ${fmt(d.seconds, 1)} s, ${d.samples} samples (${fmt(d.samplesPerSecond, 1)}/s)`,
    verdictLine(c.verdict, c.evidence),
    `  why: ${c.reason}`,
    `  transactions: ${fmt(c.tps, 1)}/s (the capture's own ${d.ownTransactions ?? 0} read-only ones left out)`,
  ];
  if (d.database.msPerBlockRead !== null && c.evidence.trackIoTiming)
    lines.push(`  block reads: ${fmt(d.database.blksRead / d.seconds, 0)}/s at ${fmt(d.database.msPerBlockRead, 3)} ms each; hit ratio ${pct(d.database.hitRatio)}`);
  if (c.fsync)
    lines.push(`  fsync probe: ${c.fsync.method} ${fmt(c.fsync.usecsPerOp, 0)} µs per 8 kB write + sync (${fmt(c.fsync.opsPerSecond, 0)}/s), in ${c.fsync.testFileDir}${c.fsync.device ? ` on ${c.fsync.device}` : ''}`);
  if (d.device)
    lines.push(
      `  device ${d.device.name}: ${fmt(d.device.readIops, 0)} reads/s (${fmt(d.device.readLatencyMs, 2)} ms), ${fmt(d.device.writeIops, 0)} writes/s (${fmt(d.device.writeLatencyMs, 2)} ms), ${pct(d.device.utilization)} busy`,
    );
  if (d.cpu) lines.push(`  CPU: ${fmt(d.cpu.coresBusy, 2)} of ${d.cpu.cores} cores busy (this machine)`);
  const walBytes = d.wal?.wal_bytes ?? d.walBytes;
  if (walBytes !== undefined) lines.push(`  WAL: ${fmt(walBytes / MIB / d.seconds, 2)} MiB/s; checkpoints ${d.checkpoints ? d.checkpoints.timed + d.checkpoints.requested : '–'} in the window`);
  const standbys = c.replication?.standbys ?? [];
  if (standbys.length) {
    const wait = syncStandbyWait(c);
    lines.push(
      `  standbys: ${standbys.map((s) => `${s.name} (${s.syncState}, flush lag ${s.flushLagMs === null ? '–' : `${fmt(s.flushLagMs, 2)} ms`}${s.flushLagReadings ? `, median of ${s.flushLagReadings} readings` : ''})`).join(', ')}${wait ? `; commits wait for them: ${wait.detail}` : '; commits do not wait for them'}`,
    );
  }
  if (c.advice.length) lines.push('advice:', ...c.advice.map((a) => `  - ${a}`));
  return lines;
}

/** report.md of a capture. */
export function captureMarkdown(c: DiagnoseCapture): string {
  const d = c.diagnostics;
  const e = c.evidence;
  const lines: string[] = [
    `# Storage Lab diagnosis: ${c.target}`,
    '',
    `Captured ${c.capturedAt}: PostgreSQL ${c.serverVersion}, ${fmt(d.seconds, 1)} s, ${d.samples} wait-event samples of the database's client backends (${fmt(d.samplesPerSecond, 1)}/s), read-only.`,
    `Role: ${c.privileges.superuser ? 'superuser' : c.privileges.pgMonitor ? 'pg_monitor' : '**without pg_monitor** (other roles\' sessions are hidden)'}; server ${c.local ? `on this machine (data directory ${c.local.dataDirectory}${c.local.device ? ` on ${c.local.device}` : ''})` : 'on another machine'}.`,
    '',
    `**Verdict: ${c.verdict}**: ${c.reason}.`,
    '',
    `\`${verdictLine(c.verdict, e)}\``,
    '',
    '## Where in-transaction time went',
    '',
    `${fmt(e.avgActive, 2)} sessions active and ${fmt(e.avgIdleInTransaction, 2)} idle in a transaction on average; ${d.sessions?.distinctBackends ?? '–'} distinct backends seen; ${fmt(c.tps, 1)} transactions a second.`,
    '',
    '| group | share |',
    '|---|---|',
    ...VERDICT_GROUPS.map((g) => `| ${GROUP_LABELS[g]} | ${pct(e.shares[g])} |`),
    '',
    '| wait event | share of active samples | breakdown part |',
    '|---|---|---|',
    ...Object.entries(d.waitEvents)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 10)
      .map(([event, n]) => `| ${event} | ${pct(n / Math.max(1, Object.values(d.waitEvents).reduce((s, x) => s + x, 0)))} | ${BREAKDOWN_LABELS[breakdownKeyOf(event)]} |`),
    '',
    '## Storage',
    '',
    '| figure | value |',
    '|---|---|',
    `| block reads / s | ${fmt(d.database.blksRead / d.seconds, 1)} |`,
    `| ms per block read (blk_read_time / blks_read) | ${e.trackIoTiming ? fmt(d.database.msPerBlockRead, 3) : 'unknown: track_io_timing is off'} |`,
    `| buffer hit ratio | ${pct(d.database.hitRatio)} |`,
    `| data pages written / s (checkpoints, background writer, backends) | ${fmt((d.bufferWrites ?? 0) / d.seconds, 1)} |`,
    `| WAL MiB / s | ${fmt((d.wal?.wal_bytes ?? d.walBytes ?? 0) / MIB / d.seconds, 2)} |`,
    `| WAL syncs / s, ms per sync | ${d.wal ? `${fmt((d.wal.wal_sync ?? 0) / d.seconds, 1)}, ${d.wal.wal_sync && d.wal.wal_sync_time ? fmt(d.wal.wal_sync_time / d.wal.wal_sync, 3) : '– (track_wal_io_timing off)'}` : '– (PostgreSQL 14+)'} |`,
    `| checkpoints (timed / requested), sync time | ${d.checkpoints ? `${d.checkpoints.timed} / ${d.checkpoints.requested}, ${fmt(d.checkpoints.syncTimeMs, 0)} ms` : '–'} |`,
    `| device r / w IOPS | ${d.device ? `${fmt(d.device.readIops, 0)} / ${fmt(d.device.writeIops, 0)}` : '–'} |`,
    `| device r / w MiB/s | ${d.device ? `${fmt(d.device.readMBps, 1)} / ${fmt(d.device.writeMBps, 1)}` : '–'} |`,
    `| device read / write latency (ms) | ${d.device ? `${fmt(d.device.readLatencyMs, 3)} / ${fmt(d.device.writeLatencyMs, 3)}` : '–'} |`,
    `| device utilisation | ${d.device ? pct(d.device.utilization) : '–'} |`,
    `| synchronous standbys: a commit's wait beyond its own flush | ${syncStandbyWait(c)?.detail ?? (c.replication?.standbys.length ? 'none: commits do not wait for the standbys' : 'none')} |`,
    '',
  ];
  if (c.fsync) {
    lines.push(`pg_test_fsync beside the data directory (${c.fsync.testFileDir}${c.fsync.device ? ` on ${c.fsync.device}` : ''}, ${fmt(c.fsync.seconds, 0)} s), one 8 kB write and sync; the server uses ${c.fsync.method}:`, '');
    lines.push('| method | ops/s | µs per op |', '|---|---|---|');
    for (const [method, ops] of Object.entries(c.fsync.oneWrite))
      lines.push(`| ${method === c.fsync.method ? `**${method}**` : method} | ${ops === null ? 'n/a' : fmt(ops, 0)} | ${ops ? fmt(1e6 / ops, 0) : '–'} |`);
    lines.push('');
  }
  if (d.io) {
    lines.push('## pg_stat_io by backend type', '', '| backend type | reads | read ms | writes | write ms | extends | fsyncs |', '|---|---|---|---|---|---|---|');
    for (const [type, io] of Object.entries(d.io).filter(([, io]) => io.reads + io.writes + io.extends + io.fsyncs > 0))
      lines.push(`| ${type} | ${fmt(io.reads, 0)} | ${fmt(io.readTimeMs, 1)} | ${fmt(io.writes, 0)} | ${fmt(io.writeTimeMs, 1)} | ${fmt(io.extends, 0)} | ${fmt(io.fsyncs, 0)} |`);
    lines.push('');
  }
  lines.push('## Host', '');
  lines.push(
    c.local
      ? `CPU: ${d.cpu ? `${fmt(d.cpu.coresBusy, 2)} of ${d.cpu.cores} cores busy` : '–'}; memory ${fmt(c.local.memoryMiB / 1024, 1)} GiB, page cache ${fmt(c.local.pageCacheMiB / 1024, 1)} GiB; databases ${fmt((d.databaseBytes ?? 0) / 2 ** 30, 2)} GiB.`
      : 'The server runs on another machine: no CPU, device or fsync figures. Run diagnose on the database host for them.',
    '',
  );
  lines.push('## Settings', '', '| setting | value |', '|---|---|', ...Object.entries(c.settings).map(([k, v]) => `| ${k} | ${v} |`), '');
  if (c.advice.length) lines.push('## Advice', '', ...c.advice.map((a) => `- ${a}`), '');
  lines.push('Every figure was measured by this capture over a read-only connection; nothing was written to the database.', '');
  return lines.join('\n');
}

/** report.html of a capture: the Markdown with charts of the wait groups, the active sessions and the device. */
export function captureHtml(c: DiagnoseCapture): string {
  const d = c.diagnostics;
  const charts = [
    chartFigure(
      barChart({
        title: 'In-transaction time by group (%)',
        yLabel: '% of in-transaction samples',
        categories: VERDICT_GROUPS.map((g) => g),
        series: [{ name: c.target, values: VERDICT_GROUPS.map((g) => 100 * c.evidence.shares[g]) }],
        format: (v) => `${Math.round(v)} %`,
      }),
      'Active-session-history samples of the database\'s client backends (active, or idle in a transaction).',
    ),
    chartFigure(
      lineChart({
        title: 'Active sessions per second',
        xLabel: 'second',
        yLabel: 'sessions',
        series: [
          { name: 'active', points: d.series.map((s) => ({ x: s.second, y: s.activeSessions })) },
          { name: 'in IO:DataFileRead', points: d.series.map((s) => ({ x: s.second, y: s.dataFileRead })) },
        ],
      }),
      'Mean number of active client backends over each second\'s samples.',
    ),
  ];
  if (d.device)
    charts.push(
      chartFigure(
        lineChart({
          title: `Device ${d.device.name} IOPS per second`,
          xLabel: 'second',
          yLabel: 'IOPS',
          series: (['readIops', 'writeIops'] as const).map((key) => ({
            name: key === 'readIops' ? 'reads' : 'writes',
            points: d.series.flatMap((s) => (s[key] === null ? [] : [{ x: s.second, y: s[key]! }])),
          })),
        }),
        '/proc/diskstats of the device that holds the data directory (every process\'s I/O on it).',
      ),
    );
  return htmlPage(`Storage Lab diagnosis: ${c.target} (${c.capturedAt})`, captureMarkdown(c), '\n## Where in-transaction time went', charts);
}
