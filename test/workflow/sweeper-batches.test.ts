/**
 * The sweeper on a large leak (mocked activities, real dev server): it removes at most REMOVALS_PER_EXECUTION hosts
 * per execution and continues as new with what it did, so its history stays bounded; a host that cannot be removed
 * is reported once, not retried for ever within the sweep.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { ControlActivities } from '../../activities/control';
import { WORKFLOW_TYPES } from '../../common/core/names';
import type { SweepCandidate } from '../../common/core/sweep';
import type { SweepReport } from '../../common/core/sweep';
import { REMOVALS_PER_EXECUTION } from '../../workflows/sweeper-workflow';
import { connect, uniqueId, workflowBundle } from '../helpers/temporal';

describe('sweeperWorkflow in batches (mocked activities)', () => {
  let connection: NativeConnection;
  let client: Client;
  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  it('removes 250 leaked hosts in 3 executions and reports the one it could not remove once', async () => {
    const leaked = new Map<string, SweepCandidate>(
      Array.from({ length: 250 }, (_, i) => [`h${i}`, { hostId: `h${i}`, runId: 'gone', expiresAt: null, provider: 'local', kind: 'host', resources: [] } as unknown as SweepCandidate]),
    );
    let attemptsOnStuck = 0;
    const sweptSets: unknown[] = [];
    const control: Partial<ControlActivities> = {
      async listManagedHosts() {
        return [...leaked.values()] as never;
      },
      async describeRuns() {
        return { gone: 'closed' };
      },
      async removeExpiredDataSets(input) {
        sweptSets.push(input);
        return [];
      },
      async teardownHost({ hostId }) {
        if (hostId === 'h7') {
          attemptsOnStuck++;
          throw ApplicationFailure.nonRetryable('volume still attached');
        }
        leaked.delete(hostId);
      },
    };
    const taskQueue = uniqueId('sweep-batches');
    const worker = await Worker.create({ connection, taskQueue, workflowBundle: workflowBundle(), activities: control });
    const handle = await client.workflow.start(WORKFLOW_TYPES.sweeper, { taskQueue, workflowId: uniqueId('sweep'), args: [{}] });
    const report = (await worker.runUntil(handle.result())) as SweepReport;
    let executions = 0;
    for (let runId: string | null | undefined = handle.firstExecutionRunId; runId; executions++) {
      const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
      const events = history.events ?? [];
      runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    }
    expect(executions).toBe(Math.ceil(249 / REMOVALS_PER_EXECUTION));
    expect(report.removed).toHaveLength(249);
    expect(report.failed.map((f) => f.hostId)).toEqual(['h7']);
    expect([...leaked.keys()]).toEqual(['h7']);
    // Tried once, in one execution: the next executions left it out.
    expect(attemptsOnStuck).toBe(1);
    // Expired data sets once, at the end: the default folder store's and every S3 store a set was claimed in.
    expect(sweptSets).toEqual([{ store: { kind: 'folder' }, recordedS3Stores: true }]);
  });
});
