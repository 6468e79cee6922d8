/**
 * Progress bars for a run: one per cluster (phase, percent, ETA, the latest figures), from the workflow's progress
 * query. Without a terminal it prints a line per cluster whenever its phase changes, and every 30 s.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { progressQuery, type PhaseProgress, type RunProgress } from '../common/messages';
import { clusterPercent } from '../common/progress';

const POLL_MS = 1_000;
const PLAIN_EVERY_MS = 30_000;

function describe(p: PhaseProgress): string {
  const detail = p.detail
    ? Object.entries(p.detail)
        .map(([k, v]) => `${k} ${typeof v === 'number' ? Math.round(v * 10) / 10 : v}`)
        .join(' ')
    : '';
  const eta = p.etaSeconds !== undefined ? ` eta ${p.etaSeconds}s` : '';
  return `${p.phase}${p.percent !== undefined ? ` ${p.percent}%` : ''}${eta} ${detail}`.trim();
}

/** Shows progress until the workflow closes, then returns its result (or throws its failure). */
export async function watchWorkflow<T>(handle: WorkflowHandle, out: NodeJS.WriteStream = process.stdout): Promise<T> {
  const tty = Boolean(out.isTTY);
  const multibar = tty
    ? new MultiBar(
        { format: '{host} |{bar}| {percentage}% | {info}', hideCursor: true, clearOnComplete: false, stream: out },
        Presets.shades_classic,
      )
    : null;
  const bars = new Map<string, SingleBar>();
  const printed = new Map<string, { phase: string; at: number }>();
  let overall: SingleBar | undefined;
  const resultPromise = handle.result() as Promise<T>;
  let done = false;
  resultPromise.then(
    () => (done = true),
    () => (done = true),
  );
  try {
    while (!done) {
      const progress = await handle.query(progressQuery).catch(() => null as RunProgress | null);
      if (progress) render(progress);
      await Promise.race([new Promise((r) => setTimeout(r, POLL_MS)), resultPromise.catch(() => undefined)]);
    }
    const final = await handle.query(progressQuery).catch(() => null);
    if (final) render(final);
  } finally {
    multibar?.stop();
  }
  return resultPromise;

  function render(progress: RunProgress): void {
    if (multibar) {
      overall ??= multibar.create(100, 0, { host: 'run'.padEnd(20), info: '' });
      overall.update(progress.percent, { info: `${progress.phase}${progress.etaSeconds !== undefined ? ` eta ${progress.etaSeconds}s` : ''}` });
      for (const c of Object.values(progress.clusters)) {
        let bar = bars.get(c.hostId);
        if (!bar) {
          bar = multibar.create(100, 0, { host: c.hostId.padEnd(20), info: '' });
          bars.set(c.hostId, bar);
        }
        bar.update(clusterPercent(c), { info: describe(c) });
      }
      return;
    }
    for (const c of Object.values(progress.clusters)) {
      const last = printed.get(c.hostId);
      const finished = c.phase === 'done' || c.phase === 'failed';
      if (!last || last.phase !== c.phase || (!finished && Date.now() - last.at > PLAIN_EVERY_MS)) {
        out.write(`[${new Date().toISOString()}] ${c.hostId} ${clusterPercent(c)}% ${describe(c)}\n`);
        printed.set(c.hostId, { phase: c.phase, at: Date.now() });
      }
    }
  }
}
