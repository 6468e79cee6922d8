/** Shared pieces of the fault tests: small runs, waiting for a phase, and reading what a run left. */
import type { Client } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runFolderName } from '../../activities/control/results-store';
import type { ExperimentResult } from '../../common/result';
import type { TestLab } from './lab';

/** One emulated gp3 host, 1,000,000 rows in 20 chunks, 3 s warm-up, 5 s TPS run, no VACUUM/backlog phases. */
export const SMALL_GP3 = {
  preset: 'ci',
  storageClasses: { 'local-disk': null },
  compare: null,
  data: { scale: 10, chunkRows: 50_000 },
  workload: { warmupSeconds: 3, durationSeconds: 5 },
  phases: { vacuum: { enabled: false }, backlog: { enabled: false } },
};

export interface PendingActivity {
  type: string;
  attempt: number;
  state: string;
  /** The last heartbeat's details, decoded (host activities heartbeat their phase progress). */
  details: { phase?: string; percent?: number } | null;
}

/** The activities a workflow is waiting for, as the server describes them. */
export async function pendingActivities(client: Client, workflowId: string): Promise<PendingActivity[]> {
  const d = await client.workflow.getHandle(workflowId).describe();
  return (d.raw.pendingActivities ?? []).map((a) => {
    const data = a.heartbeatDetails?.payloads?.[0]?.data;
    let details: PendingActivity['details'] = null;
    try {
      details = data ? JSON.parse(Buffer.from(data).toString('utf8')) : null;
    } catch {
      details = null;
    }
    return { type: a.activityType?.name ?? '', attempt: a.attempt ?? 0, state: String(a.state ?? ''), details };
  });
}

/**
 * Waits until a workflow has `type` pending (and, if given, heartbeating `phase`); returns it. Polls the server,
 * so it works while no worker runs.
 */
export async function waitForActivity(
  client: Client,
  workflowId: string,
  type: string,
  phase?: string,
  timeoutMs = 120_000,
): Promise<PendingActivity> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = (await pendingActivities(client, workflowId).catch(() => [])).find(
      (a) => a.type === type && (!phase || a.details?.phase === phase),
    );
    if (found) return found;
    if (Date.now() > end) throw new Error(`${workflowId}: no pending ${type}${phase ? ` (${phase})` : ''} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function readResult(lab: TestLab, runId: string): ExperimentResult {
  return JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(runId), 'result.json'), 'utf8'));
}
