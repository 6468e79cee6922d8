/**
 * Malformed input through the workflows (experiment, nightly regression, restore and failover drills) on the real
 * server with the real control worker: every spec below is rejected before anything is provisioned (no
 * provisionHost scheduled, no child workflow, no host folder), with a non-retryable failure naming the field.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { WORKFLOW_TYPES } from '../../common/names';
import { startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';

interface Case {
  name: string;
  input: unknown;
  /** The dotted path the failure must name, as "<path>:". */
  field: string;
  type?: 'InvalidSpecError' | 'PreflightError';
  workflow?: string;
}

const ci = (over: Record<string, unknown>) => ({ preset: 'ci', ...over });

const CASES: Case[] = [
  { name: 'unknown preset', input: { preset: 'huge' }, field: 'preset' },
  { name: 'not an object (a bare string in the UI form)', input: 'ci', field: '(spec)' },
  { name: 'unknown top-level field', input: ci({ clients: 8 }), field: 'clients' },
  { name: 'zero clients', input: ci({ workload: { clients: 0 } }), field: 'workload.clients' },
  { name: 'more threads than clients', input: ci({ workload: { threads: 16 } }), field: 'workload.threads' },
  { name: 'duration as text', input: ci({ workload: { durationSeconds: 'ten' } }), field: 'workload.durationSeconds' },
  { name: 'empty pgbench script', input: ci({ workload: { script: '' } }), field: 'workload.script' },
  { name: 'scale 0', input: ci({ data: { scale: 0 } }), field: 'data.scale' },
  { name: 'tiny load chunks', input: ci({ data: { chunkRows: 10 } }), field: 'data.chunkRows' },
  { name: 'EBS class on the local provider', input: ci({ storageClasses: { gp3: { kind: 'ebs' } } }), field: 'storageClasses.gp3.kind' },
  { name: 'IOPS on a local disk', input: ci({ storageClasses: { 'local-disk': { iops: 3000 } } }), field: 'storageClasses.local-disk.iops' },
  { name: 'IOPS below gp3 range', input: ci({ storageClasses: { gp3: { iops: 50 } } }), field: 'storageClasses.gp3.iops' },
  { name: 'storage class name with capitals', input: ci({ storageClasses: { Fast_Disk: { kind: 'local-disk' } } }), field: 'storageClasses.Fast_Disk' },
  { name: 'compare names a missing class', input: ci({ compare: { baseline: 'nvme', candidate: 'gp3' } }), field: 'compare.baseline' },
  { name: 'memory limit below the minimum', input: ci({ host: { memoryLimitMiB: 32 } }), field: 'host.memoryLimitMiB' },
  { name: 'shared_buffers above the memory limit', input: ci({ postgres: { sharedBuffersMiB: 1024 } }), field: 'host.memoryLimitMiB' },
  { name: 'settings key with a space', input: ci({ postgres: { settings: { 'work mem': '4MB' } } }), field: 'postgres.settings.work mem' },
  { name: 'sampler too fast', input: ci({ sampler: { intervalMs: 1 } }), field: 'sampler.intervalMs' },
  { name: 'too many clusters per class', input: ci({ clustersPerClass: 100 }), field: 'clustersPerClass' },
  { name: 'negative expiry', input: ci({ expiresAfterHours: -1 }), field: 'expiresAfterHours' },
  { name: 'aws provider without an aws section', input: ci({ provider: 'aws', storageClasses: { 'local-disk': null, gp3: { kind: 'ebs' } } }), field: 'aws' },
  {
    name: 'PostgreSQL version not installed here',
    input: ci({ postgres: { version: 13 } }),
    field: 'postgres.version',
    type: 'PreflightError',
  },
  {
    name: 'memory limit beyond this machine',
    input: ci({ host: { memoryLimitMiB: 900_000 } }),
    field: 'host.memoryLimitMiB',
    type: 'PreflightError',
  },
  {
    name: 'nightly: bad regression option',
    input: { preset: 'ci', regression: { minEffect: 3 } },
    field: 'regression.minEffect',
    workflow: WORKFLOW_TYPES.nightlyRegression,
  },
  {
    name: 'restore drill: unknown recovery target',
    input: { preset: 'ci', target: 'yesterday' },
    field: 'target',
    workflow: WORKFLOW_TYPES.restoreDrill,
  },
  {
    name: 'restore drill: no table to checksum',
    input: { preset: 'ci', checksumTables: [] },
    field: 'checksumTables',
    workflow: WORKFLOW_TYPES.restoreDrill,
  },
  {
    name: 'failover drill: zero rounds',
    input: { preset: 'ci', rounds: 0 },
    field: 'rounds',
    workflow: WORKFLOW_TYPES.failoverDrill,
  },
  {
    name: 'nightly: bad spec field',
    input: { preset: 'ci', data: { scale: -5 } },
    field: 'data.scale',
    workflow: WORKFLOW_TYPES.nightlyRegression,
  },
];

/** What the run did on the server: activity types it scheduled and children it started. */
async function sideEffects(client: Client, workflowId: string): Promise<{ activities: string[]; children: number }> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const { EventType } = temporal.api.enums.v1;
  const events = history.events ?? [];
  return {
    activities: events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    children: events.filter((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED).length,
  };
}

describe('malformed specs (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('malformed');
  });
  afterAll(async () => {
    await lab?.close();
  });

  it(`rejects ${CASES.length} malformed specs before provisioning anything, naming the field`, async () => {
    const runs = await Promise.all(
      CASES.map(async (c) => {
        const workflowId = uniqueId('bad');
        const handle = await lab.client.workflow.start(c.workflow ?? WORKFLOW_TYPES.experiment, {
          taskQueue: lab.taskQueue,
          workflowId,
          args: [c.input],
        });
        const failure = await handle.result().then(
          () => null,
          (e: unknown) => e,
        );
        return { c, workflowId, failure };
      }),
    );
    const problems: string[] = [];
    for (const { c, workflowId, failure } of runs) {
      if (!(failure instanceof WorkflowFailedError)) {
        problems.push(`${c.name}: not rejected`);
        continue;
      }
      const cause = failure.cause as { type?: string; nonRetryable?: boolean; message: string };
      const type = c.type ?? 'InvalidSpecError';
      if (cause.type !== type) problems.push(`${c.name}: failure type ${cause.type}, expected ${type}`);
      if (!cause.nonRetryable) problems.push(`${c.name}: retryable`);
      if (!cause.message.includes(`${c.field}:`)) problems.push(`${c.name}: message does not name ${c.field}: ${cause.message}`);
      const done = await sideEffects(lab.client, workflowId);
      const allowed = type === 'PreflightError' ? ['preflight'] : [];
      const extra = done.activities.filter((a) => !allowed.includes(a));
      if (extra.length || done.children) problems.push(`${c.name}: ran ${extra.join(', ')} and ${done.children} children`);
    }
    expect(problems).toEqual([]);
    expect(CASES.length).toBeGreaterThanOrEqual(15);
    // Nothing was created: no host folder, no mount, no loop device, no cgroup, no process.
    expect(lab.leftovers([])).toEqual([]);
  });
});
