/**
 * Every door is guarded (issue 19). The server lets anyone with start rights start any registered workflow type
 * with any workflow id and any arguments, so each type in workflows/index.ts is started here directly, on the real
 * server with the real control worker, with hostile inputs: program-running settings and scripts (each would touch a
 * marker file in a folder anyone may write), traversal ids as workflow ids and as a host id, a folder backup store
 * outside the backups folder, forged continue-as-new arguments, the history's reserved run, and links planted where
 * the lab would write or delete, pointing at another user's folder. Every run fails non-retryable naming the field,
 * runs nothing but (where it names it) its preflight, starts no child, creates no host, and the victim folder keeps
 * its owner and its file. Two of them go through the official `temporal workflow start` as well.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../lib/process-runner';
import { hostIdFor, runFolderName } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { resolveSpec } from '../../common/input/resolve';
import { backupsDirFor } from '../../lib/lab-paths';
import { lookupUser } from '../../lib/postgres-binaries';
import { temporalBinary } from '../../infra/temporal/dev-server';
import * as registered from '../../workflows';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { startTestLab, type TestLab, hostDirOf } from '../helpers/lab';
import { serverAddress, uniqueId } from '../helpers/temporal';

interface Case {
  name: string;
  /** A fixed hostile workflow id; default a fresh safe one. */
  workflowId?: string | ((lab: TestLab) => string);
  args: (lab: TestLab, workflowId: string) => unknown[];
  /** The dotted path the failure must name, as "<path>:". */
  field: string;
  /** A piece of the fix (or of the reason) the message must hold. */
  fix: string;
  /** The one activity it may run: the preflight that found the problem. */
  preflight?: 'preflight' | 'preflightDrill';
}

/** Programs a hostile input asks for would touch a file here; nobody may, so the folder must stay empty. */
const markers = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR ?? '/tmp', 'door-markers-'));
chmodSync(markers, 0o1777);
let markerCount = 0;
const marker = () => path.join(markers, `ran-${++markerCount}`);
const UPDATE = 'UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1;';
const shell = () => `\\shell touch ${marker()}\n${UPDATE}`;

/** Another user's folder with a file in it: what a traversal or a planted link would reach. */
const victimOwner = lookupUser('storage-lab') ?? lookupUser('nobody');
let victim = '';

/** A real resolved spec (what an experiment hands its clusters), with programs added where the issue put them. */
function hostileResolvedSpec() {
  const spec = resolveSpec({ preset: 'ci' });
  spec.postgres.settings = { archive_command: `touch ${marker()}` };
  spec.workload.script = shell();
  return spec;
}

const TRAVERSAL_IDS = ['..', '.', 'a/../..', '../x', '-rf'];
const byId = (type: string, input: (lab: TestLab) => unknown) =>
  TRAVERSAL_IDS.map((id): Case => ({ name: `${type} with workflow id ${JSON.stringify(id)}`, workflowId: id, args: (lab) => [input(lab)], field: 'workflowId', fix: 'use' }));

/** A continuation of the failover drill a client made up: pg_hba for the world, an archive_command of its own. */
function forgedFailoverContinuation(runId: string) {
  const record = (i: number) => ({
    hostId: hostIdFor(runId, 'node', i),
    runId,
    provider: 'local',
    className: 'node',
    kind: 'local-disk',
    taskQueue: `host:${hostIdFor(runId, 'node', i)}`,
    emulated: false,
    limits: { iops: null, throughputMiBps: null, memoryLimitMiB: 256 },
    postgres: { host: '127.0.0.1', port: 5432 },
  });
  const archive = { archive_mode: 'on', archive_command: `touch ${marker()}`, archive_timeout: '60s' };
  return {
    startedAt: new Date().toISOString(),
    postgresVersion: null,
    records: { n1: record(1), n2: record(2), n3: record(3) },
    hbaLines: ['host all all 0.0.0.0/0 trust'],
    primary: 'n1',
    standbys: ['n2', 'n3'],
    archiving: { store: { kind: 'folder', path: victim }, settings: { n1: archive, n2: archive, n3: archive } },
    archive: null,
    rounds: [],
    nextRound: 1,
  };
}

