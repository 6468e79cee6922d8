/**
 * The cluster workflow's measured phases on the real dev server with mocked activities: the sampler runs with the
 * TPS run only, the phases follow in the registry's order (the checkpoint, VACUUM, the backlog), a failed phase
 * attempt is recorded and retried, and the result carries the sampler's readings, the breakdown and every phase
 * before teardown. Each cluster runs as the lab runs it,
 * the child of an experiment of one storage class (a cluster started directly is refused at its door).
 */
import { fakeDataSetControl, fakeDataSetHost } from '../../bench/fake-data-sets';
import { ApplicationFailure } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { ControlActivities } from '../../activities/control';
import type { HostActivities } from '../../activities/host';
import type { PgbenchInput } from '../../activities/host/pgbench';
import type { BacklogPhaseResult } from '../../common/phases/backlog';
import { checkpointPhase } from '../../common/phases/checkpoint';
import { PHASES } from '../../common/phases/registry';
import type { VacuumPhaseResult } from '../../common/phases/vacuum';
import type { SamplerReadings } from '../../common/results/sampler-readings';
import { hostIdFor } from '../../common/core/ids';
import { hostTaskQueue, WORKFLOW_TYPES } from '../../common/core/names';
import type { ClusterResult } from '../../common/results/result';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { fakeHostRecord } from '../helpers/fake-host';
import { connect, uniqueId, workflowBundle } from '../helpers/temporal';

/** The experiment's own steps around its one cluster, mocked. */
const experimentSteps: Partial<ControlActivities> = {
  async preflight() {
    return { warnings: [] };
  },
  async saveSpec() {
    return 'mock://spec';
  },
  async writeResults() {
    return { location: 'mock://results', status: 'completed', medianTps: {}, ratios: {}, failedChecks: [] };
  },
};

/** Runs the one local-disk cluster of an experiment; resolves or rejects as the cluster itself did. */
async function executeCluster(client: Client, taskQueue: string, runId: string, input: Record<string, unknown>): Promise<ClusterResult> {
  await client.workflow.execute(WORKFLOW_TYPES.experiment, { taskQueue, workflowId: runId, args: [{ preset: 'ci', storageClasses: { gp3: null }, compare: null, ...input }] });
  return client.workflow.getHandle(clusterWorkflowId(runId, 'local-disk', 0)).result();
}

const diagnostics = { samplesPerSecond: 10, waitEvents: { 'IO:DataFileRead': 3, CPU: 1 } } as unknown as SamplerReadings;

