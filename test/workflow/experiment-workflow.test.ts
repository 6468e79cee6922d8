/**
 * The experiment and cluster workflows on the real dev server, with every activity mocked: teardown runs after
 * results are saved when an activity fails and when the run is cancelled; a bad spec fails fast and creates nothing.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { ControlActivities } from '../../activities/control';
import type { HostActivities } from '../../activities/host';
import { hostIdFor } from '../../common/core/ids';
import { hostTaskQueue, WORKFLOW_TYPES } from '../../common/core/names';
import { resolveSpec } from '../../common/input/resolve';
import { fakeHostRecord } from '../helpers/fake-host';
import { fakeDataSetControl, fakeDataSetHost } from '../../bench/fake-data-sets';
import { connect, uniqueId, workflowBundle } from '../helpers/temporal';
import { ApplicationFailure, Context } from '@temporalio/activity';

type Calls = string[];

function fakeControl(calls: Calls): Partial<ControlActivities> {
  return {
    ...fakeDataSetControl(),
    async preflight() {
      calls.push('preflight');
      return { warnings: [] };
    },
    async saveSpec() {
      calls.push('saveSpec');
      return '/tmp/results';
    },
    async provisionHost({ request }) {
      // An experiment's hosts keep no undo log for power cuts (HostRequest.powerCuts false): the cheaper volume.
      calls.push(`provision ${request.hostId}${request.powerCuts === false ? '' : ` powerCuts=${request.powerCuts}`}`);
      return fakeHostRecord(request);
    },
    async saveClusterResult({ result }) {
      calls.push(`save ${result.hostId} ${result.status}`);
    },
    async teardownHost({ hostId }) {
      calls.push(`teardown ${hostId}`);
    },
    async inspectHost() {
      return { oomKills: 0, text: 'no agent log', lastPollAt: null };
    },
    async writeResults({ cancelled }) {
      calls.push(`writeResults cancelled=${cancelled}`);
      return { location: '/tmp/results', status: cancelled ? 'cancelled' : 'failed', medianTps: {}, ratios: {}, failedChecks: [] };
    },
  };
}

function fakeHost(calls: Calls, hostId: string, behaviour: { loadFails?: boolean; hangInTps?: boolean }): Partial<HostActivities> {
  return {
    ...fakeDataSetHost(),
    async describeHost() {
      return { hostId, pid: 1, postgresRunning: false };
    },
    async configurePostgres() {
      return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
    },
    async loadData() {
      calls.push(`load ${hostId}`);
      if (behaviour.loadFails) throw ApplicationFailure.nonRetryable('disk on fire');
      return { rows: 200000, chunks: 10, chunksResumed: 0, loadSeconds: 1, indexSeconds: 0, vacuumSeconds: 0, heapBytes: 1, rowsPerSecond: 1 };
    },
    async verifyAccounts() {
      return { rows: 200000, distinctAids: 200000, minAid: 1, maxAid: 200000 };
    },
    async runPgbench(input) {
      calls.push(`pgbench ${hostId} ${input.label}`);
      if (behaviour.hangInTps && input.label === 'tps') {
        const ctx = Context.current();
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(200); // Throws when the activity is cancelled.
        }
      }
      return {
        tps: 100,
        transactions: 500,
        failedTransactions: 0,
        durationSeconds: 5,
        clients: 8,
        threads: 2,
        latencyMs: { mean: 80, p50: 80, p95: 90, p99: 95 },
        tpsSeries: [100],
        pgbenchVersion: '15.18',
      };
    },
  };
}

describe('experimentWorkflow with mocked activities', () => {
  let connection: NativeConnection;
  let client: Client;

  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  /** Runs an experiment against fake activities; resolves with the call log and the workflow's outcome. */
  async function runWith(
    input: Record<string, unknown>,
    behaviour: { loadFails?: boolean; hangInTps?: boolean },
    during?: (workflowId: string, calls: Calls) => Promise<void>,
  ): Promise<{ calls: Calls; outcome: unknown }> {
    const calls: Calls = [];
    const taskQueue = uniqueId('wf-test');
    const workflowId = uniqueId('exp');
    let classes: string[] = [];
    try {
      classes = Object.keys(resolveSpec(input).storageClasses);
    } catch {
      // A bad spec: no host would be asked for.
    }
    const hostIds = classes.map((c) => hostIdFor(workflowId, c, 0));
    const control = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: workflowBundle(),
      activities: fakeControl(calls),
    });
    const hosts = await Promise.all(
      hostIds.map((h) =>
        Worker.create({ connection, taskQueue: hostTaskQueue(h), activities: fakeHost(calls, h, behaviour) }),
      ),
    );
    const workers = [control, ...hosts];
    const running = workers.map((w) => w.run());
    try {
      const handle = await client.workflow.start(WORKFLOW_TYPES.experiment, { taskQueue, workflowId, args: [input] });
      const during_ = during ? during(workflowId, calls) : Promise.resolve();
      const result = await handle.result().then(
        (v) => v as unknown,
        (e) => e as unknown,
      );
      await during_;
      return { calls, outcome: result };
    } finally {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
    }
  }

  it('saves results and tears every host down when an activity fails', async () => {
    const { calls, outcome } = await runWith({ preset: 'ci' }, { loadFails: true });
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const provisioned = calls.filter((c) => c.startsWith('provision ')).map((c) => c.split(' ')[1]);
    expect(provisioned).toHaveLength(2);
    expect(calls.filter((c) => c.startsWith('provision ') && c.includes('powerCuts='))).toEqual([]);
    for (const host of provisioned) {
      const saved = calls.indexOf(`save ${host} failed`);
      const torn = calls.indexOf(`teardown ${host}`);
      expect(saved).toBeGreaterThanOrEqual(0);
      expect(torn).toBeGreaterThan(saved);
    }
    expect(calls).toContain('writeResults cancelled=false');
    expect(calls.some((c) => c.startsWith('pgbench'))).toBe(false);
  });

  it('tears the host down after saving results when the run is cancelled mid-measurement', async () => {
    const { calls, outcome } = await runWith({ preset: 'ci' }, { hangInTps: true }, async (workflowId, log) => {
      while (!log.some((c) => c.endsWith(' tps'))) await new Promise((r) => setTimeout(r, 100));
      await client.workflow.getHandle(workflowId).cancel();
    });
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    expect(String((outcome as WorkflowFailedError).cause?.name)).toMatch(/Cancel/);
    const host = calls.find((c) => c.endsWith(' tps'))!.split(' ')[1];
    expect(calls.indexOf(`teardown ${host}`)).toBeGreaterThan(calls.indexOf(`save ${host} cancelled`));
    expect(calls.indexOf(`save ${host} cancelled`)).toBeGreaterThanOrEqual(0);
    expect(calls).toContain('writeResults cancelled=true');
    // Bounded parallelism 1: the second class never started, so nothing else was provisioned.
    expect(calls.filter((c) => c.startsWith('provision '))).toHaveLength(1);
  });

  it('fails a bad spec at once, non-retryable, naming the field, and provisions nothing', async () => {
    const { calls, outcome } = await runWith({ preset: 'ci', workload: { clients: 0 } }, {});
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const cause = (outcome as WorkflowFailedError).cause as { type?: string; nonRetryable?: boolean; message: string };
    expect(cause.type).toBe('InvalidSpecError');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toContain('workload.clients');
    expect(calls).toEqual([]);
  });
});
