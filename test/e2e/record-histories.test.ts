/**
 * Records the workflow histories that test/workflow/replay.test.ts replays against the current workflow code, from
 * real, small runs on the real test lab (control worker, host agents, Postgres): a ci experiment and one of its
 * cluster children, a restore drill, the restore drill with each backup tool compared, a failover drill, a
 * partition drill and a power-cut drill each long enough to continue as new once, the nightly regression with the ci
 * overrides, the sweeper, and diagnose on a local Postgres: every workflow type the control worker registers. Not part of `npm test` (minutes of real
 * runs): skipped unless STORAGE_LAB_RECORD_HISTORIES=1. Each `it` overwrites only its own files, so one can be
 * re-recorded alone with -t. See test/fixtures/histories/README.md.
 *
 *   npx tsc -p tsconfig.json && STORAGE_LAB_RECORD_HISTORIES=1 npx jest --runInBand dist/test/e2e/record-histories.test.js
 */
import type { Client } from '@temporalio/client';
import { historyToJSON, type History } from '@temporalio/common/lib/proto-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { libpqEnv, withConnection } from '../../lib/pg';
import { startBenchHost, type BenchHost } from '../../bench/bench-host';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { resolveSpec } from '../../common/input/resolve';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { ROUNDS_PER_EXECUTION } from '../../workflows/failover-continuation';
import type { SweepReport } from '../../common/core/sweep';
import { hostRequests, localProviderFor } from '../helpers/aws-lab';
import { startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';
import { NO_PHASES } from '../helpers/phases';
import { startMoto } from '../helpers/moto';

const maybe = process.env.STORAGE_LAB_RECORD_HISTORIES === '1' ? describe : describe.skip;

const HISTORIES_DIR = path.join(PROJECT_ROOT, 'test', 'fixtures', 'histories');

/** The nightly regression's input in test/e2e/regression.test.ts: the ci preset, gp3 only, short, no phases. */
const NIGHTLY_CI = {
  preset: 'ci',
  storageClasses: { 'local-disk': null },
  compare: null,
  workload: { durationSeconds: 8, warmupSeconds: 2 },
  phases: NO_PHASES,
};

/** One more round than an execution holds: the drill continues as new once. */
const FAILOVER_ROUNDS = ROUNDS_PER_EXECUTION + 1;

/** Writes one run's history to <name>.json (the JSON of `temporal workflow show --output json`); returns it. */
async function save(client: Client, name: string, workflowId: string, runId?: string): Promise<History> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const file = path.join(HISTORIES_DIR, `${name}.json`);
  const text = `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 1)}\n`;
  writeFileSync(file, text);
  const first = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  console.log(`${name}.json: ${first?.workflowType?.name}, ${history.events?.length} events, ${(text.length / 1024).toFixed(0)} kB`);
  return history;
}

