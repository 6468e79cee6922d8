/** How far a cluster is, from its phase and the phase's own percentage. Pure; workflows and the CLI share it. */
import type { PhaseProgress, RunProgress } from './messages';

/** A cluster's phases in order, weighted by their usual share of the wall time. */
export const CLUSTER_PHASES: { name: string; weight: number }[] = [
  { name: 'provision', weight: 2 },
  { name: 'configure', weight: 2 },
  { name: 'load', weight: 50 },
  { name: 'backup', weight: 3 },
  { name: 'warmup', weight: 5 },
  { name: 'tps', weight: 20 },
  { name: 'vacuum', weight: 8 },
  { name: 'backlog', weight: 8 },
  { name: 'teardown', weight: 5 },
  { name: 'done', weight: 0 },
  // A cluster that failed is finished too: it counts as complete in the run's percentage.
  { name: 'failed', weight: 0 },
];

const TOTAL_WEIGHT = CLUSTER_PHASES.reduce((s, p) => s + p.weight, 0);

/** 0-100 for one cluster; a phase not in the list (a drill's) counts as its own percentage. */
export function clusterPercent(p: PhaseProgress): number {
  const index = CLUSTER_PHASES.findIndex((ph) => ph.name === p.phase);
  if (index < 0) return p.percent ?? 0;
  const before = CLUSTER_PHASES.slice(0, index).reduce((s, ph) => s + ph.weight, 0);
  const within = (CLUSTER_PHASES[index].weight * (p.percent ?? 0)) / 100;
  return Math.round((1000 * (before + within)) / TOTAL_WEIGHT) / 10;
}

/** The whole run's percentage: clusters not started yet count as 0. */
export function runPercent(clusters: PhaseProgress[], totalClusters: number): number {
  if (totalClusters === 0) return 0;
  const sum = clusters.reduce((s, c) => s + clusterPercent(c), 0);
  return Math.round((10 * sum) / totalClusters) / 10;
}

/** The figures a person watches first in a phase's details, in this order; the rest follow. */
const HEADLINE_DETAILS = ['tps', 'latencyMs', 'rows', 'mb', 'rowsPerSecond', 'second'];

/**
 * Markdown for the Temporal UI's "current details": one line for the run, one short line per host (phase, percent,
 * ETA, the latest figures). Lines, not a table: the UI shows details in a small frame that cuts tables off.
 */
export function progressMarkdown(title: string, progress: RunProgress): string {
  const lines = Object.values(progress.clusters).map((c) => {
    const figures = Object.entries(c.detail ?? {})
      .sort(([a], [b]) => rank(a) - rank(b))
      .slice(0, 4)
      .map(([k, v]) => `${k} ${typeof v === 'number' ? (Math.round(v * 10) / 10).toLocaleString('en-US') : v}`);
    const parts = [
      `**${c.hostId}** ${c.phase}${c.percent ? ` ${c.percent} %` : ''}`,
      ...(c.etaSeconds !== undefined ? [`ETA ${c.etaSeconds} s`] : []),
      ...figures,
    ];
    return `- ${parts.join(' · ')}`;
  });
  const eta = progress.etaSeconds !== undefined ? ` · ETA ${progress.etaSeconds} s` : '';
  const failures = progress.failures.length ? [`- **failures:** ${progress.failures.slice(-3).join('; ')}`] : [];
  return [`**${title}**: ${progress.phase} · ${progress.percent} %${eta}`, '', ...lines, ...failures].join('\n');
}

function rank(key: string): number {
  const i = HEADLINE_DETAILS.indexOf(key);
  return i < 0 ? HEADLINE_DETAILS.length : i;
}
