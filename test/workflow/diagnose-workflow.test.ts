/**
 * diagnoseWorkflow on the real dev server with a mocked activity: one object argument, a DSN with a password is
 * refused before any activity runs and nothing the workflow writes repeats it, so are hostile DSNs and a passwordEnv
 * outside STORAGE_LAB_DSN_PASSWORD_*; a good input reaches the activity and its verdict becomes the run's status; a
 * transient failure is retried, bad input is not.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { ControlActivities } from '../../activities/control';
import type { DiagnoseSummary } from '../../common/results/diagnose-capture';
import type { DiagnoseInput } from '../../common/input/diagnose';
import { SEARCH_ATTRIBUTES, WORKFLOW_TYPES } from '../../common/core/names';
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
      const events = await handle.fetchHistory();
      const history = historyText(events);
      const activitiesScheduled = (events.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).length;
      const status = (await handle.describe()).searchAttributes[SEARCH_ATTRIBUTES.status.name];
      return { ...outcome, calls, history, activitiesScheduled, status };
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

  it('refuses hostile inputs non-retryably, naming dsn or passwordEnv, before the activity is scheduled', async () => {
    const hostile: [unknown, RegExp][] = [
      [{ dsn: 'postgresql://monitor@db.example/app?options=-c%20default_transaction_read_only%3Doff' }, /dsn: the query parameter "options" is not allowed/],
      [{ dsn: 'postgresql://monitor@%2Fvar%2Flib%2Fstorage-lab%2Fhosts-x%2Fh1%2Frun/app' }, /dsn: names a Unix-socket directory/],
      [{ dsn: 'postgresql://monitor@db.example/app?sslrootcert=/etc/shadow' }, /dsn: the query parameter "sslrootcert" is not allowed/],
      [{ dsn: `postgresql://monitor@db.example/app?%70assword=${SECRET}` }, /dsn: the query parameter "password" is not allowed/],
      [{ dsn: 'postgresql://monitor@db.example/app', passwordEnv: 'AWS_SECRET_ACCESS_KEY' }, /passwordEnv: must name a variable of the control worker that starts with STORAGE_LAB_DSN_PASSWORD_/],
    ];
    for (const [input, message] of hostile) {
      const r = await run(input, async ({ runId }) => summary(runId));
      expect(r.calls).toEqual([]);
      expect(r.activitiesScheduled).toBe(0);
      const cause = (r.error as WorkflowFailedError).cause as Error & { type?: string; nonRetryable?: boolean };
      expect([cause.message, cause.type, cause.nonRetryable]).toEqual([expect.stringMatching(message), 'InvalidSpecError', true]);
      expect(cause.message).not.toContain(SECRET);
      expect(r.status).toEqual(['invalid']);
    }
  });

  it('passes a good input to the activity with its defaults, and the verdict becomes the status', async () => {
    const r = await run({ dsn: 'postgresql://monitor@db.example:5432/app', passwordEnv: 'STORAGE_LAB_DSN_PASSWORD_REPLICA' }, async ({ runId }) => summary(runId));
    expect(r.error).toBeNull();
    expect([r.calls.length, r.activitiesScheduled]).toEqual([1, 1]);
    expect(r.calls[0].input).toEqual({ dsn: 'postgresql://monitor@db.example:5432/app', seconds: 60, intervalMs: 50, fsyncProbe: true, passwordEnv: 'STORAGE_LAB_DSN_PASSWORD_REPLICA' });
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