/** Hostile starts of every registered workflow type. */
const CASES: Record<string, Case[]> = {
  [WORKFLOW_TYPES.experiment]: [
    ...byId(WORKFLOW_TYPES.experiment, () => ({ preset: 'ci' })),
    { name: 'experiment: a folder backup store outside the backups folder', args: () => [{ preset: 'ci', durability: { enabled: true, backupStore: { kind: 'folder', path: path.join(victim, 'sub') } } }], field: 'durability.backupStore.path', fix: 'an absolute folder is refused: backups stay below' },
  ],
  [WORKFLOW_TYPES.cluster]: [
    {
      name: 'cluster started directly with a resolved spec plus archive_command and \\shell',
      workflowId: () => clusterWorkflowId('door-run', 'gp3', 0),
      args: () => [{ runId: 'door-run', spec: hostileResolvedSpec(), className: 'gp3', index: 0, hostId: hostIdFor('door-run', 'gp3', 0) }],
      field: 'parent',
      fix: 'start experimentWorkflow with the spec instead',
    },
    {
      name: 'cluster started directly with host id "../<victim>"',
      workflowId: () => clusterWorkflowId('door-run-2', 'gp3', 0),
      args: () => [{ runId: 'door-run-2', spec: resolveSpec({ preset: 'ci' }), className: 'gp3', index: 0, hostId: `../${path.basename(victim)}` }],
      field: 'parent',
      fix: 'start experimentWorkflow',
    },
    {
      name: 'cluster started directly under a traversal workflow id',
      workflowId: '..',
      args: () => [{ runId: 'x', spec: resolveSpec({ preset: 'ci' }), className: 'gp3', index: 0, hostId: '..' }],
      field: 'workflowId',
      fix: 'use letters, digits',
    },
  ],
  [WORKFLOW_TYPES.sweeper]: [
    ...byId(WORKFLOW_TYPES.sweeper, () => ({})),
    { name: 'sweeper: dryRun that is not a boolean', args: () => [{ dryRun: 'yes' }], field: 'dryRun', fix: 'must be true or false' },
    { name: 'sweeper: an unknown input field', args: () => [{ dryRun: false, folders: ['/etc'] }], field: 'folders', fix: 'unknown field' },
    {
      name: 'sweeper: a forged continuation (a future checkedAt makes every host look expired)',
      args: () => [{}, { dryRun: false, checkedAt: '2099-01-01T00:00:00.000Z', removed: [], kept: [], failed: [] }],
      field: 'carried',
      fix: 'start the run with its input only',
    },
  ],
  [WORKFLOW_TYPES.nightlyRegression]: [
    ...byId(WORKFLOW_TYPES.nightlyRegression, () => ({ preset: 'ci' })),
    { name: 'nightly: \\shell in the script', args: () => [{ preset: 'ci', workload: { script: shell() } }], field: 'workload.script', fix: 'remove it' },
  ],
  [WORKFLOW_TYPES.restoreDrill]: [
    ...byId(WORKFLOW_TYPES.restoreDrill, () => ({ preset: 'ci', backup: { store: { kind: 'folder', path: path.join(victim, 'sub') } } })),
    { name: 'restore drill: a folder backup store one level below a victim folder', args: () => [{ preset: 'ci', backup: { store: { kind: 'folder', path: path.join(victim, 'sub') } } }], field: 'backup.store.path', fix: 'an absolute folder is refused: backups stay below' },
    { name: 'restore drill: archive_command', args: () => [{ preset: 'ci', postgres: { settings: { archive_command: `touch ${marker()}` } } }], field: 'postgres.settings.archive_command', fix: 'remove it' },
  ],
  [WORKFLOW_TYPES.restoreToolComparison]: [
    ...byId(WORKFLOW_TYPES.restoreToolComparison, () => ({ preset: 'ci' })),
    { name: 'tool comparison: a folder backup store outside the backups folder', args: () => [{ preset: 'ci', backup: { store: { kind: 'folder', path: victim } } }], field: 'backup.store.path', fix: 'an absolute folder is refused: backups stay below' },
  ],
  [WORKFLOW_TYPES.failoverDrill]: [
    ...byId(WORKFLOW_TYPES.failoverDrill, () => ({ preset: 'ci' })),
    { name: 'failover drill: a forged continuation (pg_hba for the world, archive_command)', args: (_lab, id) => [{ preset: 'ci' }, forgedFailoverContinuation(id)], field: 'continued', fix: 'start the run with its input only' },
    { name: 'failover drill: restore_command', args: () => [{ preset: 'ci', postgres: { settings: { restore_command: `touch ${marker()}` } } }], field: 'postgres.settings.restore_command', fix: 'remove it' },
  ],
  [WORKFLOW_TYPES.partitionDrill]: [
    ...byId(WORKFLOW_TYPES.partitionDrill, () => ({ preset: 'ci' })),
    { name: 'partition drill: a forged continuation (pg_hba for the world, archive_command)', args: (_lab, id) => [{ preset: 'ci' }, forgedFailoverContinuation(id)], field: 'continued', fix: 'start the run with its input only' },
    { name: 'partition drill: its quorum emptied through the settings', args: () => [{ preset: 'ci', postgres: { settings: { synchronous_standby_names: '' } } }], field: 'postgres.settings.synchronous_standby_names', fix: 'remove it' },
    { name: 'partition drill: an asynchronous mode', args: () => [{ preset: 'ci', mode: 'async' }], field: 'mode', fix: 'unknown field' },
  ],
  [WORKFLOW_TYPES.powerCutDrill]: [
    ...byId(WORKFLOW_TYPES.powerCutDrill, () => ({ preset: 'ci' })),
    { name: 'power-cut drill: a forged continuation (a failover drill\'s, with archive_command)', args: (_lab, id) => [{ preset: 'ci' }, forgedFailoverContinuation(id)], field: 'continued', fix: 'start the run with its input only' },
    { name: 'power-cut drill: fsync off through the settings', args: () => [{ preset: 'ci', postgres: { settings: { fsync: 'off' } } }], field: 'postgres.settings.fsync', fix: 'remove it' },
    { name: 'power-cut drill: archive_command', args: () => [{ preset: 'ci', postgres: { settings: { archive_command: `touch ${marker()}` } } }], field: 'postgres.settings.archive_command', fix: 'remove it' },
    { name: 'power-cut drill: the machine\'s own disk, which a cut cannot reach', args: () => [{ preset: 'ci', storageClass: { kind: 'local-disk' } }], field: 'storageClass.kind', fix: 'only a modelled volume' },
  ],
  [WORKFLOW_TYPES.diagnose]: [
    ...byId(WORKFLOW_TYPES.diagnose, () => ({ dsn: 'postgresql://monitor@127.0.0.1:1/app', seconds: 1 })),
    { name: 'diagnose: a password in the DSN', args: () => [{ dsn: 'postgresql://monitor:secret@127.0.0.1:1/app', seconds: 1 }], field: 'dsn', fix: 'remove it' },
  ],
};

