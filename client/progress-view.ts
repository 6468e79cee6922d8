/**
 * Progress of a run as the CLI shows it, read on demand: the run's progress query, its children's (clusters,
 * drills, a nightly's experiment), and each running step's last heartbeat from the server's description of the
 * pending activities. With a terminal: one bar per host; without: every step each host went through (from the
 * workflows' own records, so none is missed between two polls), then a line per host every 30 s.
 */
import { defaultPayloadConverter, type Client, type WorkflowHandle } from '@temporalio/client';
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { progressQuery, type ActivityProgress, type HostProgress, type RunProgress, type StepEntry } from '../common/core/messages';
import { CLUSTER_STEPS, clusterPercent, detailText } from '../common/results/progress';

const POLL_MS = 1_000;
const PLAIN_EVERY_MS = 30_000;
/** Children of children are read too (experiment → drill); deeper trees do not exist. */
const MAX_DEPTH = 3;

/** A run's progress with its children's hosts merged in and running steps refined by their heartbeats. */
export interface ViewedProgress extends RunProgress {
  /** Host ids whose step is a cluster step get the weighted percentage; others their workflow's own. */
  hostPercent: Record<string, number>;
}

/** Reads a run's progress now; null when the workflow cannot answer (not started, no worker). */
export async function readProgress(client: Client, workflowId: string, finished = new Map<string, ViewedProgress>(), depth = 0): Promise<ViewedProgress | null> {
  const cached = finished.get(workflowId);
  if (cached) return cached;
  const handle = client.workflow.getHandle(workflowId);
  const progress = await handle.query(progressQuery).catch(() => null);
  if (!progress) return null;
  const viewed: ViewedProgress = { ...progress, clusters: { ...progress.clusters }, hostPercent: {} };
  const description = await handle.describe().catch(() => null);
  for (const beat of (description?.raw.pendingActivities ?? []).map((a) => heartbeatOf(a.heartbeatDetails?.payloads?.[0]))) {
    const host = beat && viewed.clusters[beat.hostId];
    if (!beat || !host) continue;
    viewed.clusters[beat.hostId] = {
      ...host,
      detail: beat.detail,
      ...(beat.step === host.step ? { percent: beat.percent, etaSeconds: beat.etaSeconds } : {}),
    };
  }
  for (const h of Object.values(viewed.clusters))
    viewed.hostPercent[h.hostId] = CLUSTER_STEPS.some((s) => s.name === h.step) ? clusterPercent(h) : progress.percent;
  if (depth < MAX_DEPTH) {
    const percents: number[] = [];
    for (const child of progress.children) {
      const sub = child.state === 'waiting' ? null : await readProgress(client, child.workflowId, finished, depth + 1);
      if (sub) {
        Object.assign(viewed.clusters, sub.clusters);
        Object.assign(viewed.hostPercent, sub.hostPercent);
      }
      const subPercent = sub ? Math.max(...Object.values(sub.hostPercent), sub.percent) : 0;
      percents.push(child.state === 'done' || child.state === 'failed' ? 100 : child.state === 'waiting' ? 0 : subPercent);
    }
    if (percents.length) viewed.percent = Math.round((10 * percents.reduce((s, p) => s + p, 0)) / percents.length) / 10;
  }
  if (description && description.status.name !== 'RUNNING') finished.set(workflowId, viewed);
  return viewed;
}

function heartbeatOf(payload: Parameters<typeof defaultPayloadConverter.fromPayload>[0] | undefined): ActivityProgress | null {
  if (!payload) return null;
  try {
    const value = defaultPayloadConverter.fromPayload<ActivityProgress>(payload);
    return value && typeof value.hostId === 'string' && typeof value.step === 'string' ? value : null;
  } catch {
    return null;
  }
}

/** "load 42% eta 12s rows 1,200,000 mb 180": a host's running step in one line. */
export function describeStep(p: HostProgress): string {
  const eta = p.etaSeconds !== undefined ? ` eta ${p.etaSeconds}s` : '';
  return `${p.step}${p.percent !== undefined ? ` ${p.percent}%` : ''}${eta} ${detailText(p.detail, 6).join(' ')}`.trim();
}

