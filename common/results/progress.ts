/** How far a cluster is, from its step and the step's own percentage. Pure; workflows and the CLI share it. */
import type { ChildProgress, HostProgress, RunProgress } from '../core/messages';
import { PHASES } from '../phases/registry';

/** A cluster's steps in order, weighted by their usual share of the wall time. */
export const CLUSTER_STEPS: { name: string; weight: number }[] = [
  { name: 'provision', weight: 2 },
  { name: 'configure', weight: 2 },
  { name: 'load', weight: 50 },
  { name: 'backup', weight: 3 },
  { name: 'restart', weight: 1 },
  { name: 'warmup', weight: 5 },
  { name: 'tps', weight: 20 },
  ...PHASES.map((p) => ({ name: p.name, weight: p.progressWeight })),
  { name: 'save results', weight: 1 },
  { name: 'teardown', weight: 4 },
  { name: 'done', weight: 0 },
  // A cluster that failed is finished too: it counts as complete in the run's percentage.
  { name: 'failed', weight: 0 },
];

const TOTAL_WEIGHT = CLUSTER_STEPS.reduce((s, p) => s + p.weight, 0);

/** 0-100 for one cluster; a step not in the list (a drill's) counts as its own percentage. */
export function clusterPercent(p: Pick<HostProgress, 'step' | 'percent'>): number {
  const index = CLUSTER_STEPS.findIndex((s) => s.name === p.step);
  if (index < 0) return p.percent ?? 0;
  const before = CLUSTER_STEPS.slice(0, index).reduce((sum, s) => sum + s.weight, 0);
  const within = (CLUSTER_STEPS[index].weight * (p.percent ?? 0)) / 100;
  return Math.round((1000 * (before + within)) / TOTAL_WEIGHT) / 10;
}

/** The whole run's percentage: clusters not started yet count as 0. */
export function runPercent(clusters: Pick<HostProgress, 'step' | 'percent'>[], totalClusters: number): number {
  if (totalClusters === 0) return 0;
  const sum = clusters.reduce((s, c) => s + clusterPercent(c), 0);
  return Math.round((10 * sum) / totalClusters) / 10;
}

/** A parent's percentage from its children's states alone (the CLI refines it with their own progress). */
export function childrenPercent(children: ChildProgress[]): number {
  if (children.length === 0) return 0;
  const finished = children.filter((c) => c.state === 'done' || c.state === 'failed').length;
  return Math.round((1000 * finished) / children.length) / 10;
}

/** The figures a person watches first in a step's details, in this order; the rest follow. */
const HEADLINE_DETAILS = ['step', 'tps', 'latencyMs', 'rows', 'mb', 'rowsPerSecond', 'second'];

/** "tps 1,970 · latencyMs 32.4": a step's headline figures, at most `max` of them. */
export function detailText(detail: HostProgress['detail'], max = 4): string[] {
  return Object.entries(detail ?? {})
    .sort(([a], [b]) => rank(a) - rank(b))
    .slice(0, max)
    .map(([k, v]) => `${k} ${typeof v === 'number' ? (Math.round(v * 10) / 10).toLocaleString('en-US') : v}`);
}

/**
 * Markdown for the Temporal UI's "current details": one line for the run, one short line per host (its step and
 * the steps before it), one per child workflow. Lines, not a table: the UI's frame cuts tables off. The figures of
 * a running step are on its pending activity (its last heartbeat), which the UI shows beside this.
 */
export function progressMarkdown(title: string, progress: RunProgress): string {
  const hosts = Object.values(progress.clusters).map((c) => {
    const earlier = (c.steps ?? []).slice(0, -1).map((e) => e.step);
    const parts = [
      `**${c.hostId}** ${c.step}${c.percent ? ` ${c.percent} %` : ''}`,
      ...(c.etaSeconds !== undefined ? [`ETA ${c.etaSeconds} s`] : []),
      ...detailText(c.detail),
      ...(earlier.length ? [`after ${earlier.join(', ')}`] : []),
    ];
    return `- ${parts.join(' · ')}`;
  });
  const children = progress.children.map((c) => `- **${c.label}** ${c.state} · \`${c.workflowId}\``);
  const failures = progress.failures.length ? [`- **failures:** ${progress.failures.slice(-3).join('; ')}`] : [];
  return [`**${title}**: ${progress.stage} · ${progress.percent} %`, '', ...hosts, ...children, ...failures].join('\n');
}

function rank(key: string): number {
  const i = HEADLINE_DETAILS.indexOf(key);
  return i < 0 ? HEADLINE_DETAILS.length : i;
}
