/**
 * Every PostgreSQL process of a host stopped (SIGSTOP) once the TPS run's pgbench runs, and never continued (issue
 * 21), with real processes: the run fails within the host's silence bound with a failure that names the host, the
 * step and that PostgreSQL stopped answering, for how long, and that its processes are stopped; not measured again;
 * and nothing is left: host folder, mount, loop device, cgroup, and every stopped process gone (SIGKILL ends a
 * stopped process; SIGTERM would wait until it is continued). Twice: with the host's cgroups (teardown kills the
 * cgroup), and without (teardown finds the postmaster's stopped children itself).
 * Before the watchdog, the same run ended after minutes with "activity Heartbeat timeout" on each of its attempts.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { existsSync, readFileSync } from 'node:fs';
import { hostIdFor } from '../../common/core/ids';
import { FAILURE_TYPES } from '../../common/core/errors';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { pendingActivities, postgresPids, readResult, waitForActivity } from '../helpers/faults';
import { startTestLab, type TestLab, hostDirOf } from '../helpers/lab';
import { NO_PHASES } from '../helpers/phases';

/** The host's silence bound in this test: the TPS run's heartbeat timeout, and so the watchdog's limit, is 20 s. */
const DEAD_AFTER_SECONDS = 20;
const INPUT = {
  preset: 'ci',
  storageClasses: { gp3: null },
  compare: null,
  host: { deadAfterSeconds: DEAD_AFTER_SECONDS },
  // Long enough that pgbench still runs when the bound is up: the failure is the watchdog's, not pgbench's own.
  workload: { warmupSeconds: 0, durationSeconds: 120 },
  phases: NO_PHASES,
};
/**
 * From the stop to the run's end: the limit, the probe's period (2 s at a 20 s limit), the result's save and the
 * host's teardown, on a busy 2-core machine.
 */
const END_WITHIN_MS = (DEAD_AFTER_SECONDS + 40) * 1000;

/** A process's state and start time (fields 3 and 22 of /proc/<pid>/stat), or null when it is gone. */
function stat(pid: number): { state: string; started: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], started: fields[19] };
  } catch {
    return null;
  }
}

/** A process's start time, so a pid the kernel gave to another process is never taken for (or signalled as) ours. */
const startTime = (pid: number) => stat(pid)?.started ?? null;

/**
 * The stopped processes still alive (the same process: same pid and start time), with their state. A zombie (Z)
 * is dead: killed, waiting for its new parent (init) to reap it.
 */
function stillAlive(stopped: Map<number, string>): string[] {
  return [...stopped].flatMap(([pid, started]) => {
    const now = stat(pid);
    return now && now.started === started && now.state !== 'Z' ? [`${pid} (${now.state})`] : [];
  });
}

/** Stops every process of the host's Postgres: the postmaster first, so it starts no new child meanwhile. */
function stopPostgres(lab: TestLab, hostId: string): Map<number, string> {
  const stopped = new Map<number, string>();
  const [postmaster] = postgresPids(lab, hostId);
  process.kill(postmaster, 'SIGSTOP');
  for (const pid of postgresPids(lab, hostId)) {
    const started = startTime(pid);
    if (started === null) continue;
    if (pid !== postmaster) process.kill(pid, 'SIGSTOP');
    stopped.set(pid, started);
  }
  return stopped;
}

/** The test's own safety net: what it stopped and the teardown did not end is continued, then killed. */
function release(stopped: Map<number, string>): void {
  for (const pid of [...stopped].filter(([p, started]) => startTime(p) === started).map(([p]) => p))
    for (const signal of ['SIGCONT', 'SIGKILL'] as const)
      try {
        process.kill(pid, signal);
      } catch {
        // Gone meanwhile.
      }
}

/** How a run ended within a budget; past it, throws naming what its cluster waits for. */
async function settle(lab: TestLab, handle: WorkflowHandle, cluster: string, budgetMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => (timer = setTimeout(() => resolve('expired'), budgetMs)));
  const ended = handle.result().then(
    () => new Error('the run completed'),
    (err: unknown) => err,
  );
  const first = await Promise.race([ended, expired]);
  clearTimeout(timer);
  if (first !== 'expired') return first;
  const pending = await pendingActivities(lab.client, cluster).catch((err: unknown) => String(err));
  throw new Error(`${handle.workflowId} not ended within ${budgetMs / 1000} s; its cluster waits for ${JSON.stringify(pending)}`);
}

