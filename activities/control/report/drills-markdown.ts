/** Drill reports: a restore drill's RTO split, RPO and verifications; a failover drill's rounds and lost commits. */
import type { DrillResult, DrillSummary, FailoverDrillResult, RestoreDrillResult } from '../../../common/drill-result';

const s = (v: number | null | undefined, digits = 2): string =>
  v === null || v === undefined || Number.isNaN(v) ? '–' : `${v.toLocaleString('en-US', { maximumFractionDigits: digits })} s`;
const n = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : v.toLocaleString('en-US'));
const mark = (ok: boolean | undefined): string => (ok === undefined ? '–' : ok ? 'PASS' : '**FAIL**');

/** The whole report of a drill run (report.md). */
export function renderDrillMarkdown(result: DrillResult): string {
  const title = result.kind === 'restore-drill' ? 'Restore drill' : 'Failover drill';
  const lines = [
    `# Storage Lab ${title.toLowerCase()}: ${result.name}`,
    '',
    `Run \`${result.runId}\` (preset ${result.preset ?? 'custom'}), **${result.status}**, ${result.startedAt} → ${result.finishedAt}; PostgreSQL ${result.postgresVersion ?? '?'}.`,
    '',
    `**Verdict:** ${result.verdict}`,
    '',
    ...(result.kind === 'restore-drill' ? restoreSection(result) : failoverSection(result)),
  ];
  if (result.errors.length) lines.push('## Errors', '', ...result.errors.map((e) => `- ${e.split('\n')[0]}`), '');
  lines.push('Every figure was measured by this drill.', '');
  return lines.join('\n');
}

/** A restore drill as report lines: backup, target, RTO split, RPO and each verification. */
export function restoreSection(r: RestoreDrillResult): string[] {
  const lines: string[] = ['## Restore', ''];
  lines.push(`Source ${r.hosts.source}, restored onto a fresh host ${r.hosts.restore}; backups in ${r.backupStore ?? '–'}.`);
  if (r.backup)
    lines.push(
      `Base backup ${r.backup.label} (${r.backup.tool} ${r.backup.toolVersion}, ${(r.backup.databaseBytes / 2 ** 20).toFixed(1)} MiB, ${s(r.backup.seconds)}), WAL ${r.backup.walStart}–${r.backup.walStop}.`,
    );
  if (r.target)
    lines.push(
      `Target: ${r.target.type}${r.target.time ? ` ${r.target.time}` : ''}${r.target.lsn ? ` ${r.target.lsn}` : ''}, after marker row ${r.target.lastIdBefore}.`,
    );
  if (r.injectedMissingSegment) lines.push(`Injected fault: archived WAL segment ${r.injectedMissingSegment} removed before the restore.`);
  lines.push('');
  lines.push('| RTO: fetch | replay | promote | total | RPO: archive lag | unarchived WAL | marker rows lost |');
  lines.push('|---|---|---|---|---|---|---|');
  lines.push(
    `| ${s(r.rto?.fetchSeconds)} | ${s(r.rto?.replaySeconds)} | ${s(r.rto?.promoteSeconds)} | ${s(r.rto?.totalSeconds)} | ${s(r.rpo?.seconds)} | ${r.rpo ? `${n(r.rpo.bytes)} bytes` : '–'} | ${n(r.rpo?.lostMarkers)} |`,
  );
  lines.push('');
  if (r.recovery) lines.push(`Recovery: ${mark(r.recovery.ok)} ${r.recovery.detail.split('\n')[0]}`, '');
  const v = r.verification;
  lines.push('| check | outcome | detail |', '|---|---|---|');
  for (const [name, outcome] of [
    ['marker rows', v.ledger],
    ['table checksums', v.checksums],
    ['pg_amcheck', v.amcheck],
    ['archive continuity', v.archiveContinuity],
    ['repository check (pgbackrest verify)', v.backupVerify],
  ] as const)
    lines.push(`| ${name} | ${mark(outcome?.ok)} | ${outcome ? outcome.detail.replace(/\|/g, '\\|').split('\n')[0] : 'not run'} |`);
  lines.push('');
  return lines;
}

/** A failover drill as report lines: one row per round, then the totals. */
export function failoverSection(r: FailoverDrillResult): string[] {
  const lines: string[] = ['## Failovers', ''];
  lines.push(
    `Mode ${r.mode}${r.synchronousStandbyNames ? ` (synchronous_standby_names = '${r.synchronousStandbyNames}')` : ' (no synchronous standbys)'}; nodes ${Object.entries(r.hosts.nodes)
      .map(([node, host]) => `${node} = ${host}`)
      .join(', ')}; the writer ran on ${r.hosts.client}.`,
  );
  lines.push('');
  lines.push('| round | killed | promoted | RTO (write downtime) | promote | acknowledged | lost | in doubt (landed) | old primary |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const x of r.rounds)
    lines.push(
      `| ${x.round} | ${x.killedNode} | ${x.promotedNode} | ${s(x.rtoSeconds)} | ${s(x.promoteSeconds)} | ${n(x.acknowledgedTotal)} | ${x.lostCommits === 0 ? '0' : `**${x.lostCommits}**`} | ${n(x.writer.inDoubt)} (${n(x.inDoubtPresent)}) | ${x.oldPrimary.action}${x.oldPrimary.seconds !== null ? ` in ${s(x.oldPrimary.seconds)}` : ''} |`,
    );
  lines.push('');
  lines.push(
    `${r.summary.rounds} failover${r.summary.rounds === 1 ? '' : 's'}, ${r.summary.lostCommits} acknowledged commits lost; RTO median ${s(r.summary.rtoSecondsMedian)}, max ${s(r.summary.rtoSecondsMax)}.`,
  );
  lines.push('');
  return lines;
}

/** The drills an experiment ran, one row each, with the figures that matter and where the drill's own report is. */
export function drillsSummaryMarkdown(drills: DrillSummary[]): string[] {
  const figures = (d: DrillSummary) =>
    d.kind === 'restore-drill'
      ? `RTO ${s(d.figures.rtoSeconds as number | null)} (fetch ${s(d.figures.fetchSeconds as number | null)}, replay ${s(d.figures.replaySeconds as number | null)}, promote ${s(d.figures.promoteSeconds as number | null)}); RPO ${s(d.figures.rpoSeconds as number | null)}`
      : `${n(d.figures.rounds as number | null)} failover${d.figures.rounds === 1 ? '' : 's'}, ${n(d.figures.lostCommits as number | null)} acknowledged commits lost, RTO median ${s(d.figures.rtoSecondsMedian as number | null)}`;
  return [
    '## Durability drills',
    '',
    '| drill | outcome | figures | verdict | report |',
    '|---|---|---|---|---|',
    ...drills.map(
      (d) =>
        `| ${d.kind} | ${d.status === 'passed' ? 'PASS' : `**${d.status.toUpperCase()}**`} | ${d.status === 'passed' ? figures(d) : '–'} | ${d.verdict.replace(/\|/g, '\\|')} | ${d.location}/report.md |`,
    ),
    '',
  ];
}