/** What a run did on the server: activity types it scheduled and children it started. */
async function sideEffects(client: Client, workflowId: string, runId: string): Promise<{ activities: string[]; children: number }> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const { EventType } = temporal.api.enums.v1;
  const events = history.events ?? [];
  return {
    activities: events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    children: events.filter((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED).length,
  };
}

/** The messages of the activities a run saw fail, innermost cause first. */
async function failedActivities(client: Client, workflowId: string, runId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const { EventType } = temporal.api.enums.v1;
  return (history.events ?? [])
    .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED)
    .map((e) => e.activityTaskFailedEventAttributes?.failure?.message ?? '');
}

/** The innermost message of a failure chain. */
function innermost(err: unknown): string {
  let message = String(err);
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) if (e.message) message = e.message;
  return message;
}

/** Problems of one refused run: its failure, and what it did on the server. */
async function judge(client: Client, c: Case, workflowId: string, runId: string, failure: unknown): Promise<string[]> {
  if (!(failure instanceof WorkflowFailedError)) return [`${c.name}: not refused (${String(failure)})`];
  const problems: string[] = [];
  const cause = failure.cause as { type?: string; nonRetryable?: boolean; message: string };
  if (cause.type !== 'InvalidSpecError') problems.push(`${c.name}: failure type ${cause.type}, expected InvalidSpecError: ${cause.message}`);
  if (!cause.nonRetryable) problems.push(`${c.name}: retryable`);
  if (!cause.message.includes(`${c.field}:`)) problems.push(`${c.name}: message does not name ${c.field}: ${cause.message}`);
  if (!cause.message.includes(c.fix)) problems.push(`${c.name}: message does not say "${c.fix}": ${cause.message}`);
  const done = await sideEffects(client, workflowId, runId);
  const expected = c.preflight ? [c.preflight] : [];
  if (done.activities.join() !== expected.join() || done.children)
    problems.push(`${c.name}: ran [${done.activities.join(', ')}] and ${done.children} children; expected [${expected.join(', ')}] and none`);
  return problems;
}

