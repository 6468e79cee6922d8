/**
 * The workflows' doors as pure checks (workflows/doors.ts and each workflow's own): a run's workflow id, a cluster
 * started by anyone but its experiment, arguments only continue-as-new may pass, and a spec below the experiment that
 * does not parse again unchanged. Each is fed data made to break it; the recorded runs' real inputs must pass.
 */
import { ApplicationFailure } from '@temporalio/common';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hostIdFor } from '../../common/core/ids';
import { resolveFailoverDrill, resolvePartitionDrill, type ReplicaDrillSpec } from '../../common/input/drill-spec';
import { resolveSpec, revalidateSpec } from '../../common/input/resolve';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { clusterInputAtDoor, clusterWorkflowId } from '../../workflows/cluster-door';
import { checkedWorkflowId, continuationProblem, type DoorInfo } from '../../workflows/doors';
import { failoverContinuationSchema, isToolArchiveCommand } from '../../workflows/failover-continuation';
import { carriedAtDoor } from '../../workflows/sweeper-workflow';

const info = (over: Partial<DoorInfo> = {}): DoorInfo => ({ workflowId: 'run-1', workflowType: 'experimentWorkflow', attempt: 1, ...over });

/** The failure a door throws: InvalidSpecError, non-retryable; its message. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).type).toBe('InvalidSpecError');
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    return (err as ApplicationFailure).message;
  }
  throw new Error('not refused');
}

/** A recorded run's arguments (test/fixtures/histories). */
function recordedArgs(name: string): { workflowId: string; args: unknown[] } {
  const history = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test/fixtures/histories', `${name}.json`), 'utf8'));
  const started = history.events[0].workflowExecutionStartedEventAttributes;
  return { workflowId: started.workflowId, args: started.input.payloads.map((p: { data: string }) => JSON.parse(Buffer.from(p.data, 'base64').toString())) };
}

describe('a run\'s own workflow id', () => {
  it.each(['.', '..', 'a/../..', '../x', '-rf', 'a\u0000b'])('refuses %j, naming workflowId', (workflowId) => {
    expect(refusal(() => checkedWorkflowId(info({ workflowId })))).toMatch(/workflowId: /);
  });

  it('leaves room for children in a run without a parent only', () => {
    const long = 'r'.repeat(180);
    expect(refusal(() => checkedWorkflowId(info({ workflowId: long })))).toMatch(/workflowId: is 180 characters long; use at most 160/);
    expect(checkedWorkflowId(info({ workflowId: long, parent: { workflowId: 'p', runId: 'x', namespace: 'default' } }))).toBe(long);
  });
});

describe('arguments only continue-as-new passes', () => {
  it('are refused in a new run, a retried run and a cron run', () => {
    expect(continuationProblem(info(), 'continued')?.message).toMatch(/a new run was started with it; start the run with its input only/);
    expect(continuationProblem(info({ continuedFromExecutionRunId: 'r0', attempt: 2 }), 'continued')?.message).toMatch(/attempt 2 of a run retried/);
    expect(continuationProblem(info({ continuedFromExecutionRunId: 'r0', cronSchedule: '* * * * *' }), 'continued')?.message).toMatch(/a cron run/);
    expect(continuationProblem(info({ continuedFromExecutionRunId: 'r0' }), 'continued')).toBeNull();
  });

  it("let the sweeper's carried report through only when the lab continued the run, and never from the future", () => {
    const carried = { dryRun: false, checkedAt: '2026-12-01T00:00:00.000Z', removed: [], kept: [], failed: [] };
    const now = Date.parse('2026-12-01T01:00:00.000Z');
    const continued = info({ workflowType: 'sweeperWorkflow', continuedFromExecutionRunId: 'r0' });
    expect(refusal(() => carriedAtDoor(carried, info({ workflowType: 'sweeperWorkflow' }), now))).toMatch(/carried: a new run was started with it/);
    expect(carriedAtDoor(carried, continued, now)).toEqual(carried);
    expect(refusal(() => carriedAtDoor({ ...carried, checkedAt: '2030-01-01T00:00:00.000Z' }, continued, now))).toMatch(/carried.checkedAt: 2030-01-01T00:00:00.000Z is in the future/);
    expect(refusal(() => carriedAtDoor({ ...carried, dryRun: true }, continued, now))).toMatch(/carried.dryRun: /);
    expect(refusal(() => carriedAtDoor({ ...carried, removeAlso: ['/etc'] }, continued, now))).toMatch(/carried.removeAlso: unknown field/);
    expect(carriedAtDoor(undefined, info(), now)).toBeUndefined();
  });
});

