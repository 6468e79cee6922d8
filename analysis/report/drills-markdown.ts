/**
 * Drill reports: a restore drill's RTO split, RPO and verifications; a failover drill's rounds, lost commits and its
 * archive's check; a partition drill's cuts, what the old primary acknowledged after them and how it was fenced; an
 * experiment's archiving and its drills. Every section names the backup tool and its version.
 */
import type {
  BackupInfo,
  DrillResult,
  DrillSummary,
  FailoverDrillResult,
  PartitionDrillResult,
  PowerCutDrillResult,
  RestoreDrillResult,
  RestoreToolComparison,
  ToolComparisonRow,
} from '../../common/results/drill-result';
import type { ExperimentResult } from '../../common/results/result';

const s = (v: number | null | undefined, digits = 2): string =>
  v === null || v === undefined || Number.isNaN(v) ? '–' : `${v.toLocaleString('en-US', { maximumFractionDigits: digits })} s`;
const n = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : v.toLocaleString('en-US'));
const mark = (ok: boolean | undefined): string => (ok === undefined ? '–' : ok ? 'PASS' : '**FAIL**');
const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** One base backup in words: label, tool, kind, what it stored of how much, how long it took. */
function backupLine(b: BackupInfo): string {
  return `${b.type} backup ${b.label} (${b.tool} ${b.toolVersion}): stored ${mib(b.repositoryBytes)} of ${mib(b.databaseBytes)} in ${s(b.seconds)}, WAL ${b.walStart}–${b.walStop}`;
}

/** The whole report of a drill run (report.md). */
export function renderDrillMarkdown(result: DrillResult): string {
  const title = { 'restore-drill': 'Restore drill', 'failover-drill': 'Failover drill', 'partition-drill': 'Partition drill', 'power-cut-drill': 'Power-cut drill' }[result.kind];
  const lines = [
    `# Storage Lab ${title.toLowerCase()}: ${result.name}`,
    '',
    `Run \`${result.runId}\` (preset ${result.preset ?? 'custom'}), **${result.status}**, ${result.startedAt} → ${result.finishedAt}; PostgreSQL ${result.postgresVersion ?? '?'}.`,
    '',
    `**Verdict:** ${result.verdict}`,
    '',
    ...drillSection(result),
  ];
  if (result.errors.length) lines.push('## Errors', '', ...result.errors.map((e) => `- ${e.split('\n')[0]}`), '');
  lines.push('Every figure was measured by this drill.', '');
  return lines.join('\n');
}

/** A drill's own section (the report's body, and what `storage-lab drill --watch` prints). */
export function drillSection(result: DrillResult): string[] {
  if (result.kind === 'restore-drill') return restoreSection(result);
  if (result.kind === 'partition-drill') return partitionSection(result);
  if (result.kind === 'power-cut-drill') return powerCutSection(result);
  return failoverSection(result);
}

/** A restore drill as report lines: backup, target, RTO split, RPO and each verification. */
export function restoreSection(r: RestoreDrillResult): string[] {
  const lines: string[] = ['## Restore', ''];
  const tool = r.backupTool ? `${r.backupTool.name} ${r.backupTool.version}` : (r.backup?.tool ?? '–');
  lines.push(`Source ${r.hosts.source}, restored onto a fresh host ${r.hosts.restore}; backups with ${tool} in ${r.backupStore ?? '–'}.`);
  if (r.fullBackup) lines.push(`Full ${backupLine(r.fullBackup).replace(/^full /, '')}.`);
  if (r.backup) lines.push(`Restored from the ${backupLine(r.backup)}.`);
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
    // The tool's own words name it and its command (pgbackrest verify, wal-g wal-verify); older results lack the time.
    [`repository check${v.backupVerify?.seconds !== undefined ? ` (${s(v.backupVerify.seconds)})` : ''}`, v.backupVerify],
  ] as const)
    lines.push(`| ${name} | ${mark(outcome?.ok)} | ${outcome ? cell(outcome.detail) : 'not run'} |`);
  lines.push('');
  return lines;
}