describe('clusterWorkflow measured phases (mocked activities)', () => {
  let connection: NativeConnection;
  let client: Client;
  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  it('runs the sampler with the TPS run, then the checkpoint, VACUUM and backlog, recording a failed attempt', async () => {
    const calls: string[] = [];
    const runId = uniqueId('exp-phases');
    const hostId = hostIdFor(runId, 'local-disk', 0);
    const taskQueue = uniqueId('cluster-phases');
    let saved: ClusterResult | undefined;
    let vacuumAttempts = 0;
    // The owner each host activity named: the agent refuses one that names none (activities/host/deps.ts assertOwner).
    const owners: Record<string, unknown> = {};
    const owned = (activity: string, input: unknown) => (owners[activity] = (input as { owner?: unknown }).owner);
    const control: Partial<ControlActivities> = {
      ...experimentSteps,
      ...fakeDataSetControl(),
      async provisionHost({ request }) {
        return fakeHostRecord(request);
      },
      async saveClusterResult({ result }) {
        calls.push('save');
        saved = result;
      },
      async teardownHost() {
        calls.push('teardown');
      },
      // A failed attempt asks whether the host's memory limit killed something during it: here it did not.
      async inspectHost() {
        calls.push('diagnose');
        return { oomKills: 0, text: 'host h: agent running', lastPollAt: null };
      },
    };
    const host: Partial<HostActivities> = {
      ...fakeDataSetHost(),
      async describeHost() {
        return { hostId, pid: 1, postgresRunning: true };
      },
      async configurePostgres() {
        return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
      },
      async loadData(input) {
        owned('loadData', input);
        return { rows: 200000, chunks: 10, chunksResumed: 0, loadSeconds: 1, indexSeconds: 0, vacuumSeconds: 0, heapBytes: 1, rowsPerSecond: 1 };
      },
      async verifyAccounts() {
        return { rows: 200000, distinctAids: 200000, minAid: 1, maxAid: 200000 };
      },
      async runPgbench(input: PgbenchInput) {
        calls.push(`pgbench ${input.label} sampler=${input.sampler?.intervalMs ?? 'off'}`);
        const run = { tps: 100, transactions: 500, failedTransactions: 0, durationSeconds: 5, clients: 8, threads: 2, latencyMs: { mean: 80, p50: 80, p95: 90, p99: 95 }, tpsSeries: [100], pgbenchVersion: '15.18' };
        return input.sampler ? { ...run, diagnostics } : run;
      },
      async runVacuumPhase(input) {
        owned('runVacuumPhase', input);
        calls.push(`vacuum ${input.bloatMB}`);
        if (++vacuumAttempts === 1) throw ApplicationFailure.retryable('server closed the connection unexpectedly');
        return { vacuumSeconds: 1.5, deadBytes: 8 << 20 } as VacuumPhaseResult;
      },
      async runBacklogPhase(input) {
        owned('runBacklogPhase', input);
        calls.push(`backlog ${input.backlogMB} ${input.clients}`);
        return { drainSeconds: 0.5, reachedBeforeDrain: true } as BacklogPhaseResult;
      },
      async runCheckpointPhase(input) {
        owned('runCheckpointPhase', input);
        calls.push(`checkpoint workload=${input.workload}`);
        return checkpointPhase.selfTest.healthy;
      },
    };
    const workers = [
      await Worker.create({ connection, taskQueue, workflowBundle: workflowBundle(), activities: control }),
      await Worker.create({ connection, taskQueue: hostTaskQueue(hostId), activities: host }),
    ];
    const running = workers.map((w) => w.run());
    try {
      await executeCluster(client, taskQueue, runId, {});
    } finally {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
    }
    expect(calls).toEqual(['pgbench warmup sampler=off', 'pgbench tps sampler=50', 'checkpoint workload=true', 'vacuum 8', 'diagnose', 'vacuum 8', 'backlog 16 8', 'save', 'teardown']);
    expect(saved!.status).toBe('ok');
    expect(saved!.diagnostics).toEqual(diagnostics);
    expect(saved!.tpsRun).not.toHaveProperty('diagnostics');
    expect(saved!.breakdownMs).toEqual({ pageReads: 60, walFsync: 0, lockAndScheduler: 0, cpu: 20, other: 0 });
    expect(saved!.phases.vacuum?.vacuumSeconds).toBe(1.5);
    expect(saved!.phases.backlog?.drainSeconds).toBe(0.5);
    expect(saved!.phases.checkpoint).toEqual(checkpointPhase.selfTest.healthy);
    expect(saved!.failedAttempts).toEqual([expect.objectContaining({ phase: 'vacuum', attempt: 1 })]);
    // Every phase's activity names the cluster's workflow as its owner, as the load's does.
    expect(owners.loadData).toMatchObject({ workflowId: clusterWorkflowId(runId, 'local-disk', 0) });
    expect(owners).toEqual({ loadData: owners.loadData, runCheckpointPhase: owners.loadData, runVacuumPhase: owners.loadData, runBacklogPhase: owners.loadData });
  });

  /** Runs a ci cluster against fake activities; `host` overrides what the host's agent does; `calls` logs the steps. */
  async function runCluster(
    host: Partial<HostActivities>,
    control: Partial<ControlActivities>,
    overrides: Record<string, unknown> = {},
    stopAgentAt?: string,
    calls: string[] = [],
  ): Promise<{ outcome: unknown; saved: ClusterResult | undefined; calls: string[]; clusterId: string }> {
    const runId = uniqueId('exp-faults');
    const hostId = hostIdFor(runId, 'local-disk', 0);
    const taskQueue = uniqueId('cluster-faults');
    let saved: ClusterResult | undefined;
    const agent = await Worker.create({
      connection,
      taskQueue: hostTaskQueue(hostId),
      activities: {
        ...fakeDataSetHost(),
        async describeHost() {
          return { hostId, pid: 1, postgresRunning: true };
        },
        async configurePostgres() {
          return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
        },
        async loadData() {
          calls.push('load');
          if (stopAgentAt === 'load') agent.shutdown(); // The host dies: nobody will take its next task.
          return { rows: 200000, chunks: 10, chunksResumed: 0, loadSeconds: 1, indexSeconds: 0, vacuumSeconds: 0, heapBytes: 1, rowsPerSecond: 1 };
        },
        async verifyAccounts() {
          return { rows: 200000, distinctAids: 200000, minAid: 1, maxAid: 200000 };
        },
        ...host,
      },
    });
    const controlWorker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: workflowBundle(),
      activities: {
        ...experimentSteps,
        ...fakeDataSetControl(),
        async provisionHost({ request }) {
          return fakeHostRecord(request);
        },
        async saveClusterResult({ result }) {
          calls.push('save');
          saved = result;
        },
        async teardownHost() {
          calls.push('teardown');
        },
        ...control,
      } as Partial<ControlActivities>,
    });
    const running = [agent.run(), controlWorker.run()];
    let outcome: unknown;
    try {
      const input = { phases: Object.fromEntries(PHASES.map((p) => [p.name, { enabled: false }])), workload: { warmupSeconds: 0 }, ...overrides };
      outcome = await executeCluster(client, taskQueue, runId, input).catch((err: unknown) => err);
    } finally {
      if (agent.getState() === 'RUNNING') agent.shutdown();
      controlWorker.shutdown();
      await Promise.all(running);
    }
    return { outcome, saved, calls, clusterId: clusterWorkflowId(runId, 'local-disk', 0) };
  }

  it('undoes a durable cluster after saving its result: the host, then the backup store it archived into', async () => {
    const backup = { label: 'base_000000010000000000000003', seconds: 1, databaseBytes: 1, repositoryBytes: 1, walStart: '000000010000000000000003', walStop: '000000010000000000000003' };
    const calls: string[] = [];
    const { outcome, saved, clusterId } = await runCluster(
      {
        async runPgbench() {
          return tpsRun([100]);
        },
        async configureBackups(input) {
          calls.push('configureBackups');
          return { tool: input.tool!, version: '3.0.8', settings: { archive_mode: 'on' } };
        },
        async initBackupRepository() {},
        async takeBackup() {
          calls.push('takeBackup');
          return backup as Awaited<ReturnType<HostActivities['takeBackup']>>;
        },
      },
      {
        async prepareBackupStore() {
          calls.push('prepareBackupStore');
          return { kind: 'folder', path: '/tmp/backups/cluster' };
        },
        async removeBackupStore({ runId }) {
          calls.push(`removeBackupStore ${runId}`);
          return 'removed';
        },
      },
      { durability: { enabled: true } },
      undefined,
      calls,
    );
    expect(outcome).toMatchObject({ status: 'ok' });
    expect(saved!.phases.durability).toMatchObject({ backup: { label: backup.label } });
    expect(calls).toEqual(['load', 'prepareBackupStore', 'configureBackups', 'takeBackup', 'save', 'teardown', `removeBackupStore ${clusterId}`]);
    // The same order as before the undo stack: a cluster's history takes no undo patch, only data sets' (issue 31).
    const history = await client.workflow.getHandle(clusterId).fetchHistory();
    const markers = history.events!.filter((e) => e.markerRecordedEventAttributes);
    expect(markers).toHaveLength(1);
    const payload = markers[0].markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!;
    expect(JSON.parse(Buffer.from(payload).toString('utf8'))).toMatchObject({ id: 'data-sets' });
  });

  const tpsRun = (tpsSeries: number[]) => ({
    tps: 100, transactions: 500, failedTransactions: 0, durationSeconds: tpsSeries.length, clients: 8, threads: 2,
    latencyMs: { mean: 80, p50: 80, p95: 90, p99: 95 }, tpsSeries, pgbenchVersion: '15.18',
  });

  it('fails a cluster whose host stops answering within host.deadAfterSeconds, naming the host and its last poll, and tears it down', async () => {
    const started = Date.now();
    const { outcome, saved, calls } = await runCluster(
      {},
      {
        async inspectHost({ hostId }) {
          return { oomKills: 0, text: `host ${hostId}: supervisor not running, agent not running, postgres running (pid 4242)`, lastPollAt: '2026-12-01T00:00:00.000Z' };
        },
      },
      { host: { deadAfterSeconds: 10 } },
      'load',
    );
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const cause = (outcome as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('HostGoneError');
    expect(cause.message).toMatch(/^host \S+ stopped answering: no agent took its next task within 10 s \(host.deadAfterSeconds\); last heard from 2026-12-01T00:00:00.000Z/);
    expect(cause.message).toContain('agent not running');
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(saved!.status).toBe('failed');
    expect(saved!.error).toMatch(/stopped answering/);
    expect(calls).toEqual(['load', 'save', 'teardown']);
  });

  it('makes an attempt killed for memory final, named as OOM, after one attempt', async () => {
    let attempts = 0;
    const { outcome, saved } = await runCluster(
      {
        async runPgbench() {
          attempts++;
          throw ApplicationFailure.retryable('pgbench: error: client 3 aborted: server closed the connection unexpectedly');
        },
      },
      {
        async inspectHost({ hostId }) {
          return { oomKills: 2, text: `host ${hostId}: memory cgroup: limit 384 MiB, peak 384 MiB, 2 processes killed for memory (OOM)`, lastPollAt: null };
        },
      },
    );
    expect(attempts).toBe(1);
    const cause = (outcome as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('HostOutOfMemoryError');
    expect(cause.message).toMatch(/^OOM: the memory limit of host \S+ \(host.memoryLimitMiB = 384\) killed 2 processes during tps attempt 1; lower workload.clients/);
    expect(saved!.status).toBe('failed');
  });

  it('records a stalled TPS run (no transaction for 5 s) as a failed attempt and keeps the next one', async () => {
    const series = [[500, 480, 0, 0, 0, 0, 0, 0, 490, 500], [500, 490, 505, 495, 500, 498, 502, 499, 501, 500]];
    const { outcome, saved } = await runCluster(
      {
        async runPgbench(input) {
          return tpsRun(input.label === 'tps' ? series.shift()! : [100]);
        },
      },
      {},
    );
    expect(outcome).toMatchObject({ status: 'ok' });
    expect(saved!.failedAttempts).toEqual([
      expect.objectContaining({ phase: 'tps', attempt: 1, error: 'stalled: no transaction completed in seconds 3-8 (6 s); measured again' }),
    ]);
    expect(saved!.tpsSeries).toEqual([500, 490, 505, 495, 500, 498, 502, 499, 501, 500]);
  });
});