describe('the failover drill\'s continuation', () => {
  // The continuation of a run recorded before `tool` and `peers` replaced the settings and pg_hba lines it carried.
  const recorded = recordedArgs('failover-drill-ci-before-saves-spec-2');
  const runId = recorded.workflowId;
  const spec = resolveFailoverDrill(recorded.args[0]);
  const continuation = recorded.args[1] as Record<string, unknown> & { records: Record<string, { postgres: { host: string } }>; archiving: { settings: Record<string, Record<string, string>>; store: { path: string } } };
  const parse = (c: unknown, s: ReplicaDrillSpec = spec) => failoverContinuationSchema(runId, s).safeParse(c);
  const problems = (c: unknown, s: ReplicaDrillSpec = spec) => {
    const r = parse(c, s);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  const forged = (change: (c: typeof continuation) => void) => {
    const c = structuredClone(continuation);
    change(c);
    return c;
  };

  it('accepts what the recorded run carried across its continue-as-new', () => {
    expect(problems(continuation)).toEqual([]);
  });

  it('accepts the hosts as the provider records them now, with their IOPS budget, and only a budget it makes', () => {
    const withBudget = forged((c) => Object.values(c.records).forEach((r) => ((r as unknown as { limits: Record<string, unknown> }).limits.iopsBudget = 'shared')));
    expect(problems(withBudget)).toEqual([]);
    expect(problems(forged((c) => ((c.records.n1 as unknown as { limits: Record<string, unknown> }).limits.iopsBudget = null)))).toEqual([]);
    expect(problems(forged((c) => ((c.records.n1 as unknown as { limits: Record<string, unknown> }).limits.iopsBudget = 'unlimited')))).toEqual([expect.stringMatching(/^records.n1.limits.iopsBudget: /)]);
  });

  it('is the partition drill\'s door too, held to the partition spec', () => {
    const partition = resolvePartitionDrill({ preset: 'ci', rounds: 11 });
    expect(problems(continuation, partition)).toEqual([]);
    expect(problems(continuation, { ...partition, rounds: 10 })).toEqual([expect.stringMatching(/^nextRound: beyond the drill's 10 rounds/)]);
    expect(problems(continuation, { ...partition, backup: { ...partition.backup, enabled: false } })).toEqual([expect.stringMatching(/^archiving: must be null/)]);
  });

  it("accepts what today's run carries: the tool, its peers, hosts' records with their IOPS budget", () => {
    const today = recordedArgs('failover-drill-ci-2');
    expect(failoverContinuationSchema(today.workflowId, resolveFailoverDrill(today.args[0])).safeParse(today.args[1]).error?.issues ?? []).toEqual([]);
    expect(JSON.stringify(today.args[1])).toContain('"iopsBudget":null');
  });

  it('refuses a program in archive_command, pg_hba lines for the world, a host off loopback, a store elsewhere', () => {
    expect(problems(forged((c) => (c.archiving.settings.n1.archive_command = 'touch /tmp/x')))).toEqual([expect.stringMatching(/^archiving.settings.n1.archive_command: must be the backup tool's own archive command/)]);
    expect(problems(forged((c) => (c.archiving.settings.n2.archive_command = c.archiving.settings.n2.archive_command.replace('wal-push', 'wal-push %p; touch /tmp/x;'))))).toHaveLength(1);
    expect(problems(forged((c) => (c.archiving.settings.n3.restore_command = 'touch /tmp/x')))).toEqual([expect.stringMatching(/^archiving.settings.n3: Unrecognized key: "restore_command"/)]);
    expect(problems(forged((c) => (c.hbaLines = ['host all all 0.0.0.0/0 trust'])))).toEqual(expect.arrayContaining([expect.stringMatching(/^hbaLines: must be the lines the drill writes/)]));
    expect(problems(forged((c) => (c.records.n1.postgres.host = '10.0.0.9')))).toEqual([expect.stringMatching(/^records: local hosts listen on 127.0.0.1 only/)]);
    expect(problems(forged((c) => (c.records.n1.postgres.host = "evil.example")))).toEqual(expect.arrayContaining([expect.stringMatching(/^records.n1.postgres.host: must be an IPv4 address/)]));
    expect(problems(forged((c) => (c.archiving.store.path = '/etc')))).toEqual([expect.stringMatching(/^archiving.store.path: must be an absolute path of plain folder names ending with/)]);
    expect(problems(forged((c) => (c.archiving.store.path = `/tmp/../etc/${runId}`)))).toHaveLength(1);
    expect(problems(forged((c) => ((c.records.n2 as Record<string, unknown>).hostId = 'other-node-2')))).toEqual([expect.stringMatching(/^records.n2.hostId: /)]);
    expect(problems(forged((c) => (c.nextRound = 5)))).toEqual(expect.arrayContaining([expect.stringMatching(/^nextRound: /)]));
    expect(problems(continuation, { ...spec, backup: { ...spec.backup, enabled: false } })).toEqual([expect.stringMatching(/^archiving: must be null: backup.enabled is false/)]);
  });

  it('knows the tools\' own archive commands, for that host only', () => {
    expect(isToolArchiveCommand('/x/.cache/bin/wal-g --config /lab/hosts/h-node-1/wal-g/walg.json wal-push %p', 'h-node-1')).toBe(true);
    expect(isToolArchiveCommand('pgbackrest --config=/lab/hosts/h-node-1/pgbackrest/pgbackrest.conf --stanza=storage-lab archive-push %p', 'h-node-1')).toBe(true);
    expect(isToolArchiveCommand('/x/.cache/bin/wal-g --config /lab/hosts/h-node-2/wal-g/walg.json wal-push %p', 'h-node-1')).toBe(false);
    expect(isToolArchiveCommand('/x/wal-g --config /lab/hosts/h-node-1/../../etc/h-node-1/wal-g/walg.json wal-push %p', 'h-node-1')).toBe(false);
    expect(isToolArchiveCommand("/x/wal-g --config '/lab/hosts/h-node-1/wal-g/walg.json' wal-push %p", 'h-node-1')).toBe(false);
    expect(isToolArchiveCommand('sh -c id', 'h-node-1')).toBe(false);
  });
});

describe('the cluster workflow\'s door', () => {
  const runId = 'exp-1';
  const spec = resolveSpec({ preset: 'ci' });
  const parent = { workflowId: runId, runId: 'r', namespace: 'default' };
  const good = { runId, spec, className: 'gp3', index: 0, hostId: hostIdFor(runId, 'gp3', 0) };
  const clusterInfo = (over: Partial<DoorInfo> = {}) => info({ workflowType: 'clusterWorkflow', workflowId: clusterWorkflowId(runId, 'gp3', 0), parent, ...over });

  it("accepts the recorded cluster's input under its recorded parent", () => {
    const recorded = recordedArgs('cluster-ci');
    const input = recorded.args[0] as { runId: string };
    const accepted = clusterInputAtDoor(input, clusterInfo({ workflowId: recorded.workflowId, parent: { ...parent, workflowId: input.runId } }));
    expect(accepted).toEqual(input);
    expect(clusterInputAtDoor(good, clusterInfo())).toEqual(good);
  });

  it('refuses a cluster without a parent, started by a client', () => {
    expect(refusal(() => clusterInputAtDoor(good, clusterInfo({ parent: undefined })))).toMatch(/parent: clusterWorkflow runs only as a child of experimentWorkflow/);
  });

  it('refuses a run id, workflow id, host id, class or index that is not the parent\'s own', () => {
    expect(refusal(() => clusterInputAtDoor({ ...good, runId: 'other' }, clusterInfo()))).toMatch(/runId: "other" is not the run that started this cluster/);
    expect(refusal(() => clusterInputAtDoor(good, clusterInfo({ workflowId: `${runId}/gp3-1` })))).toMatch(/workflowId: "exp-1\/gp3-1" is not this cluster's/);
    expect(refusal(() => clusterInputAtDoor({ ...good, hostId: '../victim' }, clusterInfo()))).toMatch(/hostId: "\.\.\/victim" is not this cluster's host/);
    expect(refusal(() => clusterInputAtDoor({ ...good, className: 'nvme', hostId: hostIdFor(runId, 'nvme', 0) }, clusterInfo({ workflowId: `${runId}/nvme-0` })))).toMatch(/className: "nvme" is not a storage class of the spec/);
    expect(refusal(() => clusterInputAtDoor({ ...good, index: 3, hostId: hostIdFor(runId, 'gp3', 3) }, clusterInfo({ workflowId: `${runId}/gp3-3` })))).toMatch(/index: 3 is beyond the spec's 1 clusters per class/);
    expect(refusal(() => clusterInputAtDoor({ ...good, extra: 1 }, clusterInfo()))).toMatch(/extra: unknown field/);
  });

  it('refuses a resolved spec with a program-running setting or script added, naming the spec field', () => {
    const hostile = structuredClone(good);
    hostile.spec.postgres.settings = { archive_command: 'touch /tmp/x' };
    hostile.spec.workload.script = '\\shell touch /tmp/y\nSELECT 1;';
    const message = refusal(() => clusterInputAtDoor(hostile, clusterInfo()));
    expect(message).toMatch(/spec.postgres.settings.archive_command: /);
    expect(message).toMatch(/spec.workload.script: .*\\shell is refused/);
  });

  it('refuses a spec that parses only into something else (a default filled in, a field dropped)', () => {
    const partial = structuredClone(spec) as Record<string, unknown> & { durability: Record<string, unknown> };
    delete partial.durability.compression;
    expect(() => revalidateSpec(partial)).toThrow(/is not a resolved spec \(parsing it again changes it\)/);
    expect(refusal(() => clusterInputAtDoor({ ...good, spec: partial }, clusterInfo()))).toMatch(/spec: is not a resolved spec/);
    expect(revalidateSpec(JSON.parse(JSON.stringify(spec)))).toEqual(spec);
  });
});