/** Text fit for one Markdown table cell: its first line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').split('\n')[0];
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
  lines.push('| round | killed | promoted | RTO (write downtime) | promote | acknowledged | lost | in doubt (landed) | old primary | archived on the new timeline |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|');
  for (const x of r.rounds)
    lines.push(
      `| ${x.round} | ${x.killedNode} | ${x.promotedNode} | ${s(x.rtoSeconds)} | ${s(x.promoteSeconds)} | ${n(x.acknowledgedTotal)} | ${x.lostCommits === 0 ? '0' : `**${x.lostCommits}**`} | ${n(x.writer.inDoubt)} (${n(x.inDoubtPresent)}) | ${x.oldPrimary.action}${x.oldPrimary.seconds !== null ? ` in ${s(x.oldPrimary.seconds)}` : ''} | ${x.archivedOnNewTimeline ?? '–'} |`,
    );
  lines.push('');
  lines.push(
    `${r.summary.rounds} failover${r.summary.rounds === 1 ? '' : 's'}, ${r.summary.lostCommits} acknowledged commits lost; RTO median ${s(r.summary.rtoSecondsMedian)}, max ${s(r.summary.rtoSecondsMax)}.`,
  );
  lines.push('');
  lines.push(...archiveLines(r));
  return lines;
}

/**
 * A partition drill as report lines: one row per partition (the cut, the promotion, what the old primary acknowledged
 * after the cut, what was lost, how the old primary was fenced and came back), then the totals.
 */
