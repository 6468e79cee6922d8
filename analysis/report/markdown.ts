/** report.md: this run and the published reference side by side, then per-cluster figures and the self-checks. */
import { dataPreparationMarkdown } from './data-sets';
import type { ExperimentResult } from '../../common/results/result';
import { costMarkdown, type RunCost } from '../../common/input/cost';
import type { Verdict } from '../../common/results/verdict';
import { verdictMarkdown } from './verdict-markdown';
import { samplerMarkdown } from './sampler-markdown';
import type { RunPredictions } from '../../common/model/run-predictions';
import { predictionsMarkdown } from './predictions-markdown';
import { fidelityMarkdown } from './fidelity';
import type { DrillSummary } from '../../common/results/drill-result';
import { drillsSummaryMarkdown, durabilityMarkdown } from './drills-markdown';
import { fmt } from '../../common/core/format';
import { phaseReports, uncappedPreparation } from '../../common/phases/registry';
import { checkVerdict, summaryRows } from './summary';

export function renderMarkdown(result: ExperimentResult): string {
  const lines: string[] = [];
  const { compare } = result;
  lines.push(`# Storage Lab report: ${result.name}`);
  lines.push('');
  lines.push(
    `Run \`${result.runId}\` (preset ${result.preset ?? 'custom'}), ${result.status}, ${result.startedAt} → ${result.finishedAt}.`,
  );
  lines.push(
    `PostgreSQL ${result.postgresVersion ?? '?'} on ${result.host.provider} (${result.host.cpus} CPUs, ${fmt(result.host.memoryMiB / 1024)} GiB, kernel ${result.host.kernel}).`,
  );
  const w = result.spec.workload;
  lines.push(
    `Workload: pgbench scale ${result.spec.data.scale} (${fmt(result.spec.data.scale * 100_000, 0)} rows), ${w.clients} clients, ${w.threads} threads, ${w.durationSeconds} s; memory limit ${result.spec.host.memoryLimitMiB} MiB per host.`,
  );
  lines.push('');

  if (compare) {
    lines.push('## This run next to the reference');
    lines.push('');
    lines.push(
      `Candidate \`${compare.candidate}\` vs baseline \`${compare.baseline}\`; the reference compared local NVMe with gp3 at 3,000 IOPS on m6id.4xlarge (scale 33,000, 64 clients).`,
    );
    lines.push('');
    lines.push(
      `| metric | ${compare.baseline} (this run) | ${compare.candidate} (this run) | ratio (this run) | gp3 (reference) | NVMe (reference) | ratio (reference) |`,
    );
    lines.push('|---|---|---|---|---|---|---|');
    for (const r of summaryRows(result))
      lines.push(`| ${r.metric} | ${r.baseline} | ${r.candidate} | ${r.ratio} | ${r.refBaseline} | ${r.refCandidate} | ${r.refRatio} |`);
    lines.push('');
  }
  lines.push(...fidelityMarkdown(result));

  lines.push('## Storage classes');
  lines.push('');
  lines.push('| class | kind | emulated | IOPS limit | MiB/s limit | clusters ok | median TPS | median mean latency (ms) |');
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const [name, cls] of Object.entries(result.classes)) {
    const ok = cls.clusters.filter((c) => c.status === 'ok').length;
    lines.push(
      `| ${name} | ${cls.kind} | ${cls.emulated ? 'yes' : `**not emulated**${cls.emulationNote ? ` (${cls.emulationNote})` : ''}`} | ${fmt(cls.limits.iops, 0)} | ${fmt(cls.limits.throughputMiBps, 0)} | ${ok}/${cls.clusters.length} | ${fmt(cls.medianTps)} | ${fmt(cls.medianLatencyMs, 2)} |`,
    );
  }
  lines.push('');

  lines.push('## Clusters');
  lines.push('');
  lines.push('| host | class | status | rows | load (s) | TPS | mean / p50 / p95 / p99 latency (ms) | failed tx |');
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const cls of Object.values(result.classes)) {
    for (const c of cls.clusters) {
      const l = c.tpsRun?.latencyMs;
      lines.push(
        `| ${c.hostId} | ${c.className} | ${c.status}${c.error ? `: ${c.error.split('\n')[0]}` : ''} | ${fmt(c.load?.rows ?? c.rows, 0)} | ${c.dataSet?.prepared === 'restored' ? `restored: ${fmt(c.dataSet.restore?.restoreSeconds)}` : fmt(c.load?.loadSeconds)} | ${fmt(c.tpsRun?.tps)} | ${l ? `${fmt(l.mean, 2)} / ${fmt(l.p50, 2)} / ${fmt(l.p95, 2)} / ${fmt(l.p99, 2)}` : '–'} | ${fmt(c.tpsRun?.failedTransactions, 0)} |`,
      );
    }
  }
  lines.push('');
  lines.push(...dataPreparationMarkdown(result));
  const uncapped = uncappedPreparationLine(result);
  if (uncapped) lines.push(uncapped, '');

  lines.push(...samplerMarkdown(result));
  lines.push(...phaseReports(Object.values(result.classes).flatMap((c) => c.clusters)));
  if (result.verdict) lines.push(...verdictMarkdown(result.verdict as Verdict));
  if (result.cost) lines.push(...costMarkdown(result.cost as RunCost, result.spec.provider));
  if (result.predictions) lines.push(...predictionsMarkdown(result.predictions as RunPredictions));
  lines.push(...durabilityMarkdown(result));
  if (result.drills) lines.push(...drillsSummaryMarkdown(result.drills as DrillSummary[]));

  const failed = result.checks.filter((c) => checkVerdict(c) === 'FAIL');
  const warned = result.checks.filter((c) => checkVerdict(c) === 'WARN');
  lines.push(`## Self-checks (${result.checks.length - failed.length - warned.length} passed, ${failed.length} failed, ${warned.length} warnings)`);
  lines.push('');
  for (const c of result.checks) {
    const verdict = checkVerdict(c);
    lines.push(`- ${verdict === 'PASS' ? 'PASS' : `**${verdict}**`} ${c.name} (${c.scope}): ${c.detail}`);
  }
  lines.push('');
  lines.push(
    'Figures in the "this run" columns were measured by this run; the reference columns are the published figures (common/results/reference/posette-2026.json).',
  );
  lines.push('');
  return lines.join('\n');
}

/**
 * One line naming the preparation that ran with a host's emulated I/O cap lifted (lib/io-cap.ts), so a reader knows
 * its seconds are not storage figures; null when every preparation ran capped (or none was recorded).
 */
export function uncappedPreparationLine(result: ExperimentResult): string | null {
  const hosts = Object.values(result.classes)
    .flatMap((cls) => cls.clusters)
    .map((c) => {
      const steps = [
        ...(c.load?.preparedWithoutCap ? ['load'] : []),
        ...(c.dataSet?.preparedWithoutCap ? [c.dataSet.prepared === 'restored' ? 'restore' : 'publish'] : []),
        ...uncappedPreparation(c.phases),
      ];
      return steps.length ? `${c.hostId} (${steps.join(', ')})` : null;
    })
    .filter((h) => h !== null);
  if (!hosts.length) return null;
  return `Preparation ran with the emulated I/O cap lifted on ${hosts.join('; ')}: its seconds are not storage figures; the cap was applied again for every measured step (the warm-up, the TPS run, each phase's timed part).`;
}
