/** Writes a run's reports (report.md and report.html) from its result, next to result.json in the results store. */
import type { ExperimentResult } from '../../common/results/result';
import type { ResultsStore } from '../../lib/results-store';
import { renderHtml } from './html';
import { renderMarkdown } from './markdown';

/** Report file names, as stored below the run's prefix. */
export const REPORT_FILES = { markdown: 'report.md', html: 'report.html' } as const;

export async function writeReports(store: ResultsStore, runId: string, result: ExperimentResult): Promise<void> {
  await store.put(runId, REPORT_FILES.markdown, renderMarkdown(result));
  await store.put(runId, REPORT_FILES.html, renderHtml(result));
}
