/**
 * Workflow code changes must not break runs in flight. Every history recorded from a real run in
 * test/fixtures/histories (test/e2e/record-histories.test.ts) is replayed against the current workflow code, in the
 * bundle the suite's workers run: a change to the commands a workflow issues (an activity, a child, a timer added,
 * removed or reordered) fails here, before it reaches a worker with runs in flight. Such a change goes behind
 * patched() or Worker Versioning (docs/changing-workflows.md). And the check can fail: the recorded sweeper history
 * replayed against a sweeper that schedules another activity first is a DeterminismViolationError.
 */
import { historyFromJSON, type History } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { nameSchemeOf } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { UNDO_IN_REVERSE_PATCH } from '../../workflows/compensation';
import { DATA_SETS_PATCH, DATA_SETS_S3_PATCH } from '../../workflows/data-set';
import { SWEEP_DATA_SETS_PATCH } from '../../workflows/sweeper-workflow';
import { COLLISION_PROOF_NAMES_PATCH } from '../../workflows/names';
import { swapModule } from '../helpers/bundle-swap';
import { DRILL_SAVES_SPEC_PATCH } from '../../workflows/drill-skeleton';
import { patchesOf } from '../helpers/patches';
import { workflowBundle } from '../helpers/temporal';

const HISTORIES_DIR = path.join(PROJECT_ROOT, 'test', 'fixtures', 'histories');

/** What the recorder writes (test/fixtures/histories/README.md): deleting one fails this test. */
const EXPECTED: Record<string, string> = {
  'experiment-ci': WORKFLOW_TYPES.experiment,
  'experiment-ci-before-data-sets': WORKFLOW_TYPES.experiment,
  'cluster-ci': WORKFLOW_TYPES.cluster,
  'cluster-ci-publishes-data-set': WORKFLOW_TYPES.cluster,
  'cluster-ci-data-set-s3': WORKFLOW_TYPES.cluster,
  'cluster-ci-before-data-sets': WORKFLOW_TYPES.cluster,
  'cluster-ci-before-checkpoint': WORKFLOW_TYPES.cluster,
  'restore-drill-ci': WORKFLOW_TYPES.restoreDrill,
  'restore-drill-ci-before-saves-spec': WORKFLOW_TYPES.restoreDrill,
  'restore-drill-ci-before-undo-in-reverse': WORKFLOW_TYPES.restoreDrill,
  'restore-tool-comparison-ci': WORKFLOW_TYPES.restoreToolComparison,
  'failover-drill-ci-1': WORKFLOW_TYPES.failoverDrill,
  'failover-drill-ci-2': WORKFLOW_TYPES.failoverDrill,
  'partition-drill-ci-1': WORKFLOW_TYPES.partitionDrill,
  'partition-drill-ci-2': WORKFLOW_TYPES.partitionDrill,
  'power-cut-drill-ci-1': WORKFLOW_TYPES.powerCutDrill,
  'power-cut-drill-ci-2': WORKFLOW_TYPES.powerCutDrill,
  'failover-drill-ci-before-saves-spec-1': WORKFLOW_TYPES.failoverDrill,
  'failover-drill-ci-before-saves-spec-2': WORKFLOW_TYPES.failoverDrill,
  'nightly-regression-ci': WORKFLOW_TYPES.nightlyRegression,
  sweeper: WORKFLOW_TYPES.sweeper,
  'sweeper-before-data-sets': WORKFLOW_TYPES.sweeper,
  diagnose: WORKFLOW_TYPES.diagnose,
  'diagnose-before-dsn-rules': WORKFLOW_TYPES.diagnose,
};

/**
 * historyFromJSON, as a user replaying a history downloaded from the UI would call it. It needs one protobufjs copy
 * for @temporalio/common and @temporalio/proto: package.json depends on protobufjs 8 itself so that npm hoists it
 * beside them (grpc's proto-loader keeps its 7.x nested); with a copy each it threw "type must be a Type".
 */
const fromJSON = (json: unknown): History => historyFromJSON(json);

interface Fixture {
  name: string;
  type: string;
  /** The recorded run's workflow id: workflows derive their children's and hosts' ids from it, so replay needs it. */
  workflowId: string;
  history: History;
}

function loadFixtures(): Fixture[] {
  return readdirSync(HISTORIES_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const history = fromJSON(JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8')));
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      if (!started?.workflowId) throw new Error(`${file}: the first event is not a WorkflowExecutionStarted event with a workflow id`);
      return { name: path.basename(file, '.json'), type: started.workflowType?.name ?? '', workflowId: started.workflowId, history };
    });
}