/** The victim folder as it was: its owner, its file, the file's content and owner. */
function victimProblems(): string[] {
  const problems: string[] = [];
  if (!existsSync(victim) || !lstatSync(victim).isDirectory()) return [`victim folder ${victim} is gone`];
  if (statSync(victim).uid !== victimOwner!.uid) problems.push(`victim folder owner is now uid ${statSync(victim).uid}`);
  const file = path.join(victim, 'precious');
  if (!existsSync(file) || readFileSync(file, 'utf8') !== 'keep me') problems.push('victim file changed or gone');
  else if (statSync(file).uid !== victimOwner!.uid) problems.push(`victim file owner is now uid ${statSync(file).uid}`);
  if (readdirSync(victim).join() !== 'precious') problems.push(`victim folder now holds ${readdirSync(victim).join(', ')}`);
  return problems;
}

describe('every door is guarded (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    if (!victimOwner) throw new Error('needs the storage-lab (or nobody) OS user: run infra/bootstrap.sh');
    lab = await startTestLab('doors');
    // Beside the hosts folder, where hostId "../<name>" and a store one level below it would have led.
    victim = path.join(path.dirname(lab.paths.hostsDir), 'victim');
    mkdirSync(victim, { mode: 0o755 });
    writeFileSync(path.join(victim, 'precious'), 'keep me');
    chownSync(victim, victimOwner.uid, victimOwner.gid);
    chownSync(path.join(victim, 'precious'), victimOwner.uid, victimOwner.gid);
  });
  afterAll(async () => {
    await lab?.close();
  });
  afterAll(() => {
    // The last word: no program any input asked for ever ran.
    expect(readdirSync(markers)).toEqual([]);
  });

  it('has hostile cases for every registered workflow type', () => {
    const types = Object.entries(registered)
      .filter(([, v]) => typeof v === 'function')
      .map(([name]) => name)
      .sort();
    expect(types).toEqual(Object.keys(CASES).sort());
    for (const type of types) expect([type, CASES[type].length > 0]).toEqual([type, true]);
  });

  it('refuses every hostile start at the door: the field named, nothing run, no child, no host, the victim untouched', async () => {
    const problems: string[] = [];
    // One at a time: several cases share a hostile workflow id, and a closed run's id may be used again.
    for (const [type, cases] of Object.entries(CASES))
      for (const c of cases) {
        const workflowId = typeof c.workflowId === 'function' ? c.workflowId(lab) : (c.workflowId ?? uniqueId('door'));
        const handle = await lab.client.workflow.start(type, { taskQueue: lab.taskQueue, workflowId, args: c.args(lab, workflowId) as [] });
        const failure = await handle.result().then(
          () => null,
          (e: unknown) => e,
        );
        problems.push(...(await judge(lab.client, c, workflowId, handle.firstExecutionRunId, failure)));
      }
    expect(problems).toEqual([]);
    expect(markerCount).toBeGreaterThanOrEqual(6);
    expect(readdirSync(markers)).toEqual([]);
    expect(lab.leftovers([])).toEqual([]);
    expect(victimProblems()).toEqual([]);
    // Nothing was written for the traversal ids, and nothing reached the history's folder (no run id escapes to "_history").
    expect(existsSync(path.join(lab.paths.resultsDir, '_history'))).toBe(false);
    expect(existsSync(path.join(lab.paths.home, 'result.json'))).toBe(false);
    expect(existsSync(path.join(lab.paths.resultsDir, 'result.json'))).toBe(false);
  });

  it('writes and deletes nothing through a link planted as a backup store or a host folder: the victim keeps its owner and file', async () => {
    // A restore drill's store: its folder in the backups folder is a link to the victim.
    const drillId = uniqueId('door-planted-store');
    const backups = backupsDirFor(lab.paths.hostsDir);
    mkdirSync(backups, { recursive: true });
    const plantedStore = path.join(backups, runFolderName(drillId));
    symlinkSync(victim, plantedStore);
    // An experiment's host: its folder in the hosts folder is a link to the victim.
    const expId = uniqueId('door-planted-host');
    mkdirSync(lab.paths.hostsDir, { recursive: true });
    const plantedHost = hostDirOf(lab.paths, hostIdFor(expId, 'local-disk', 0));
    symlinkSync(victim, plantedHost);
    try {
      const drill = await lab.client.workflow.start(WORKFLOW_TYPES.restoreDrill, { taskQueue: lab.taskQueue, workflowId: drillId, args: [{ preset: 'ci' }] });
      const drillFailure = (await drill.result().then(() => null, (e: unknown) => e)) as WorkflowFailedError;
      expect(drillFailure).toBeInstanceOf(WorkflowFailedError);
      const drillDone = await sideEffects(lab.client, drillId, drill.firstExecutionRunId);
      expect(drillDone.activities).not.toContain('provisionHost');
      expect(innermost(drillFailure)).toMatch(/refused to take over .*: it is a symbolic link the lab did not make/);
      const failed = await failedActivities(lab.client, drillId, drill.firstExecutionRunId);
      expect(failed).toEqual([expect.stringMatching(/refused to take over/), expect.stringMatching(/refused to remove .*: it is a symbolic link, not a folder the lab made/)]);

      const exp = await lab.startExperiment({ preset: 'ci', storageClasses: { gp3: null }, compare: null }, expId);
      expect(await exp.result().then(() => null, (e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);
      const cluster = await lab.client.workflow.getHandle(clusterWorkflowId(expId, 'local-disk', 0)).result().then(() => null, (e: unknown) => e);
      expect(innermost(cluster)).toMatch(/is not a folder \(a link planted in the hosts folder\?\); refused/);
    } finally {
      rmSync(plantedStore);
      rmSync(plantedHost);
    }
    expect(victimProblems()).toEqual([]);
    expect(lab.leftovers([hostIdFor(expId, 'local-disk', 0)])).toEqual([]);
  });

  it('refuses them through the official temporal workflow start: a cluster with archive_command, a restore drill with workflow id ".."', async () => {
    const dir = mkdtempSync(path.join(lab.paths.home, 'door-inputs-'));
    const starts = [
      { c: CASES[WORKFLOW_TYPES.cluster][0], type: WORKFLOW_TYPES.cluster, workflowId: clusterWorkflowId('door-cli-run', 'gp3', 0) },
      { c: CASES[WORKFLOW_TYPES.restoreDrill].find((c) => c.workflowId === '..')!, type: WORKFLOW_TYPES.restoreDrill, workflowId: '..' },
    ];
    const problems: string[] = [];
    for (const { c, type, workflowId } of starts) {
      const file = path.join(dir, `${uniqueId('input')}.json`);
      const [input] = c.args(lab, workflowId) as [{ runId?: string; hostId?: string }];
      if (type === WORKFLOW_TYPES.cluster) Object.assign(input, { runId: 'door-cli-run', hostId: hostIdFor('door-cli-run', 'gp3', 0) });
      writeFileSync(file, JSON.stringify(input));
      const args = ['workflow', 'start', '--address', serverAddress(), '--namespace', 'default', '--task-queue', lab.taskQueue];
      args.push('--type', type, '--workflow-id', workflowId, '--input-file', file);
      await runProcess(temporalBinary(), args, { timeoutMs: 60_000 });
      // Started just now, one at a time: the id's latest run is this one.
      const { runId } = await lab.client.workflow.getHandle(workflowId).describe();
      const failure = await lab.client.workflow.getHandle(workflowId, runId).result().then(() => null, (e: unknown) => e);
      problems.push(...(await judge(lab.client, c, workflowId, runId, failure)));
    }
    expect(problems).toEqual([]);
    expect(readdirSync(markers)).toEqual([]);
    expect(lab.leftovers([])).toEqual([]);
    expect(victimProblems()).toEqual([]);
  });
});