export function partitionSection(r: PartitionDrillResult): string[] {
  const lines: string[] = ['## Partitions', ''];
  const first = r.rounds[0];
  lines.push(
    `synchronous_standby_names = '${r.synchronousStandbyNames ?? ''}' on each primary; nodes ${Object.entries(r.hosts.nodes)
      .map(([node, host]) => `${node} = ${host}`)
      .join(', ')}; the writer ran on ${r.hosts.client}, ${r.spec.partition.cutWriter ? 'cut off from the old primary too' : 'reaching both sides of the cut'}; the standby was promoted ${s(r.spec.partition.detectionSeconds)} after each cut.`,
  );
  if (first) lines.push(`The cut: ${first.cut.mechanism}; ${first.cut.rules} rules.`);
  lines.push('');
  lines.push(
    '| round | cut off | promoted | RTO (cut → first ack on new) | write outage | old primary acknowledged after the cut (while cutting) | split-brain commits | lost | in doubt (landed) | packets dropped | old primary: sync standbys, fence | old primary after |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  const bold = (v: number) => (v === 0 ? '0' : `**${n(v)}**`);
  for (const x of r.rounds) {
    const o = x.oldPrimary;
    lines.push(
      `| ${x.round} | ${x.isolatedNode} | ${x.promotedNode} | ${s(x.rtoSeconds)} | ${s(x.writer.outageSeconds)} | ${n(x.acknowledgedAfterCut)} (${n(x.acknowledgedWhileCutting)}) | ${bold(x.splitBrainCommits)} | ${bold(x.lostCommits)} | ${n(x.writer.inDoubt)} (${n(x.inDoubtPresent)}) | ${n(x.heal?.droppedPackets)} | '${o.synchronousStandbyNames ?? '?'}', ${o.fence.outcome === 'acknowledged' ? '**NOT FENCED: acknowledged a write**' : `${o.fence.outcome} (${s(o.fence.seconds)})`} | ${o.action}${o.seconds !== null ? ` in ${s(o.seconds)}` : ''}${o.streaming ? ', streaming' : ''} |`,
    );
  }
  lines.push('');
  const sm = r.summary;
  const fates = Object.entries(sm.oldPrimaries)
    .map(([fate, count]) => `${fate} ${count}`)
    .join(', ');
  lines.push(
    `${sm.rounds} partition${sm.rounds === 1 ? '' : 's'}: ${sm.splitBrainCommits} split-brain commits acknowledged (${sm.acknowledgedAfterCut} acknowledged by an old primary after its cut), ${sm.lostCommits} acknowledged commits lost; RTO median ${s(sm.rtoSecondsMedian)}, max ${s(sm.rtoSecondsMax)}; old primaries: ${fates || '–'}.`,
  );
  const splits = r.rounds.filter((x) => x.splitBrainSample.length);
  for (const x of splits)
    lines.push(`- round ${x.round}: split-brain commits on ${x.isolatedNode}, first ${x.splitBrainSample.map((e) => `${e.id}${e.lsn ? ` (${e.lsn})` : ''}`).join(', ')}`);
  const details = r.rounds.filter((x) => x.oldPrimary.detail);
  if (details.length) {
    lines.push('', 'How each old primary came back (pg_rewind\'s own words):', '');
    for (const x of details) lines.push(`- round ${x.round}, ${x.isolatedNode}: ${x.oldPrimary.detail.split('\n')[0]}; fence probe: ${x.oldPrimary.fence.detail}`);
  }
  lines.push('');
  lines.push(...archiveLines(r));
  return lines;
}

/**
 * A power-cut drill as report lines: the primary's durability settings, one row per cut (when, what the device dropped,
 * crash recovery, acknowledged commits lost, pg_amcheck and checksums), then the totals.
 */
export function powerCutSection(r: PowerCutDrillResult): string[] {
  const lines: string[] = ['## Power cuts', ''];
  const b = r.baseline;
  const set = b?.settings;
  lines.push(
    `Primary ${r.hosts.primary} on a modelled ${r.spec.storageClass.kind}${r.spec.storageClass.volumeType ? ` (${r.spec.storageClass.volumeType})` : ''}; the writer ran on ${r.hosts.client} with ${r.spec.writer.connections} connections; each cut fell between ${s(r.spec.powerCut.earliestSeconds)} and ${s(r.spec.powerCut.latestSeconds)} of writing (seed ${r.spec.powerCut.seed}).`,
  );
  if (set)
    lines.push(
      `Durability settings on the primary: fsync = ${set.fsync === 'on' ? 'on' : '**off**'}, synchronous_commit = ${set.synchronous_commit === 'on' ? 'on' : `**${set.synchronous_commit}**`}, full_page_writes = ${set.full_page_writes}, wal_sync_method = ${set.wal_sync_method}, data_checksums = ${set.data_checksums}.`,
    );
  if (b) lines.push(`Before the first cut: pg_amcheck ${mark(b.amcheck.ok)} ${cell(b.amcheck.detail)}; checksum failures ${n(b.checksumFailures)}.`);
  lines.push('');
  lines.push('| round | cut after | acknowledged | in doubt (landed) | device dropped | device writes / flushes before the cut | crash recovery | redo | lost acknowledged commits | pg_amcheck | checksum failures |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|');
  const bold = (v: number | null) => (v === null ? '**not counted**' : v === 0 ? '0' : `**${n(v)}**`);
  for (const x of r.rounds) {
    const c = x.cut;
    const rec = x.recovery.started ? `${s(x.recovery.seconds)}${x.recovery.crashRecovery ? '' : ' (no crash recovery logged)'}` : `**did not come back**: ${cell((x.recovery.fatal ?? x.recovery.detail).split('\n')[0])}`;
    const amcheck = x.check ? (x.check.amcheck.ok ? 'clean' : `**${x.check.amcheck.problems ? `${n(x.check.amcheck.problems)} problems` : 'not checked'}**`) : '–';
    lines.push(
      `| ${x.round} | ${s(x.cutAfterSeconds)} | ${n(x.writer.acknowledged)} | ${n(x.writer.inDoubt)} (${n(x.inDoubtPresent)}) | ${n(c.droppedPages)} pages (${mib(c.droppedBytes)}) | ${n(c.before.writes)} / ${n(c.before.flushes)} | ${rec} | ${s(x.recovery.redoSeconds)} | ${bold(x.lostCommits)} | ${amcheck} | ${n(x.check?.checksumFailures)} |`,
    );
  }
  lines.push('');
  const sm = r.summary;
  lines.push(
    `${sm.rounds} power cut${sm.rounds === 1 ? '' : 's'}: ${sm.lostCommits ?? 'not counted:'} acknowledged commits lost (of ${n(sm.acknowledgedTotal)}; ${sm.roundsWithLoss} round${sm.roundsWithLoss === 1 ? '' : 's'} with a loss), ${sm.notRecovered} cluster${sm.notRecovered === 1 ? '' : 's'} that did not come back, pg_amcheck not clean in ${sm.amcheckFailedRounds} (${sm.amcheckProblems} problems), ${sm.checksumFailures} checksum failures; the device dropped ${n(sm.droppedPages)} pages (${mib(sm.droppedBytes)}) it had not made durable; crash recovery median ${s(sm.recoverySecondsMedian)}, max ${s(sm.recoverySecondsMax)}.`,
  );
  for (const x of r.rounds) {
    if (x.lostSample.length) lines.push(`- round ${x.round}: acknowledged commits missing, first ids ${x.lostSample.join(', ')}`);
    if (x.countError) lines.push(`- round ${x.round}: the ledger could not be counted: ${cell(x.countError)}`);
    if (x.recovery.lockFile) lines.push(`- round ${x.round}: ${cell(x.recovery.lockFile)}`);
    if (x.check && !x.check.amcheck.ok) lines.push(`- round ${x.round}: pg_amcheck: ${cell(x.check.amcheck.detail)}`);
  }
  lines.push('');
  return lines;
}

/** The failover drill's continuous archive: the tool, the base backup, and the tool's check across the timelines. */
function archiveLines(r: FailoverDrillResult | PartitionDrillResult): string[] {
  if (!r.archive) return ['No archive (backup.enabled is false).', ''];
  const a = r.archive;
  const lines = ['### Archive', ''];
  lines.push(`The primary archived its WAL with ${a.backupTool.name} ${a.backupTool.version} to ${a.backupStore}, each new primary on its new timeline.`);
  if (a.backup) lines.push(`Base backup after set-up: ${backupLine(a.backup)}.`);
  if (a.check)
    lines.push(
      `Archive check through ${a.throughSegment} (timeline ${a.timeline ?? '?'}): ${mark(a.check.ok)} ${cell(a.check.detail)} (${s(a.check.seconds)}).`,
    );
  else lines.push('Archive check: not run (the drill ended before its rounds did).');
  lines.push('');
  return lines;
}

/** An experiment's WAL archiving (durability.enabled): per cluster, the tool and the base backup it took. */
export function durabilityMarkdown(result: ExperimentResult): string[] {
  const rows = Object.values(result.classes).flatMap((cls) =>
    cls.clusters.flatMap((c) => {
      const d = c.phases.durability as { backupStore: string; backupTool?: { name: string; version: string }; archiveTimeoutSeconds: number; backup: BackupInfo } | undefined;
      if (!d) return [];
      const tool = d.backupTool ? `${d.backupTool.name} ${d.backupTool.version}` : `${d.backup.tool} ${d.backup.toolVersion}`;
      return [`| ${c.hostId} | ${tool} | ${d.archiveTimeoutSeconds} s | ${d.backup.type} | ${mib(d.backup.repositoryBytes)} of ${mib(d.backup.databaseBytes)} | ${s(d.backup.seconds)} | ${d.backupStore} |`];
    }),
  );
  if (!rows.length) return [];
  return [
    '## Durability',
    '',
    'WAL archived and a base backup taken after the load, so the measured runs paid what a durable cluster pays.',
    '',
    '| host | backup tool | archive_timeout | backup | stored | backup time | store |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ];
}

/** The drills an experiment ran, one row each, with the figures that matter and where the drill's own report is. */
export function drillsSummaryMarkdown(drills: DrillSummary[]): string[] {
  const figures = (d: DrillSummary) =>
    d.kind === 'restore-drill'
      ? `RTO ${s(d.figures.rtoSeconds as number | null)} (fetch ${s(d.figures.fetchSeconds as number | null)}, replay ${s(d.figures.replaySeconds as number | null)}, promote ${s(d.figures.promoteSeconds as number | null)}); RPO ${s(d.figures.rpoSeconds as number | null)}`
      : d.kind === 'power-cut-drill'
        ? `${n(d.figures.rounds as number | null)} power cut${d.figures.rounds === 1 ? '' : 's'}, ${n(d.figures.lostCommits as number | null)} acknowledged commits lost, pg_amcheck not clean in ${n(d.figures.amcheckFailedRounds as number | null)}, crash recovery median ${s(d.figures.recoverySecondsMedian as number | null)}`
      : d.kind === 'partition-drill'
        ? `${n(d.figures.rounds as number | null)} partition${d.figures.rounds === 1 ? '' : 's'}, ${n(d.figures.splitBrainCommits as number | null)} split-brain commits acknowledged, ${n(d.figures.lostCommits as number | null)} acknowledged commits lost, RTO median ${s(d.figures.rtoSecondsMedian as number | null)}`
        : `${n(d.figures.rounds as number | null)} failover${d.figures.rounds === 1 ? '' : 's'}, ${n(d.figures.lostCommits as number | null)} acknowledged commits lost, RTO median ${s(d.figures.rtoSecondsMedian as number | null)}${d.figures.archiveThrough ? `; archive continuous through ${d.figures.archiveThrough}` : ''}`;
  return [
    '## Durability drills',
    '',
    '| drill | backup tool | outcome | figures | verdict | report |',
    '|---|---|---|---|---|---|',
    ...drills.map(
      (d) =>
        `| ${d.kind} | ${d.figures.tool ? `${d.figures.tool} ${d.figures.toolVersion ?? ''}`.trim() : '–'} | ${d.status === 'passed' ? 'PASS' : `**${d.status.toUpperCase()}**`} | ${d.status === 'passed' ? figures(d) : '–'} | ${d.verdict.replace(/\|/g, '\\|')} | ${d.location}/report.md |`,
    ),
    '',
  ];
}

/** The comparison's one table: per tool, backup size and time, the RTO split, RPO and the repository check's time. */
export function toolComparisonTable(rows: ToolComparisonRow[]): string[] {
  const size = (r: ToolComparisonRow) =>
    r.backupBytes === null ? '–' : `${mib(r.backupBytes)}${r.databaseBytes ? ` (${((100 * r.backupBytes) / r.databaseBytes).toFixed(0)} %)` : ''}`;
  return [
    '| tool | backup size (of the database) | backup time | RTO: fetch | replay | promote | total | RPO | verify time | outcome |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${[r.tool, r.toolVersion].filter(Boolean).join(' ')} | ${size(r)} | ${s(r.backupSeconds)} | ${s(r.fetchSeconds)} | ${s(r.replaySeconds)} | ${s(r.promoteSeconds)} | ${s(r.rtoSeconds)} | ${s(r.rpoSeconds)}${r.rpoBytes !== null ? ` (${n(r.rpoBytes)} bytes)` : ''} | ${s(r.verifySeconds)} | ${r.status === 'passed' ? 'PASS' : `**${r.status.toUpperCase()}**: ${cell(r.verdict)}`} |`,
    ),
  ];
}

/** The comparison's report.md: the table, what each check was, and where each drill's own report is. */
export function renderToolComparisonMarkdown(c: RestoreToolComparison): string {
  return [
    `# Storage Lab restore drill, backup tools compared: ${c.runId}`,
    '',
    `Preset ${c.preset ?? 'custom'}, **${c.status}**, ${c.startedAt} → ${c.finishedAt}. The same restore drill with each tool, one after the other on the same machine.`,
    '',
    `**Verdict:** ${c.verdict}`,
    '',
    ...toolComparisonTable(c.rows),
    '',
    'Backup size is what the backup stored, compressed; RTO is from an empty host: fetch the backup, replay the WAL to the target (from the server\'s log), promote; RPO is the archive lag at the failure point; verify time is the tool\'s own repository check (pgbackrest verify reads back every file; wal-g wal-verify checks the archived WAL is continuous and on the right timeline, so they check different things).',
    '',
    ...c.rows.map((r) => `- ${r.tool}: ${r.drillRunId}${r.location ? `, ${r.location}/report.md` : ''}`),
    '',
    ...(c.errors.length ? ['## Errors', '', ...c.errors.map((e) => `- ${e}`), ''] : []),
    'Every figure was measured by the drills of this run.',
    '',
  ].join('\n');
}