/**
 * The percentage a plain `--watch` line shows for one of a host's recorded steps: a cluster step's weighted place in
 * the cluster's plan; the latest step of any other workflow (a drill's round) its workflow's own percentage, as the
 * periodic line shows it; an earlier step of another workflow none, since nothing recorded it then. (Drill hosts'
 * lines once read 0 %: their steps are not cluster steps and carry no percentage of their own.)
 */
export function stepLinePercent(progress: Pick<ViewedProgress, 'hostPercent'>, host: HostProgress, entry: StepEntry, latest: boolean): number | null {
  if (CLUSTER_STEPS.some((s) => s.name === entry.step)) return latest ? clusterPercent(host) : clusterPercent({ step: entry.step });
  return latest ? (progress.hostPercent[host.hostId] ?? null) : null;
}

/** Shows progress until the workflow closes, then returns its result (or throws its failure). */
export async function watchWorkflow<T>(client: Client, handle: WorkflowHandle, out: NodeJS.WriteStream = process.stdout): Promise<T> {
  const tty = Boolean(out.isTTY);
  const multibar = tty
    ? new MultiBar({ format: '{host} |{bar}| {percentage}% | {info}', hideCursor: true, clearOnComplete: false, stream: out }, Presets.shades_classic)
    : null;
  const bars = new Map<string, SingleBar>();
  /** Plain output: how many of each host's steps were printed, and when its last line was. */
  const printed = new Map<string, { steps: number; at: number }>();
  const finished = new Map<string, ViewedProgress>();
  let overall: SingleBar | undefined;
  const resultPromise = handle.result() as Promise<T>;
  let done = false;
  resultPromise.then(
    () => (done = true),
    () => (done = true),
  );
  try {
    while (!done) {
      const progress = await readProgress(client, handle.workflowId, finished).catch(() => null);
      if (progress) render(progress);
      await Promise.race([new Promise((r) => setTimeout(r, POLL_MS)), resultPromise.catch(() => undefined)]);
    }
    const final = await readProgress(client, handle.workflowId, finished).catch(() => null);
    if (final) render(final);
  } finally {
    multibar?.stop();
  }
  return resultPromise;

  function render(progress: ViewedProgress): void {
    if (multibar) {
      overall ??= multibar.create(100, 0, { host: 'run'.padEnd(20), info: '' });
      overall.update(progress.percent, { info: progress.stage });
      for (const c of Object.values(progress.clusters)) {
        let bar = bars.get(c.hostId);
        if (!bar) bars.set(c.hostId, (bar = multibar.create(100, 0, { host: c.hostId.padEnd(20), info: '' })));
        bar.update(progress.hostPercent[c.hostId] ?? 0, { info: describeStep(c) });
      }
      return;
    }
    for (const c of Object.values(progress.clusters)) {
      const seen = printed.get(c.hostId) ?? { steps: 0, at: 0 };
      const steps = c.steps ?? [];
      // Every step the host's workflow recorded, in order, each with its own time: none is lost between polls.
      for (const entry of steps.slice(seen.steps)) {
        const latest = entry === steps.at(-1);
        const at = latest ? c : { ...c, step: entry.step, percent: undefined, etaSeconds: undefined, detail: undefined };
        const percent = stepLinePercent(progress, c, entry, latest);
        out.write(`[${entry.at}] ${c.hostId} ${percent === null ? '' : `${percent}% `}${describeStep(at)}\n`);
        seen.at = Date.now();
      }
      seen.steps = steps.length;
      const finishedHost = c.step === 'done' || c.step === 'failed';
      if (!finishedHost && Date.now() - seen.at > PLAIN_EVERY_MS) {
        out.write(`[${new Date().toISOString()}] ${c.hostId} ${progress.hostPercent[c.hostId] ?? 0}% ${describeStep(c)}\n`);
        seen.at = Date.now();
      }
      printed.set(c.hostId, seen);
    }
  }
}
