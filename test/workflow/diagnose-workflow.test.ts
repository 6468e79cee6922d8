/**
 * diagnoseWorkflow on the real dev server with a mocked activity: one object argument, a DSN with a password is
 * refused before any activity runs and nothing the workflow writes repeats it, a good input reaches the activity and its
 * verdict becomes the run's status; a transient failure is retried, bad input is not.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { ControlActivities } from '../../activities/control';
import type { DiagnoseInput, DiagnoseSummary } from '../../common/diagnose';
import { SEARCH_ATTRIBUTES, WORKFLOW_TYPES } from '../../common/names';
import { connect, uniqueId, workflowBundle } from '../helpers/temporal';

const SECRET = 'pw-that-must-never-be-stored';

/** Every string in a history, payloads decoded: what anyone reading it could see. */
function historyText(history: unknown): string {
  const parts: string[] = [];
  const walk = (v: unknown): void => {
    if (v instanceof Uint8Array) parts.push(Buffer.from(v).toString('utf8'));
    else if (typeof v === 'string') parts.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(history);
  return parts.join('\n');
}

describe('diagnoseWorkflow with a mocked activity', () => {
  let connection: NativeConnection;
  let client: Client;

  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  async function run(input: unknown, activity: (args: { runId: string; input: DiagnoseInput }) => Promise<DiagnoseSummary>) {
    const taskQueue = uniqueId('diagnose-test');
    const workflowId = uniqueId('diagnose');
    const calls: { runId: string; input: DiagnoseInput }[] = [];
    const activities: Partial<ControlActivities> = {
      async diagnoseDatabase(args) {
        calls.push(args);
        return activity(args);
      },
    };
    const worker = await Worker.create({ connection, taskQueue, workflowBundle: workflowBundle(), activities });
    const running = worker.run();
    try {
      const handle = await client.workflow.start(WORKFLOW_TYPES.diagnose, { taskQueue, workflowId, args: [input] });
      const outcome = await handle.result().then(
        (summary: DiagnoseSummary) => ({ summary, error: null }),
        (error: unknown) => ({ summary: null, error }),
      );
      const history = historyText(await handle.fetchHistory());
      const status = (await handle.describe()).searchAttributes[SEARCH_ATTRIBUTES.status.name];
      return { ...outcome, calls, history, status };
    } finally {
      worker.shutdown();
      await running;
    }
  }

  const summary = (runId: string): DiagnoseSummary => ({
    runId,
    target: 'monitor@db.example:5432/app',
    location: `/results/${runId}`,
    verdict: 'storage-bound',
    reason: 'storage waits took 62 % of in-transaction time, the largest share',
    verdictLine: 'verdict: storage-bound (...)',
    tps: 1234,
  });

  it('refuses a DSN with a password before any activity runs; nothing the workflow writes repeats it', async () => {
    const r = await run({ dsn: `postgresql://monitor:${SECRET}@db.example:5432/app`, seconds: 5 }, async ({ runId }) => summary(runId));
    expect(r.calls).toEqual([]);
    expect(r.error).toBeInstanceOf(WorkflowFailedError);
    const cause = (r.error as WorkflowFailedError).cause as Error & { type?: string; nonRetryable?: boolean };
    expect(cause.message).toMatch(/dsn: holds a password/);
    expect(cause.message).not.toContain(SECRET);
    expect(cause.nonRetryable).toBe(true);
    expect(r.status).toEqual(['invalid']);
    // The input itself is in the history as given (Temporal keeps it), once; nothing the workflow wrote repeats it.
    expect(r.history.split(SECRET).length - 1).toBe(1);
    expect(r.history).toContain('holds a password');
  });

  it('passes a good input to the activity with its defaults, and the verdict becomes the status', async () => {
    const r = await run({ dsn: 'postgresql://monitor@db.example:5432/app', passwordEnv: 'REPLICA_PASSWORD' }, async ({ runId }) => summary(runId));
    expect(r.error).toBeNull();
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0].input).toEqual({ dsn: 'postgresql://monitor@db.example:5432/app', seconds: 60, intervalMs: 50, fsyncProbe: true, passwordEnv: 'REPLICA_PASSWORD' });
    expect(r.summary?.verdict).toBe('storage-bound');
    expect(r.status).toEqual(['storage-bound']);
  });

  it('retries a server that was down, but not bad input', async () => {
    let attempts = 0;
    const flaky = await run({ dsn: 'postgresql://monitor@db.example/app', seconds: 1 }, async ({ runId }) => {
      if (++attempts === 1) throw new Error('cannot connect to postgresql://monitor@db.example/app: connect ECONNREFUSED');
      return summary(runId);
    });
    expect(flaky.error).toBeNull();
    expect(flaky.calls).toHaveLength(2);
    const bad = await run({ dsn: 'postgresql://monitor@db.example/app', seconds: 0 }, async ({ runId }) => summary(runId));
    expect(bad.calls).toEqual([]);
    expect(((bad.error as WorkflowFailedError).cause as Error).message).toMatch(/seconds: must be at least 1/);
  });
});
