/**
 * The cluster workflow's measured phases on the real dev server with mocked activities: the sampler runs with the
 * TPS run only, VACUUM and backlog follow in that order, a failed phase attempt is recorded and retried, and the
 * result carries diagnostics, the breakdown and both phases before teardown.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { ControlActivities } from '../../activities/control';
import type { HostActivities } from '../../activities/host';
import type { PgbenchInput } from '../../activities/host/pgbench';
import type { BacklogPhaseResult, Diagnostics, VacuumPhaseResult } from '../../common/diagnostics';
import { hostTaskQueue, WORKFLOW_TYPES } from '../../common/names';
import type { ClusterResult } from '../../common/result';
import { resolveSpec } from '../../common/spec';
import { fakeHostRecord } from '../helpers/fake-host';
import { connect, uniqueId, workflowBundle } from '../helpers/temporal';

const diagnostics = { samplesPerSecond: 10, waitEvents: { 'IO:DataFileRead': 3, CPU: 1 } } as unknown as Diagnostics;

describe('clusterWorkflow measured phases (mocked activities)', () => {
  let connection: NativeConnection;
  let client: Client;
  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  it('runs the sampler with the TPS run, then VACUUM and backlog, recording a failed attempt', async () => {
    const calls: string[] = [];
    const hostId = uniqueId('h');
    const taskQueue = uniqueId('cluster-phases');
    let saved: ClusterResult | undefined;
    let vacuumAttempts = 0;
    const control: Partial<ControlActivities> = {
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
    };
    const host: Partial<HostActivities> = {
      async describeHost() {
        return { hostId, pid: 1, postgresRunning: true };
      },
      async configurePostgres() {
        return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
      },
      async loadData() {
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
        calls.push(`vacuum ${input.bloatMB}`);
        if (++vacuumAttempts === 1) throw ApplicationFailure.retryable('server closed the connection unexpectedly');
        return { vacuumSeconds: 1.5, deadBytes: 8 << 20 } as VacuumPhaseResult;
      },
      async runBacklogPhase(input) {
        calls.push(`backlog ${input.backlogMB} ${input.clients}`);
        return { drainSeconds: 0.5, reachedBeforeDrain: true } as BacklogPhaseResult;
      },
    };
    const workers = [
      await Worker.create({ connection, taskQueue, workflowBundle: workflowBundle(), activities: control }),
      await Worker.create({ connection, taskQueue: hostTaskQueue(hostId), activities: host }),
    ];
    const running = workers.map((w) => w.run());
    try {
      const spec = resolveSpec({ preset: 'ci' });
      await client.workflow.execute(WORKFLOW_TYPES.cluster, {
        taskQueue,
        workflowId: uniqueId('cluster'),
        args: [{ runId: 'r', spec, className: 'local-disk', index: 0, hostId }],
      });
    } finally {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
    }
    expect(calls).toEqual(['pgbench warmup sampler=off', 'pgbench tps sampler=50', 'vacuum 8', 'vacuum 8', 'backlog 16 8', 'save', 'teardown']);
    expect(saved!.status).toBe('ok');
    expect(saved!.diagnostics).toEqual(diagnostics);
    expect(saved!.tpsRun).not.toHaveProperty('diagnostics');
    expect(saved!.breakdownMs).toEqual({ pageReads: 60, walFsync: 0, lockAndScheduler: 0, cpu: 20, other: 0 });
    expect(saved!.phases.vacuum?.vacuumSeconds).toBe(1.5);
    expect(saved!.phases.backlog?.drainSeconds).toBe(0.5);
    expect(saved!.failedAttempts).toEqual([expect.objectContaining({ phase: 'vacuum', attempt: 1 })]);
  });
});
