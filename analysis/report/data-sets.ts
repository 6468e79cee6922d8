/**
 * The report's data preparation section (issue 31): for each host, whether it loaded (and published) the data set or
 * restored it, with the seconds of the load, the publish and the restore side by side, and the comparison checks of
 * every restored host. A run whose hosts were restored says so first, so a reader (the nightly's) never takes them
 * for loaded ones.
 */
import type { ClusterResult, ExperimentResult } from '../../common/results/result';

const s = (x: number | undefined) => (x === undefined ? '–' : x.toFixed(1));

/** The section's lines, or none when no host used a data set. */
export function dataPreparationMarkdown(result: Pick<ExperimentResult, 'classes'>): string[] {
  const clusters: ClusterResult[] = Object.values(result.classes).flatMap((c) => c.clusters);
  const used = clusters.filter((c) => c.dataSet);
  if (!used.length) return [];
  const restored = used.filter((c) => c.dataSet!.prepared === 'restored');
  const lines = ['## Data preparation', ''];
  if (restored.length) {
    const keys = [...new Set(restored.map((c) => c.dataSet!.key))];
    lines.push(
      `**${restored.length} of ${clusters.length} hosts were restored from a published data set (${keys.join(', ')}), not loaded:** ${restored.map((c) => c.hostId).join(', ')}.` +
        ` Their sets were published by ${[...new Set(restored.map((c) => `${c.dataSet!.source?.hostId} of run ${c.dataSet!.source?.runId}`))].join('; ')}.`,
      '',
    );
  }
  lines.push('| host | data set | prepared | load (s) | publish (s) | restore (s): fetch + replay + restart | checks (s) | waited (s) | comparison |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const c of used) {
    const d = c.dataSet!;
    const r = d.restore;
    const failed = d.checks?.filter((x) => !x.ok) ?? [];
    const comparison = d.checks ? (failed.length ? `**failed**: ${failed.map((x) => `${x.name}: ${x.detail}`).join('; ')}` : `passed (${d.checks.map((x) => x.name).join(', ')})`) : d.reason ?? '–';
    lines.push(
      `| ${c.hostId} | ${d.key} | ${d.prepared} | ${s(d.loadSeconds)}${d.prepared === 'restored' ? ' (publisher\'s)' : ''} | ${s(d.publishSeconds)}${d.prepared === 'restored' ? ' (publisher\'s)' : ''} | ${r ? `${s(r.restoreSeconds)}: ${s(r.fetchSeconds)} + ${s(r.recoverSeconds)} + ${s(r.restoreSeconds - r.fetchSeconds - r.recoverSeconds)}` : '–'} | ${r ? s(r.checkSeconds) : '–'} | ${s(d.waitedSeconds)} | ${comparison} |`,
    );
  }
  lines.push('');
  // Where the publish's and the checks' seconds went: parts timed apart, the overlapping ones said so.
  const parts: string[] = [];
  for (const c of used) {
    const p = c.dataSet!.publishParts;
    if (p)
      parts.push(
        `- ${c.hostId} publish: storage facts ${s(p.storageFactsSeconds)}, archiving on ${s(p.archiveOnSeconds)}, row checksums ${s(p.checksumSeconds)} beside the base backup ${s(p.backupSeconds)}, archiving off ${s(p.archiveOffSeconds)}${p.relationFilesSeconds === undefined ? '' : ` and the relation files read in it ${s(p.relationFilesSeconds)}`}` +
          (p.walgBuildWaitSeconds === undefined ? '' : `; before it, ${s(p.walgBuildWaitSeconds)} s waiting for WAL-G's build beside this first run on the machine, so the load ran beside that compile and its seconds are not a load's alone`),
      );
    const k = c.dataSet!.restore?.checkParts;
    if (k)
      parts.push(
        `- ${c.hostId} checks: storage facts ${s(k.storageFactsSeconds)}, ${contentsPart(k)}${k.amcheckSeconds === null ? ' (no pg_amcheck)' : ` beside pg_amcheck ${s(k.amcheckSeconds)}`}${k.indexKeysSeconds === undefined ? '' : ` then the index keys ${s(k.indexKeysSeconds)}`}${walPart(k)}, checkpoint and eviction ${s(k.evictSeconds)}`,
      );
  }
  if (parts.length) lines.push('Where the seconds went (seconds of each part; the parts said to run beside each other overlap):', '', ...parts, '');
  return lines;
}

/** How a restored host's contents were checked: its relation files (and whether that spared the row scan), the rows. */
function contentsPart(k: { relationFilesSeconds?: number; rowsScanned?: boolean; checksumSeconds: number }): string {
  if (k.relationFilesSeconds === undefined) return `row checksums ${s(k.checksumSeconds)}`;
  if (k.rowsScanned === false) return `relation files ${s(k.relationFilesSeconds)} (the publisher's byte for byte: no row scanned)`;
  return `relation files ${s(k.relationFilesSeconds)} (not the publisher's), then row checksums ${s(k.checksumSeconds)}`;
}

/** The WAL segments a restored host made ahead, beside the checks: how many, how many were staged during the fetch. */
function walPart(k: { walSegments?: number; walSeconds?: number; walStaged?: number; walStagedSeconds?: number; walStageError?: string }): string {
  if (k.walSegments === undefined || k.walSeconds === undefined) return '';
  const staged =
    k.walStaged === undefined
      ? ''
      : k.walStageError
        ? ` (their staging during the fetch failed: ${k.walStageError})`
        : ` (${k.walStaged} of them written during the fetch, in ${s(k.walStagedSeconds ?? 0)} from its start)`;
  return `, beside them the WAL segments ahead: ${k.walSegments}${staged}, in pg_wal ${s(k.walSeconds)} after the checks began`;
}
