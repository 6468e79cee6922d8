/**
 * Diagnose captures in the results store: capture.json, report.md and report.html under the run's prefix, and one
 * index entry per capture under the history's reserved prefix (_history/diagnose/<target>__<run>.json), so the
 * captures of one server can be listed oldest first without reading every capture.
 */
import type { DiagnoseCapture, DiagnoseVerdict, VerdictGroup } from '../common/results/diagnose-capture';
import { HISTORY_RUN } from './history';
import { runFolderName, type ResultsStore } from '../lib/results-store';
import { captureHtml, captureMarkdown } from './report/diagnose';

export const CAPTURE_FILES = { capture: 'capture.json', markdown: 'report.md', html: 'report.html' } as const;

/** What the index keeps of a capture. */
export interface CaptureIndexEntry {
  runId: string;
  capturedAt: string;
  target: string;
  serverVersion: string;
  seconds: number;
  verdict: DiagnoseVerdict;
  reason: string;
  tps: number;
  shares: Record<VerdictGroup, number>;
  msPerBlockRead: number | null;
  fsyncMs: number | null;
}

const INDEX_FOLDER = 'diagnose';
const SEPARATOR = '__';

/** Stores a capture and its reports, indexes it; returns where it is. */
export async function saveCapture(store: ResultsStore, runId: string, capture: DiagnoseCapture): Promise<string> {
  await store.put(runId, CAPTURE_FILES.capture, JSON.stringify(capture, null, 2));
  await store.put(runId, CAPTURE_FILES.markdown, captureMarkdown(capture));
  await store.put(runId, CAPTURE_FILES.html, captureHtml(capture));
  const entry: CaptureIndexEntry = {
    runId,
    capturedAt: capture.capturedAt,
    target: capture.target,
    serverVersion: capture.serverVersion,
    seconds: capture.diagnostics.seconds,
    verdict: capture.verdict,
    reason: capture.reason,
    tps: capture.tps,
    shares: capture.evidence.shares,
    msPerBlockRead: capture.evidence.msPerBlockRead,
    fsyncMs: capture.evidence.fsyncMs,
  };
  await store.put(HISTORY_RUN, `${INDEX_FOLDER}/${runFolderName(capture.target)}${SEPARATOR}${runFolderName(runId)}.json`, JSON.stringify(entry, null, 2));
  return store.location(runId);
}

/** Every indexed capture, of one target (as captures name it: user@host:port/database) or all, oldest first. */
export async function captureHistory(store: ResultsStore, target?: string): Promise<CaptureIndexEntry[]> {
  const prefix = target ? `${runFolderName(target)}${SEPARATOR}` : '';
  const entries: CaptureIndexEntry[] = [];
  for (const key of await store.list(HISTORY_RUN, INDEX_FOLDER)) {
    const name = key.slice(key.lastIndexOf('/') + 1);
    if (!name.endsWith('.json') || !name.startsWith(prefix)) continue;
    const text = await store.get(HISTORY_RUN, key);
    if (text) entries.push(JSON.parse(text) as CaptureIndexEntry);
  }
  return entries.sort((a, b) => a.capturedAt.localeCompare(b.capturedAt));
}