/** Replays each fixture in order (one replay worker, one history at a time); the error per fixture, or null. */
async function replay(options: ReplayWorkerOptions, fixtures: Fixture[]): Promise<Record<string, Error | null>> {
  const errors: Record<string, Error | null> = {};
  let i = 0;
  for await (const result of Worker.runReplayHistories(options, fixtures.map(({ workflowId, history }) => ({ workflowId, history }))))
    errors[fixtures[i++].name] = result.error ?? null;
  expect(i).toBe(fixtures.length);
  return errors;
}

describe('recorded workflow histories replay against the current workflow code', () => {
  const fixtures = loadFixtures();
  beforeAll(() => {
    // As the suite's other workers: errors only (the deliberately broken replay below logs its failed workflow task).
    const level = process.env.STORAGE_LAB_TEST_LOG_LEVEL === 'debug' ? 'DEBUG' : 'ERROR';
    Runtime.install({ logger: new DefaultLogger(level), telemetryOptions: { logging: { filter: { core: level }, forward: {} } } });
  });

  it('holds a history of every workflow the recorder runs, of every workflow type, and a continued-as-new failover, partition and power-cut drill', () => {
    expect(Object.fromEntries(fixtures.map((f) => [f.name, f.type]))).toEqual(expect.objectContaining(EXPECTED));
    expect(new Set(fixtures.map((f) => f.type))).toEqual(new Set(Object.values(WORKFLOW_TYPES)));
    for (const name of ['failover-drill-ci-1', 'partition-drill-ci-1', 'power-cut-drill-ci-1']) {
      const first = fixtures.find((f) => f.name === name)!;
      expect(first.history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    }
  });

  it('holds the cluster with the checkpoint phase, and from before it existed (its spec has no fragment for it)', () => {
    const activities = (name: string) =>
      (fixtures.find((f) => f.name === name)!.history.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(activities('cluster-ci')).toContain('runCheckpointPhase');
    expect(activities('cluster-ci-before-checkpoint')).not.toContain('runCheckpointPhase');
  });

  it('holds the cluster on both paths of data sets (restore, load and publish) and from before them, and the sweeper on both sides of its patch', () => {
    const activities = (name: string) =>
      (fixtures.find((f) => f.name === name)!.history.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    const patches = (name: string) => patchesOf(fixtures.find((f) => f.name === name)!.history);
    expect(patches('cluster-ci')).toEqual([DATA_SETS_PATCH]);
    expect(activities('cluster-ci')).toEqual(expect.arrayContaining(['claimDataSet', 'restoreDataSet']));
    expect(activities('cluster-ci')).not.toContain('loadData');
    // Data sets in an S3 store: the data-sets-s3 patch as well, then the restore path.
    expect(patches('cluster-ci-data-set-s3')).toEqual([DATA_SETS_PATCH, DATA_SETS_S3_PATCH]);
    expect(activities('cluster-ci-data-set-s3')).toEqual(expect.arrayContaining(['claimDataSet', 'restoreDataSet']));
    expect(activities('cluster-ci-data-set-s3')).not.toContain('loadData');
    expect(patches('cluster-ci-publishes-data-set')).toEqual([DATA_SETS_PATCH]);
    expect(activities('cluster-ci-publishes-data-set')).toEqual(expect.arrayContaining(['claimDataSet', 'loadData', 'publishDataSet', 'publishDataSetManifest', 'releaseDataSet']));
    expect(patches('cluster-ci-before-data-sets')).toEqual([]);
    expect(activities('cluster-ci-before-data-sets')).not.toContain('claimDataSet');
    expect(patches('sweeper')).toEqual([SWEEP_DATA_SETS_PATCH]);
    expect(patches('sweeper-before-data-sets')).toEqual([]);
  });

  it('holds the drills on both sides of their patches (drill-saves-spec, undo-in-reverse)', () => {
    const patches = (name: string) => patchesOf(fixtures.find((f) => f.name === name)!.history);
    expect(patches('restore-drill-ci')).toEqual([DRILL_SAVES_SPEC_PATCH, UNDO_IN_REVERSE_PATCH]);
    expect(patches('restore-drill-ci-before-saves-spec')).toEqual([UNDO_IN_REVERSE_PATCH]);
    expect(patches('restore-drill-ci-before-undo-in-reverse')).toEqual([]);
    expect(patches('failover-drill-ci-1')).toEqual([DRILL_SAVES_SPEC_PATCH]);
    expect(patches('failover-drill-ci-before-saves-spec-1')).toEqual([]);
    // A workflow type younger than collision-proof names: every run of it takes the patch.
    expect(patches('power-cut-drill-ci-1')).toEqual([DRILL_SAVES_SPEC_PATCH, COLLISION_PROOF_NAMES_PATCH]);
  });

  it('replays every recorded history without a determinism violation or any other replay error', async () => {
    const errors = await replay({ workflowBundle: workflowBundle(), replayName: 'recorded-histories' }, fixtures);
    const failed = Object.entries(errors)
      .filter(([, e]) => e)
      .map(([name, e]) => `${name}.json: ${e!.name}: ${e!.message}`);
    expect(failed).toEqual([]);
    expect(Object.keys(errors).sort()).toEqual(fixtures.map((f) => f.name).sort());
  });

  it("replays every recorded run with the host names it started with: none begun before collision-proof names addresses a host by the new scheme's name", async () => {
    // A chain's later executions carry no marker of their own: they follow their first execution's hosts; so do an
    // experiment's clusters (recorded from experiment runs that took the patch: experiment-ci, and the S3 one).
    const followers = ['power-cut-drill-ci-2', 'cluster-ci', 'cluster-ci-publishes-data-set', 'cluster-ci-data-set-s3'];
    const newScheme = (f: { name: string; history: History }) => patchesOf(f.history).includes(COLLISION_PROOF_NAMES_PATCH) || followers.includes(f.name);
    // The sweeper derives no name: it removes the hosts the lab lists, of either scheme (sweeper.json was recorded with
    // hosts of the new one, sweeper-before-data-sets.json with the old).
    const older = fixtures.filter((f) => !newScheme(f) && f.name !== 'sweeper');
    // Recorded on the new names: the power-cut drill (a workflow type younger than the patch) and the ci experiment
    // with its clusters, recorded again for data sets.
    expect(fixtures.filter(newScheme).map((f) => f.name).sort()).toEqual([
      'cluster-ci',
      'cluster-ci-data-set-s3',
      'cluster-ci-publishes-data-set',
      'experiment-ci',
      'power-cut-drill-ci-1',
      'power-cut-drill-ci-2',
    ]);
    // The interceptor fails a replay that schedules a host activity on, or starts a cluster with, a new-scheme host id.
    const errors = await replay(
      { workflowsPath: require.resolve('../../workflows'), interceptors: { workflowModules: [require.resolve('../fixtures/replay-names/interceptors')] }, replayName: 'replay-names' },
      older,
    );
    expect(Object.entries(errors).filter(([, e]) => e).map(([name, e]) => `${name}: ${e!.message}`)).toEqual([]);
    // The new-named runs addressed their hosts by the new scheme only, as recorded (their replay, above, keeps them).
    // (An experiment schedules no host activity itself: its clusters, recorded beside it, are checked.)
    for (const f of fixtures.filter((x) => newScheme(x) && x.type !== WORKFLOW_TYPES.experiment)) {
      const queues = (f.history.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name ?? []).filter((q) => q.startsWith('host:'));
      expect(queues.length).toBeGreaterThan(0);
      expect([f.name, queues.filter((q) => nameSchemeOf(q.slice('host:'.length)) !== 'sha256')]).toEqual([f.name, []]);
    }
    // And the check can fail: with a names module that ignores its patch, the recorded runs address new names.
    const broken = await replay(
      {
        workflowsPath: require.resolve('../../workflows'),
        interceptors: { workflowModules: [require.resolve('../fixtures/replay-names/interceptors')] },
        bundlerOptions: { webpackConfigHook: swapModule('./names', 'workflows', require.resolve('../fixtures/replay-names/names-always-new')) },
        replayName: 'replay-names-broken',
      },
      fixtures.filter((f) => ['experiment-ci-before-data-sets', 'restore-drill-ci'].includes(f.name)),
    );
    // Either the interceptor's refusal, or the path it turns the run into (a cluster start refused, the drill's claim
    // at its start) is a determinism error: both are a run in flight that would break.
    expect(broken['experiment-ci-before-data-sets']?.message).toMatch(/by a name of the new scheme|Nondeterminism error/);
    expect(broken['restore-drill-ci']?.message).toMatch(/by a name of the new scheme|Nondeterminism error/);
  });

  it('fails a workflow that changed its command sequence: the sweeper scheduling another activity first', async () => {
    const sweeper = fixtures.filter((f) => f.name === 'sweeper');
    expect(sweeper).toHaveLength(1);
    const errors = await replay({ workflowsPath: require.resolve('../fixtures/replay-broken'), replayName: 'replay-broken' }, sweeper);
    expect(errors.sweeper).toBeInstanceOf(DeterminismViolationError);
    expect(errors.sweeper!.message).toMatch(/Nondeterminism error: Activity type of scheduled event 'listManagedHosts' does not match activity type of activity command 'describeRuns'/);
  });
});
