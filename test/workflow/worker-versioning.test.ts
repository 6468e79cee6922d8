/**
 * Deploying a new build without breaking runs in flight (real dev server, mocked activities): build A runs a pinned
 * probe that waits half-way and a sweep held in its first activity; build B, whose probe issues other commands,
 * becomes current. The probe started on A finishes on A (A's build id on every workflow task, A's commands, no
 * failed task), a new probe runs on B, the auto-upgrade sweep moves to B, an unversioned activity-only worker (as
 * a host agent) serves both builds' runs, the Temporal CLI lists both builds, and A stops once it is drained.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker, type NativeConnection } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { keepAlive } from '../../activities/heartbeat';
import { runProcess } from '../../lib/process-runner';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { temporalBinary } from '../../infra/temporal/dev-server';
import type { SweepReport } from '../../common/core/sweep';
import { retireWhenDrained } from '../../worker/control-worker';
import { deploymentOptions, makeCurrent, versionStatus } from '../../worker/versioning';
import { releaseSignal, type ProbeInput } from '../fixtures/versioning/probe';
import { connect, serverAddress, uniqueId } from '../helpers/temporal';

const quiet = { info: () => undefined, warn: () => undefined, error: console.error, debug: () => undefined, trace: () => undefined, log: () => undefined };

type Event = temporal.api.history.v1.IHistoryEvent;
const { WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING: DRAINING, WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED: DRAINED } =
  temporal.api.enums.v1.WorkerDeploymentVersionStatus;

/** Waits until check() is true, polling. */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Build ids of the workers that completed the run's workflow tasks, in order. */
function taskBuildIds(events: Event[]): string[] {
  return events.filter((e) => e.workflowTaskCompletedEventAttributes).map((e) => e.workflowTaskCompletedEventAttributes!.deploymentVersion?.buildId ?? '');
}

