/**
 * `dev up` after a rebuild, with a run in flight (a dev server and control workers of its own): the new build's
 * worker starts beside the old one and becomes current; the run started on the old build stays on it to its end (a
 * cancellation once the rollover is seen: every workflow task of the run and of its cluster child, the teardown's
 * included, completed by the old build), a new run goes to the new
 * build, and the old worker stops by itself once drained. Build ids are set with STORAGE_LAB_BUILD_ID, as CI would.
 */
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { rmSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../lib/process-runner';
import { CONTROL_TASK_QUEUE, WORKFLOW_TYPES } from '../../common/core/names';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { privateLabHome } from '../helpers/lab-home';

const cli = path.join(PROJECT_ROOT, 'dist/client/cli.js');

/** Build ids of the workers that completed a history's workflow tasks. */
function taskBuildIds(history: temporal.api.history.v1.IHistory): Set<string> {
  return new Set(
    (history.events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes).map((e) => e.workflowTaskCompletedEventAttributes!.deploymentVersion?.buildId ?? ''),
  );
}

describe('dev up with a new build while a run is in flight (end to end)', () => {
  let home: string;
  let env: NodeJS.ProcessEnv;
  let connection: Connection | undefined;

  beforeAll(async () => {
    ({ home, env } = await privateLabHome('dev-up'));
  });
  afterAll(async () => {
    await connection?.close();
    await runProcess(process.execPath, [cli, 'dev', 'down'], { env }).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  });

  const storageLab = (args: string[], buildId: string) =>
    runProcess(process.execPath, [cli, ...args], { env: { ...env, STORAGE_LAB_BUILD_ID: buildId }, timeoutMs: 300_000, okExitCodes: [0, 1, 2] });

  it('keeps the run on the build it started on, starts new runs on the new one, and retires the old one', async () => {
    const [A, B] = ['0.1.0+e2e-a', '0.1.0+e2e-b'];
    expect((await storageLab(['dev', 'up'], A)).exitCode).toBe(0);
    // gp3 alone: one cluster is enough to be in flight across the rollover. Its TPS step outlasts any rollover (under
    // two busy cores `dev up` outran the ci preset's 5 s), and the run is cancelled once the test has seen it pinned.
    const run = await storageLab(
      ['run', '--preset', 'ci', '--set', 'phases.backlog.enabled=false', '--set', 'storageClasses.local-disk=null', '--set', 'compare=null', '--set', 'workload.durationSeconds=900', '--id', 'rollover-run'],
      A,
    );
    expect(run.exitCode).toBe(0);

    // A rebuild: dev up compares the workflows' build stamp (their mtime), then the build ids.
    const marker = path.join(PROJECT_ROOT, 'dist', 'workflows', 'index.js');
    const { atime, mtime } = statSync(marker);
    utimesSync(marker, atime, new Date(mtime.getTime() + 1_000));
    expect((await storageLab(['dev', 'up'], B)).exitCode).toBe(0);
    const status = await storageLab(['dev', 'status'], B);
    expect(status.stdout).toMatch(new RegExp(`^control-worker\\s+running \\(pid \\d+\\)\\s+build ${B.replace(/[.+]/g, '\\$&')}`, 'm'));
    const draining = status.stdout.match(new RegExp(`^control-worker-draining-(\\d+)\\s+running \\(pid \\d+\\)\\s+build ${A.replace(/[.+]/g, '\\$&')}, draining`, 'm'));
    expect(draining).not.toBeNull();

    connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS! });
    const client = new Client({ connection });
    const handle = client.workflow.getHandle('rollover-run');
    // B became current while the run was in flight, which is pinned (workflows/index.ts) to A.
    const described = await handle.describe();
    expect(described.status.name).toBe('RUNNING');
    expect(described.raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED);
    // Its end (the cancellation, the host's teardown) runs on A too.
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow(/cancel/i);
    expect(taskBuildIds(await handle.fetchHistory())).toEqual(new Set([A]));
    expect(taskBuildIds(await client.workflow.getHandle(clusterWorkflowId('rollover-run', 'gp3', 0)).fetchHistory())).toEqual(new Set([A]));

    // A new run goes to B (a spec refused before any command: one workflow task, on the current build).
    const refused = await client.workflow.start(WORKFLOW_TYPES.experiment, { taskQueue: CONTROL_TASK_QUEUE, workflowId: 'after-rollover', args: [{ preset: 'no-such-preset' }] });
    await expect(refused.result()).rejects.toThrow();
    expect(taskBuildIds(await refused.fetchHistory())).toEqual(new Set([B]));

    // Drained, the old worker stops by itself.
    const oldPid = Number(draining![1]);
    const deadline = Date.now() + 180_000;
    while (isAlive(oldPid)) {
      if (Date.now() > deadline) throw new Error(`the superseded control worker (pid ${oldPid}) did not stop within 180 s of its last run`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    expect((await storageLab(['dev', 'status'], B)).stdout).not.toContain('draining');
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