/** Every execution of a run that continued as new, from the first: <name>-1.json, <name>-2.json, ... */
async function saveChain(client: Client, name: string, workflowId: string, firstRunId: string): Promise<number> {
  let runId: string | undefined = firstRunId;
  let n = 0;
  while (runId) {
    const history = await save(client, `${name}-${++n}`, workflowId, runId);
    runId = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return n;
}

/** The child workflows a run started, by workflow type name. */
function children(history: History, type: string): { workflowId: string; runId: string }[] {
  return (history.events ?? [])
    .map((e) => e.childWorkflowExecutionStartedEventAttributes)
    .filter((a) => a?.workflowType?.name === type && a.workflowExecution?.workflowId && a.workflowExecution.runId)
    .map((a) => ({ workflowId: a!.workflowExecution!.workflowId!, runId: a!.workflowExecution!.runId! }))
    .sort((a, b) => a.workflowId.localeCompare(b.workflowId));
}

maybe('record workflow histories for the replay test', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('record');
  });
  afterAll(async () => {
    await lab?.close();
  });

  async function run(type: string, input: Record<string, unknown>) {
    const handle = await lab.client.workflow.start(type, { taskQueue: lab.taskQueue, workflowId: uniqueId(type), args: [input] });
    const result = (await handle.result()) as { status?: string };
    return { handle, result };
  }

  it('a ci experiment and one of its cluster workflows', async () => {
    // With data sets (the ci preset loads every host unless asked): both cluster paths get a recorded history.
    const handle = await lab.startExperiment({ preset: 'ci', data: { reuse: 'auto' } });
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    const history = await save(lab.client, 'experiment-ci', handle.workflowId);
    const clusters = children(history, WORKFLOW_TYPES.cluster);
    expect(clusters).toHaveLength(2);
    // Data sets (issue 31): one cluster loads and publishes, the other restores; each path has its history.
    const scheduled = async (c: { workflowId: string; runId: string }) =>
      ((await lab.client.workflow.getHandle(c.workflowId, c.runId).fetchHistory()).events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    const publisher: { workflowId: string; runId: string }[] = [];
    for (const c of clusters) if ((await scheduled(c)).includes('publishDataSet')) publisher.push(c);
    expect(publisher).toHaveLength(1);
    const restorer = clusters.find((c) => c !== publisher[0])!;
    await save(lab.client, 'cluster-ci', restorer.workflowId, restorer.runId);
    await save(lab.client, 'cluster-ci-publishes-data-set', publisher[0].workflowId, publisher[0].runId);
    expect(lab.leftovers(['local-disk', 'gp3'].map((c) => hostIdFor(handle.workflowId, c, 0)))).toEqual([]);
  });

  it('a ci cluster whose data set lives in S3 (moto)', async () => {
    const moto = await startMoto();
    try {
      await moto.createBucket('record-sets');
      process.env.AWS_ACCESS_KEY_ID = 'testing';
      process.env.AWS_SECRET_ACCESS_KEY = 'testing';
      const store = { kind: 's3', bucket: 'record-sets', region: 'us-east-1', endpoint: moto.endpoint };
      const handle = await lab.startExperiment({ preset: 'ci', data: { reuse: 'auto' }, phases: NO_PHASES, durability: { enabled: false, backupStore: store } });
      expect(await handle.result()).toMatchObject({ status: 'completed' });
      const clusters = children((await lab.client.workflow.getHandle(handle.workflowId).fetchHistory()) as History, WORKFLOW_TYPES.cluster);
      const scheduled = async (c: { workflowId: string; runId: string }) =>
        ((await lab.client.workflow.getHandle(c.workflowId, c.runId).fetchHistory()).events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
      const restorers: { workflowId: string; runId: string }[] = [];
      for (const c of clusters) if ((await scheduled(c)).includes('restoreDataSet')) restorers.push(c);
      expect(restorers).toHaveLength(1);
      await save(lab.client, 'cluster-ci-data-set-s3', restorers[0].workflowId, restorers[0].runId);
    } finally {
      await moto.stop();
    }
  });

  it('a ci restore drill', async () => {
    const { handle, result } = await run(WORKFLOW_TYPES.restoreDrill, { preset: 'ci' });
    expect(result.status).toBe('passed');
    await save(lab.client, 'restore-drill-ci', handle.workflowId, handle.firstExecutionRunId);
    expect(lab.leftovers([hostIdFor(handle.workflowId, 'source', 0), hostIdFor(handle.workflowId, 'restore', 0)])).toEqual([]);
  });

  it('a ci restore drill with each backup tool, compared', async () => {
    const { handle, result } = await run(WORKFLOW_TYPES.restoreToolComparison, { preset: 'ci' });
    expect(result.status).toBe('passed');
    await save(lab.client, 'restore-tool-comparison-ci', handle.workflowId, handle.firstExecutionRunId);
  });

  it(`a ci failover drill of ${FAILOVER_ROUNDS} rounds (continues as new once)`, async () => {
    const { handle, result } = await run(WORKFLOW_TYPES.failoverDrill, { preset: 'ci', rounds: FAILOVER_ROUNDS });
    expect(result.status).toBe('passed');
    expect(await saveChain(lab.client, 'failover-drill-ci', handle.workflowId, handle.firstExecutionRunId)).toBe(2);
    const hosts = [hostIdFor(handle.workflowId, 'client', 0), ...[1, 2, 3].map((i) => hostIdFor(handle.workflowId, 'node', i))];
    expect(lab.leftovers(hosts)).toEqual([]);
  });

  it(`a ci partition drill of ${FAILOVER_ROUNDS} rounds (continues as new once)`, async () => {
    const { handle, result } = await run(WORKFLOW_TYPES.partitionDrill, { preset: 'ci', rounds: FAILOVER_ROUNDS });
    expect(result.status).toBe('passed');
    expect(await saveChain(lab.client, 'partition-drill-ci', handle.workflowId, handle.firstExecutionRunId)).toBe(2);
    const hosts = [hostIdFor(handle.workflowId, 'client', 0), ...[1, 2, 3].map((i) => hostIdFor(handle.workflowId, 'node', i))];
    expect(lab.leftovers(hosts)).toEqual([]);
  });

  it(`a ci power-cut drill of ${FAILOVER_ROUNDS} rounds (continues as new once)`, async () => {
    const { handle, result } = await run(WORKFLOW_TYPES.powerCutDrill, { preset: 'ci', rounds: FAILOVER_ROUNDS });
    console.log(`power-cut drill: ${JSON.stringify(result)}`);
    expect(result.status).toBe('passed');
    expect(await saveChain(lab.client, 'power-cut-drill-ci', handle.workflowId, handle.firstExecutionRunId)).toBe(2);
    expect(lab.leftovers([hostIdFor(handle.workflowId, 'client', 0), hostIdFor(handle.workflowId, 'node', 1)])).toEqual([]);
  });

  it('the nightly regression with the ci overrides', async () => {
    // No baseline in this lab: the verdict cannot judge, and the workflow completes with it.
    const { handle } = await run(WORKFLOW_TYPES.nightlyRegression, NIGHTLY_CI);
    await save(lab.client, 'nightly-regression-ci', handle.workflowId, handle.firstExecutionRunId);
    const experiment = `${handle.workflowId}/experiment`;
    expect(lab.leftovers([0, 1].map((i) => hostIdFor(experiment, 'gp3', i)))).toEqual([]);
  });

  describe('diagnose on a local Postgres', () => {
    const PASSWORD = 'record-histories-password';
    const PASSWORD_ENV = 'STORAGE_LAB_DSN_PASSWORD_RECORD';
    let host: BenchHost;
    beforeAll(async () => {
      host = await startBenchHost('record-diagnose', { shared_buffers: '16MB', max_connections: '20' });
      await withConnection(host.deps.config, (c) => c.query(`CREATE ROLE monitor LOGIN PASSWORD '${PASSWORD}' IN ROLE pg_monitor`));
      process.env[PASSWORD_ENV] = PASSWORD; // The control worker runs in this process and reads it (passwordEnv).
    });
    afterAll(async () => {
      delete process.env[PASSWORD_ENV];
      await host?.close();
    });

    it('diagnose for a few seconds, read-only', async () => {
      const cfg = host.deps.config;
      const dsn = `postgresql://monitor@127.0.0.1:${cfg.postgres.port}/${libpqEnv(cfg).PGDATABASE}`;
      const { handle, result } = await run(WORKFLOW_TYPES.diagnose, { dsn, seconds: 3, fsyncProbe: false, passwordEnv: PASSWORD_ENV });
      expect((result as { verdict?: string }).verdict).toEqual(expect.any(String));
      await save(lab.client, 'diagnose', handle.workflowId, handle.firstExecutionRunId);
    });
  });
});