describe('worker versioning: a new build while runs are in flight', () => {
  let connection: NativeConnection;
  let client: Client;
  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  it('keeps a pinned run on its build, starts new runs on the current build, and moves the sweeper', async () => {
    const taskQueue = uniqueId('versioning');
    const hostQueue = `host:${uniqueId('probe-host')}`;
    const A = { deploymentName: taskQueue, buildId: '0.1.0+aaaaaaa' };
    const B = { deploymentName: taskQueue, buildId: '0.1.0+bbbbbbb' };
    const [bundleA, bundleB] = await Promise.all(
      ['build-a', 'build-b'].map((m) => bundleWorkflowCode({ workflowsPath: require.resolve(`../fixtures/versioning/${m}`), logger: quiet })),
    );

    // The sweep on A is held in its first activity until the test lets it go.
    let sweepHeldOnA = false;
    let releaseSweep!: () => void;
    const sweepReleased = new Promise<void>((r) => (releaseSweep = r));
    const activities = (build: string, hold: boolean) =>
      keepAlive({
        probeStep: async (step: string) => `${build}:${step}`,
        listManagedHosts: async () => {
          if (hold) {
            sweepHeldOnA = true;
            await sweepReleased;
          }
          return [];
        },
        describeRuns: async () => ({}),
        removeExpiredDataSets: async () => [],
      });
    // As a host agent: activities only, unversioned, on a queue of its own.
    const hostAgent = await Worker.create({ connection, taskQueue: hostQueue, activities: { probeStep: async (step: string) => `host:${step}` } });
    const workerA = await Worker.create({ connection, taskQueue, workflowBundle: bundleA, activities: activities('A', true), workerDeploymentOptions: deploymentOptions(A) });
    const workerB = await Worker.create({ connection, taskQueue, workflowBundle: bundleB, activities: activities('B', false), workerDeploymentOptions: deploymentOptions(B) });
    const hostRunning = hostAgent.run();
    const runningA = workerA.run();
    let runningB: Promise<void> | undefined;
    try {
      await makeCurrent(client, A);
      // As the control worker does: A goes away by itself once superseded and drained.
      const retiredA = retireWhenDrained(workerA, client, A, 1_000);

      const input: ProbeInput = { hostQueue };
      const start = (type: string, args: unknown[]) => client.workflow.start(type, { taskQueue, workflowId: uniqueId('versioning-run'), args });
      const onA = await start('versionProbeWorkflow', [input]);
      await until('the probe on A to finish its first step', async () => (await onA.fetchHistory()).events!.some((e) => e.activityTaskCompletedEventAttributes));
      const sweep = await start(WORKFLOW_TYPES.sweeper, [{}]);
      await until('the sweep to reach its first activity on A', () => sweepHeldOnA);

      runningB = workerB.run();
      await makeCurrent(client, B);
      const onB = await start('versionProbeWorkflow', [input]);
      // A keeps serving its pinned run: the server reports it draining, not drained.
      await until('A to be draining', async () => (await versionStatus(client, A)) === DRAINING);
      // And B's routing propagated to the task queue's partitions: before that a task of the auto-upgrade sweep may
      // still go to A (a clean clone saw the sweep's last task on A, released right after A reported draining).
      await until("B's routing to reach the task queue", async () => {
        const info = (await client.workflowService.describeWorkerDeployment({ namespace: client.options.namespace, deploymentName: B.deploymentName })).workerDeploymentInfo;
        return info?.routingConfig?.currentDeploymentVersion?.buildId === B.buildId && info?.routingConfigUpdateState === temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED;
      });

      await onA.signal(releaseSignal);
      await onB.signal(releaseSignal);
      releaseSweep();
      expect(await onA.result()).toEqual(['A:a-1', 'host:a-2']);
      expect(await onB.result()).toEqual(['B:b-1', 'host:b-2']);
      const report = (await sweep.result()) as SweepReport;
      expect(report.removed).toEqual([]);

      const historyA = (await onA.fetchHistory()).events!;
      expect(new Set(taskBuildIds(historyA))).toEqual(new Set([A.buildId]));
      expect(historyA.filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
      expect(historyA.some((e) => e.timerStartedEventAttributes)).toBe(false);
      const historyB = (await onB.fetchHistory()).events!;
      expect(new Set(taskBuildIds(historyB))).toEqual(new Set([B.buildId]));
      expect(historyB.some((e) => e.timerStartedEventAttributes)).toBe(true);
      // The sweep's first task ran on A, its last on B, and B replayed A's part without a failed task.
      const sweepHistory = (await sweep.fetchHistory()).events!;
      const sweepBuilds = taskBuildIds(sweepHistory);
      expect(sweepBuilds[0]).toBe(A.buildId);
      expect(sweepBuilds.at(-1)).toBe(B.buildId);
      expect(sweepHistory.filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
      expect((await sweep.describe()).raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE);
      expect((await onA.describe()).raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED);

      // Had A's run gone to B, it would have failed: its history does not replay on B's code (the SDK logs the
      // failed task as a warning).
      const replayed = await Worker.runReplayHistory(
        { workflowBundle: bundleB, replayName: 'versioning' },
        await onA.fetchHistory(),
        onA.workflowId,
      ).then(
        () => null,
        (err: unknown) => err,
      );
      expect(replayed).toBeInstanceOf(DeterminismViolationError);

      const described = await runProcess(temporalBinary(), [
        'worker', 'deployment', 'describe', '--name', taskQueue, '--address', serverAddress(), '--output', 'json',
      ]);
      const info = JSON.parse(described.stdout) as { name: string; routingConfig: { currentVersionBuildID: string }; versionSummaries: { BuildID: string; drainageStatus?: string }[] };
      expect(info.name).toBe(taskQueue);
      expect(info.routingConfig.currentVersionBuildID).toBe(B.buildId);
      expect(info.versionSummaries.map((v) => v.BuildID).sort()).toEqual([A.buildId, B.buildId]);

      // With its last pinned run closed, A is drained and its worker stops by itself.
      await until('worker A to stop by itself', () => workerA.getState() === 'STOPPED', 90_000);
      await Promise.all([runningA, retiredA]);
      expect(await versionStatus(client, A)).toBe(DRAINED);
    } finally {
      releaseSweep(); // A failed expectation must not leave A's worker waiting for the held activity.
      for (const w of [workerA, workerB, hostAgent]) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all([runningA, runningB, hostRunning]);
    }
  });
});
