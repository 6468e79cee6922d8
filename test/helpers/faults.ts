/** Shared pieces of the fault tests: small runs, waiting for a phase, and reading what a run left. */
import type { Client } from '@temporalio/client';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { runFolderName } from '../../lib/results-store';
import type { ExperimentResult } from '../../common/results/result';
import { hostDirOf, type TestLab } from './lab';
import { NO_PHASES } from './phases';
import { failureChain } from '../../bench/history-harness';

/** One emulated gp3 host, 1,000,000 rows in 20 chunks, 3 s warm-up, 5 s TPS run, no phases. */
export const SMALL_GP3 = {
  preset: 'ci',
  storageClasses: { 'local-disk': null },
  compare: null,
  data: { scale: 10, chunkRows: 50_000 },
  workload: { warmupSeconds: 3, durationSeconds: 5 },
  phases: NO_PHASES,
};

export interface PendingActivity {
  type: string;
  attempt: number;
  state: string;
  /** The last heartbeat's details, decoded (host activities heartbeat their step's progress). */
  details: { step?: string; percent?: number; detail?: Record<string, unknown> } | null;
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
 * How often waitForActivity asks the server. A describe cost the dev server 3.6 ms and the test 2.2 ms of CPU with the
 * suite running beside it (500 in a row): at 100 ms, cancel-phases' eight runs waiting at once took half a core for
 * describes alone. Every window a fault test waits for lasts seconds.
 */
const PENDING_POLL_MS = 250;

/**
 * Waits until a workflow has `type` pending (and, if given, heartbeating step `hostStep`); returns it. Polls the server,
 * so it works while no worker runs.
 */
export async function waitForActivity(
  client: Client,
  workflowId: string,
  type: string,
  hostStep?: string,
  timeoutMs = 120_000,
  step?: (detail: Record<string, unknown>) => boolean,
): Promise<PendingActivity> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = (await pendingActivities(client, workflowId).catch(() => [])).find(
      (a) => a.type === type && (!hostStep || a.details?.step === hostStep) && (!step || step(a.details?.detail ?? {})),
    );
    if (found) return found;
    if (Date.now() > end) throw new Error(`${workflowId}: no pending ${type}${hostStep ? ` (${hostStep})` : ''} within ${timeoutMs / 1000} s; ${await whereItIs(client, workflowId)}`);
    await new Promise((r) => setTimeout(r, PENDING_POLL_MS));
  }
}

export function readResult(lab: TestLab, runId: string): ExperimentResult {
  return JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(runId), 'result.json'), 'utf8'));
}

/** The pid a local host's supervisor wrote (it lives outside the host's cgroups), or null. */
export function supervisorPid(lab: TestLab, hostId: string): number | null {
  const file = path.join(hostDirOf(lab.paths, hostId), 'supervisor.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : null;
}

/** Pids of a local host's Postgres: the postmaster (from its pid file) and its children. */
export function postgresPids(lab: TestLab, hostId: string): number[] {
  const config = JSON.parse(readFileSync(path.join(hostDirOf(lab.paths, hostId), 'host.json'), 'utf8')) as { dataDir: string };
  const postmaster = Number(readFileSync(path.join(config.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        // Field 4 of /proc/<pid>/stat, after the command in parentheses, is the parent's pid.
        return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

/**
 * Where a workflow is, for a wait that ran out: its status, its pending activities (step, attempt, last failure) and,
 * once closed, why it ended; a cluster that never started is described by its run (the id before its "/").
 */
export async function whereItIs(client: Client, workflowId: string): Promise<string> {
  const d = await client.workflow.getHandle(workflowId).describe().catch(() => null);
  if (!d) {
    const parent = workflowId.includes('/') ? workflowId.slice(0, workflowId.lastIndexOf('/')) : null;
    return parent ? `it never started; its run: ${await whereItIs(client, parent)}` : 'no such workflow';
  }
  const parts = [`${workflowId} is ${d.status.name}`];
  for (const a of d.raw.pendingActivities ?? []) {
    const data = a.heartbeatDetails?.payloads?.[0]?.data;
    const beat = data ? Buffer.from(data).toString('utf8').slice(0, 300) : 'none';
    parts.push(`pending ${a.activityType?.name} attempt ${a.attempt}, last heartbeat ${beat}${a.lastFailure ? `, last failure: ${a.lastFailure.message}` : ''}`);
  }
  if (d.status.name !== 'RUNNING') {
    const why = await client.workflow.getHandle(workflowId).result().then(
      () => 'completed',
      (e: unknown) => failureChain(e),
    );
    parts.push(`ended: ${why}`);
  }
  return parts.join('; ');
}