/** The whole chain of a workflow failure's messages (the failure, its cause, ...), one per line. */
function messages(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) out.push(e.message);
  return out.join('\n');
}

/** The types of the application failures in a failure's chain. */
function failureTypes(err: unknown): string[] {
  const out: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) if (e instanceof ApplicationFailure && e.type) out.push(e.type);
  return out;
}

async function stoppedMidTps(name: string): Promise<void> {
  const lab = await startTestLab(name);
  let stopped = new Map<number, string>();
  try {
    const handle = await lab.startExperiment(INPUT);
    const runId = handle.workflowId;
    const hostId = hostIdFor(runId, 'local-disk', 0);
    const cluster = clusterWorkflowId(runId, 'local-disk', 0);
    await waitForActivity(lab.client, cluster, 'runPgbench', 'tps', 240_000, (d) => Number(d.second ?? 0) >= 3);
    stopped = stopPostgres(lab, hostId);
    expect(stopped.size).toBeGreaterThanOrEqual(5); // The postmaster, its workers and the workload's backends.
    const stoppedAt = Date.now();

    const err = await settle(lab, handle, cluster, END_WITHIN_MS + 60_000);
    const elapsedMs = Date.now() - stoppedAt;
    console.log(`${name}: ended ${(elapsedMs / 1000).toFixed(1)} s after the stop`);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    // Bounded by the host's bound (the limit), and not sooner: a server is given the whole limit to answer, counted
    // from its last reply (the probe's period, 2 s, at most before the stop).
    expect(elapsedMs).toBeGreaterThanOrEqual((DEAD_AFTER_SECONDS - 2) * 1000);
    expect(elapsedMs).toBeLessThan(END_WITHIN_MS);

    const text = new RegExp(
      `^host ${hostId}: PostgreSQL stopped answering \\(no reply for (\\d+) s\\) during step tps; ${stopped.size} of its ${stopped.size} processes stopped \\(state T: SIGSTOP or a debugger\\); not retried: `,
    );
    const c = readResult(lab, runId).classes['local-disk'].clusters[0];
    console.log(`${name}: ${c.error}`);
    expect(c.status).toBe('failed');
    expect(c.error).toMatch(text);
    const silent = Number(text.exec(c.error!)![1]);
    expect(silent).toBeGreaterThanOrEqual(DEAD_AFTER_SECONDS);
    expect(silent).toBeLessThanOrEqual(DEAD_AFTER_SECONDS + 5);
    // Final: not measured again on a host whose server does not answer.
    expect(c.failedAttempts).toEqual([]);
    // The run's failure says it too, and the cluster's failure carries the type.
    expect(messages(err)).toContain(`failed: host ${hostId}: PostgreSQL stopped answering (no reply for ${silent} s) during step tps`);
    const clusterErr = await lab.client.workflow.getHandle(cluster).result().then(() => null, (e: unknown) => e);
    // Its innermost message is the activity's own: "Workflow execution failed", "Activity task failed" wrap it.
    expect(messages(clusterErr).split('\n').pop()).toMatch(text);
    expect(failureTypes(clusterErr)).toContain(FAILURE_TYPES.postgresNotAnswering);

    expect(lab.leftovers([hostId]).filter((l) => l.includes(hostId))).toEqual([]);
    // Backends' command lines do not name the host's folder: each stopped process is checked by itself.
    expect(stillAlive(stopped)).toEqual([]);
    expect(existsSync(hostDirOf(lab.paths, hostId))).toBe(false);
  } finally {
    release(stopped);
    await lab.close();
  }
}

describe('PostgreSQL stopped mid-TPS and never continued (faults)', () => {
  it('fails within the host bound naming the host, the step and the silent server; nothing is left (cgroups)', async () => {
    await stoppedMidTps('pg-stopped');
  });

  it('the same without cgroups: teardown ends the stopped backends the postmaster leaves', async () => {
    process.env.STORAGE_LAB_NO_CGROUPS = '1';
    try {
      await stoppedMidTps('pg-stopped-nocg');
    } finally {
      delete process.env.STORAGE_LAB_NO_CGROUPS;
    }
  });
});