maybe('record the sweeper history', () => {
  // A lab of its own: the sweeper sees exactly the hosts made here.
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('record-sweep');
  });
  afterAll(async () => {
    await lab?.close();
  });

  it('removes the hosts of a terminated and an unknown run, keeps a live run\'s', async () => {
    const client = lab.client;
    const local = localProviderFor(lab.paths);
    const spec = resolveSpec({ preset: 'ci', storageClasses: { gp3: null }, compare: null });
    const idleRun = async () => {
      const runId = uniqueId('record-sweep-run');
      await client.workflow.start('storageLabIdleTestWorkflow', { taskQueue: uniqueId('nobody-polls'), workflowId: runId });
      return runId;
    };
    const live = await idleRun();
    const terminated = await idleRun();
    await client.workflow.getHandle(terminated).terminate('record: a run killed without compensation');
    const unknown = uniqueId('never-started');
    const [liveHost, terminatedHost, unknownHost] = [live, terminated, unknown].map((runId) => hostRequests(spec, runId)[0]);
    for (const req of [liveHost, terminatedHost, unknownHost]) await local.provision(req);

    const handle = await client.workflow.start(WORKFLOW_TYPES.sweeper, { taskQueue: lab.taskQueue, workflowId: uniqueId('sweep'), args: [{ dryRun: false }] });
    const report = (await handle.result()) as SweepReport;
    expect(report.failed).toEqual([]);
    expect(report.removed.map((h) => h.hostId).sort()).toEqual([terminatedHost.hostId, unknownHost.hostId].sort());
    expect(report.kept.map((h) => h.hostId)).toEqual([liveHost.hostId]);
    await save(client, 'sweeper', handle.workflowId, handle.firstExecutionRunId);

    await client.workflow.getHandle(live).terminate('record done');
    await local.teardown(liveHost.hostId);
    expect(lab.leftovers([liveHost, terminatedHost, unknownHost].map((r) => r.hostId))).toEqual([]);
  });
});
