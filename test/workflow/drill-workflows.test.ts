/**
 * The drill workflows on the real dev server with mocked activities: bad input fails fast and creates nothing; a
 * restore whose recovery fails gets a verdict naming why, saved before every host is torn down; the tool comparison
 * runs both tools' drills one after the other, the second even when the first failed, and saves one table; a
 * partition round runs cut, promotion, heal, fence probe, count and rejoin in that order, fails naming the split-brain
 * commits a ledger check found, and heals its cut again before the hosts are torn down.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { ControlActivities } from '../../activities/control';
import type { HostActivities } from '../../activities/host';
import type { PartitionDrillResult, PowerCutDrillResult, RestoreDrillResult, RestoreToolComparison } from '../../common/results/drill-result';
import { cutMoment } from '../../workflows/power-cut-steps';
import { comparedDrillId } from '../../common/input/tool-comparison';
import { hostIdFor } from '../../common/core/ids';
import { hostTaskQueue, WORKFLOW_TYPES } from '../../common/core/names';
import { UNDO_IN_REVERSE_PATCH } from '../../workflows/compensation';
import { COLLISION_PROOF_NAMES_PATCH } from '../../workflows/names';
import { DRILL_SAVES_SPEC_PATCH } from '../../workflows/drill-skeleton';
import { fakeHostRecord } from '../helpers/fake-host';
import { patchesOf } from '../helpers/patches';
import { connect, uniqueId, workflowBundle } from '../helpers/temporal';

type Calls = string[];


/** Comparisons the fake control side saved (the tests read them). */
const comparisons: RestoreToolComparison[] = [];

/** The control side; `stuckHost`'s teardown fails at once (non-retryable), as a host the provider cannot remove. */
function fakeControl(calls: Calls, saved: RestoreDrillResult[], stuckHost?: string): Partial<ControlActivities> {
  return {
    async preflightDrill() {
      calls.push('preflightDrill');
      return { warnings: [] };
    },
    async saveSpec({ spec }) {
      calls.push(`saveSpec ${'rounds' in spec ? 'failover' : 'restore'}`);
      return '/tmp/results/run';
    },
    async prepareBackupStore() {
      calls.push('prepareBackupStore');
      return { kind: 'folder', path: '/tmp/backups/run' };
    },
    async provisionHost({ request }) {
      // Only a power-cut drill's hosts keep what a cut drops (the volume's undo log): every request says which.
      calls.push(`provision ${request.hostId}${request.powerCuts ? ' (power cuts)' : request.powerCuts === false ? '' : ' (powerCuts missing)'}`);
      return fakeHostRecord(request);
    },
    async killHost({ hostId }) {
      calls.push(`kill ${hostId}`);
    },
    async claimRunResults() {
      calls.push('claimRunResults');
      return '/tmp/results/run';
    },
    async cutNetwork({ cut }) {
      calls.push(`cut ${cut.isolated.join(',')} | ${cut.others.join(',')}`);
      const at = new Date().toISOString();
      return { table: `storage_lab_test_${cut.hostId}`, mechanism: 'fake', rules: 4 * cut.isolated.length * cut.others.length, requestedAt: at, appliedAt: at, applySeconds: 0.01 };
    },
    async cutPower({ hostId }) {
      calls.push(`cut power ${hostId}`);
      const counters = { writes: 900, writeBytes: 900 * 8192, flushes: 80, volatileBytes: 12 * 4096, cutPages: 0, errors: 0 };
      const at = new Date().toISOString();
      return { hostId, cutAt: at, backAt: at, droppedPages: 12, droppedBytes: 12 * 4096, before: counters, after: { ...counters, volatileBytes: 0, cutPages: 12, errors: 3 }, seconds: 0.4 };
    },
    async healNetwork({ hostId }) {
      calls.push(`heal ${hostId}`);
      return { removed: true, droppedPackets: 12, healedAt: new Date().toISOString(), removeSeconds: 0.01 };
    },
    async saveDrillResult({ result }) {
      calls.push('saveDrillResult');
      saved.push(result as RestoreDrillResult);
      return '/tmp/results/run';
    },
    async saveToolComparison({ comparison }) {
      calls.push('saveToolComparison');
      comparisons.push(comparison);
      return '/tmp/results/comparison';
    },
    async teardownHost({ hostId }) {
      calls.push(`teardown ${hostId}`);
      if (hostId === stuckHost) throw ApplicationFailure.nonRetryable(`instance of ${hostId} stuck in shutting-down`);
    },
    async removeBackupStore() {
      calls.push('removeBackupStore');
      return 'removed';
    },
  };
}

const backup = {
  tool: 'wal-g',
  toolVersion: '3.0.8',
  label: 'base_000000010000000000000003',
  type: 'full',
  startedAt: '2026-11-30T07:38:45.000Z',
  stoppedAt: '2026-11-30T07:38:49.000Z',
  seconds: 4,
  databaseBytes: 1,
  repositoryBytes: 1,
  startLsn: '0/3000028',
  stopLsn: '0/4000050',
  walStart: '000000010000000000000003',
  walStop: '000000010000000000000004',
};

/** A source and a restore host whose recovery runs out of WAL: one segment is missing from the archive. */
function fakeHost(calls: Calls, hostId: string): Partial<HostActivities> {
  const log = (what: string) => calls.push(`${what} ${hostId}`);
  /** Every backup activity records the tool it was asked to use. */
  const logTool = (what: string, input: { tool?: string }) => calls.push(`${what} ${hostId} tool=${input.tool}`);
  return {
    async describeHost() {
      return { hostId, pid: 1, postgresRunning: false };
    },
    async configureBackups(input) {
      logTool('configureBackups', input);
      return { tool: input.tool!, version: '3.0.8', settings: { archive_mode: 'on' } };
    },
    async configurePostgres() {
      return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
    },
    async initBackupRepository(input) {
      logTool('initBackupRepository', input);
    },
    async loadData() {
      return { rows: 100000, chunks: 2, chunksResumed: 0, loadSeconds: 1, indexSeconds: 0, vacuumSeconds: 0, heapBytes: 1, rowsPerSecond: 1 };
    },
    async takeBackup(input) {
      logTool('takeBackup', input);
      return backup;
    },
    async writeHistory(input) {
      return {
        firstId: 1,
        lastId: 10,
        markers: 10,
        pgbenchTransactions: 5,
        failurePoint: input.failurePoint
          ? {
              at: '2026-11-30T07:39:00.000Z',
              currentLsn: '0/7000100',
              lastArchivedWal: '000000010000000000000006',
              lastArchivedAt: '2026-11-30T07:38:59.000Z',
              archivedThroughLsn: '0/7000000',
              archiveLagBytes: 256,
              archiveLagSeconds: 0.5,
              lastMarkerId: 20,
              lastArchivedMarkerId: 19,
              archiveFailures: 0,
            }
          : null,
      };
    },
    async markTarget() {
      return {
        target: { type: 'time', time: '2026-11-30 07:38:55.302551+00', lsn: null, lastIdBefore: 10, checksums: { t: { rows: 1, sum: '1' } } },
        walLsn: '0/6000308',
      };
    },
    async waitForArchive() {
      return { seconds: 0.1 };
    },
    async restoreBackup(input) {
      logTool('restoreBackup', input);
      log('restore');
      return { backupLabel: backup.label, fetchSeconds: 1 };
    },
    async recoverFromBackup() {
      log('recover');
      return {
        ok: false,
        detail: 'recovery failed: recovery ended before configured recovery target was reached',
        replaySeconds: null,
        promoteSeconds: null,
        stoppedAt: null,
        lastTransactionAt: null,
        restoredSegments: 2,
      };
    },
    async checkArchive(input) {
      logTool('checkArchive', input);
      const { from, to } = input;
      return {
        continuity: { ok: false, from, to, checked: 4, missing: ['000000010000000000000005'] },
        repository: {
          ok: false,
          status: 'integrity FAILURE, timeline OK',
          detail: `wal-g wal-verify: integrity FAILURE, timeline OK; 3 segments found in ${from}..${to}; missing: 000000010000000000000005 (MISSING_LOST); timeline 1, highest in storage 1`,
          walChecked: 4,
          walInvalid: 1,
          backupFilesChecked: null,
          backupFilesInvalid: null,
          missingWal: ['000000010000000000000005'],
          seconds: 0.25,
        },
      };
    },
    async verifyRestore() {
      log('verifyRestore');
      throw new Error('a failed recovery has nothing to verify');
    },
  };
}

/**
 * A replica drill's host: n2 received the most WAL (it is promoted), the writer moves to it; the ledger check finds
 * `splitBrain` commits the old primary acknowledged after the cut that the new one lacks.
 */
function fakeReplicaHost(calls: Calls, hostId: string, splitBrain: number): Partial<HostActivities> {
  const node = /-node-(\d)$/.exec(hostId)?.[1];
  const log = (what: string) => calls.push(`${what} ${node ? `n${node}` : 'client'}`);
  return {
    async describeHost() {
      return { hostId, pid: 1, postgresRunning: true };
    },
    async configurePostgres() {
      return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
    },
    async configureBackups(input) {
      return { tool: input.tool!, version: '3.0.8', settings: { archive_mode: 'on' } };
    },
    async initBackupRepository() {},
    async takeBackup() {
      return backup;
    },
    async createFailoverLedger() {},
    async cloneStandby() {
      return { seconds: 1 };
    },
    async setReplication() {},
    async waitForStandbys() {
      return { seconds: 0.1, standbys: [] };
    },
    async standbyPosition() {
      log('standbyPosition');
      return { inRecovery: true, receiveLsn: node === '2' ? '0/5000000' : '0/4000000', replayLsn: null };
    },
    async promoteStandby() {
      log('promote');
      return { seconds: 0.2, timeline: 2 };
    },
    async archiveCurrentSegment() {
      return { segment: '000000020000000000000005', seconds: 0.1 };
    },
    async checkRepository() {
      return { ok: true, status: 'ok', detail: 'fake: ok', walChecked: 2, walInvalid: 0, backupFilesChecked: null, backupFilesInvalid: null, missingWal: [], seconds: 0.1 };
    },
    async runFailoverWriter(input) {
      log(`writer routing=${input.routing}`);
      const now = Date.now();
      return { acknowledged: 1000, failedWrites: 0, inDoubt: 4, acknowledgedByNode: { n1: 600, n2: 400 }, lastAckBeforeKillAt: new Date(now - 2000).toISOString(), firstAckAfterAt: new Date(now).toISOString(), newPrimaryNode: 'n2', outageSeconds: 2, stopReason: 'failover over' };
    },
    async probeOldPrimary(input) {
      log(`probe ${input.node.node}`);
      return { synchronousStandbyNames: 'ANY 1 (n2, n3)', stillPrimary: true, currentLsn: '0/5000100', timeline: 1, fence: { outcome: 'hung', seconds: 1, detail: 'not acknowledged within 1 s' } };
    },
    async countLostCommits(input) {
      log(`count after cut on ${input.afterCut?.node}`);
      const split = Array.from({ length: Math.min(splitBrain, 10) }, (_, i) => ({ id: 1_000_000_100 + i, lsn: '0/5000010' }));
      return {
        acknowledged: 1000,
        lost: splitBrain,
        lostSample: split.map((e) => e.id),
        inDoubtPresent: 1,
        rowsOnPrimary: 1000 - splitBrain,
        afterCut: { acknowledged: splitBrain, whileCutting: 2, splitBrain, splitBrainSample: split, lastAckedLsnBefore: '0/4FFFF00' },
      };
    },
    async rejoinAsStandby() {
      log('rejoin');
      return { action: 'rewound', seconds: 2, detail: 'stopped (fast) in 1.00 s; servers diverged at WAL location 0/5000000 on timeline 1; Done!' };
    },
  };
}

describe('drill workflows with mocked activities', () => {
  let connection: NativeConnection;
  let client: Client;

  beforeAll(async () => {
    ({ connection, client } = await connect());
  });
  afterAll(async () => {
    await connection.close();
  });

  async function runDrill(
    type: string,
    input: unknown,
    hostIds: (workflowId: string) => string[],
    stuck?: (workflowId: string) => string,
    host: (calls: Calls, hostId: string) => Partial<HostActivities> = fakeHost,
  ) {
    const calls: Calls = [];
    const saved: RestoreDrillResult[] = [];
    const taskQueue = uniqueId('drill-test');
    const workflowId = uniqueId('drill');
    const workers = [
      await Worker.create({ connection, taskQueue, workflowBundle: workflowBundle(), activities: fakeControl(calls, saved, stuck?.(workflowId)) }),
      ...(await Promise.all(
        hostIds(workflowId).map((h) => Worker.create({ connection, taskQueue: hostTaskQueue(h), activities: host(calls, h) })),
      )),
    ];
    const running = workers.map((w) => w.run());
    try {
      const handle = await client.workflow.start(type, { taskQueue, workflowId, args: [input] });
      const outcome = await handle.result().then(
        (v) => v as unknown,
        (e) => e as unknown,
      );
      const history = await handle.fetchHistory();
      return { calls, saved, outcome, workflowId, history };
    } finally {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
    }
  }

  it.each([
    [WORKFLOW_TYPES.restoreDrill, { preset: 'ci', target: 'tomorrow' }, 'target'],
    [WORKFLOW_TYPES.failoverDrill, { preset: 'ci', rounds: 3, rejoin: 'none' }, 'rejoin'],
    [WORKFLOW_TYPES.partitionDrill, { preset: 'ci', partition: { detectionSeconds: 'soon' } }, 'partition.detectionSeconds'],
  ])('%s fails bad input at once, non-retryable, naming the field, and creates nothing', async (type, input, field) => {
    const { calls, outcome } = await runDrill(type, input, () => []);
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const cause = (outcome as WorkflowFailedError).cause as { type?: string; nonRetryable?: boolean; message: string };
    expect(cause.type).toBe('InvalidSpecError');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toContain(`- ${field}:`);
    expect(calls).toEqual([]);
  });

  it('gives a failed recovery a verdict naming the FATAL and the missing segment, saved before teardown', async () => {
    const { calls, saved, outcome, workflowId } = await runDrill(WORKFLOW_TYPES.restoreDrill, { preset: 'ci' }, (id) => [
      hostIdFor(id, 'source', 0),
      hostIdFor(id, 'restore', 0),
    ]);
    const [source, restore] = [hostIdFor(workflowId, 'source', 0), hostIdFor(workflowId, 'restore', 0)];
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const cause = (outcome as WorkflowFailedError).cause as { type?: string; message: string };
    expect(cause.type).toBe('VerificationError');
    expect(cause.message).toMatch(/recovery ended before configured recovery target was reached/);
    expect(saved).toHaveLength(1);
    const result = saved[0];
    expect(result.status).toBe('failed');
    expect(result.verdict).toMatch(/^failed: recovery failed: recovery ended before .*archive: missing from the archive: 000000010000000000000005/);
    expect(result.rto).toBeNull();
    expect(result.rpo).toEqual({ seconds: 0.5, bytes: 256, lostMarkers: null, lostWindowSeconds: null });
    // WAL-G by default: every backup activity was asked for it, and the result and its check name it in its own words.
    const toolCalls = calls.filter((c) => c.includes(' tool='));
    expect(toolCalls.map((c) => c.split(' ')[0]).sort()).toEqual(['checkArchive', 'configureBackups', 'configureBackups', 'initBackupRepository', 'restoreBackup', 'takeBackup']);
    for (const c of toolCalls) expect(c).toMatch(/ tool=wal-g$/);
    expect(result.backupTool).toEqual({ name: 'wal-g', version: '3.0.8' });
    expect(result.verification.backupVerify).toMatchObject({ ok: false, tool: 'wal-g', seconds: 0.25, missingWal: ['000000010000000000000005'] });
    expect(result.verification.backupVerify!.detail).toMatch(/^wal-g wal-verify: integrity FAILURE/);
    expect(result.verdict).toContain('repository: wal-g wal-verify: integrity FAILURE');
    // The spec was checked, then saved, before anything was created.
    expect(calls.slice(0, 3)).toEqual(['preflightDrill', 'saveSpec restore', 'prepareBackupStore']);
    // The source died at the failure point, before the restore; nothing is verified after a failed recovery.
    expect(calls.indexOf(`kill ${source}`)).toBeLessThan(calls.indexOf(`provision ${restore}`));
    expect(calls).not.toContain(`verifyRestore ${restore}`);
    const savedAt = calls.indexOf('saveDrillResult');
    for (const host of [source, restore]) expect(calls.indexOf(`teardown ${host}`)).toBeGreaterThan(savedAt);
    expect(calls.indexOf('removeBackupStore')).toBeGreaterThan(savedAt);
  });

  it('undoes what the restore drill made in reverse, after saving: restore host, source, store, each though one failed', async () => {
    const restoreOf = (id: string) => hostIdFor(id, 'restore', 0);
    const { calls, saved, outcome, workflowId, history } = await runDrill(
      WORKFLOW_TYPES.restoreDrill,
      { preset: 'ci' },
      (id) => [hostIdFor(id, 'source', 0), restoreOf(id)],
      restoreOf,
    );
    const [source, restore] = [hostIdFor(workflowId, 'source', 0), restoreOf(workflowId)];
    // The drill's own verdict still decides how it ends; the stuck host is on its board.
    expect((outcome as WorkflowFailedError).cause).toMatchObject({ type: 'VerificationError' });
    expect(saved).toHaveLength(1);
    const undo = calls.slice(calls.indexOf('saveDrillResult') + 1);
    expect(undo).toEqual([`teardown ${restore}`, `teardown ${source}`, 'removeBackupStore']);
    // A run started on this code takes the patches; runs recorded before them replay their old commands.
    expect(patchesOf(history)).toEqual([DRILL_SAVES_SPEC_PATCH, COLLISION_PROOF_NAMES_PATCH, UNDO_IN_REVERSE_PATCH]);
  });

  it('compares the tools: WAL-G then pgBackRest, the second run though the first failed, both saved in one table', async () => {
    const hostsOf = (id: string) =>
      (['wal-g', 'pgbackrest'] as const).flatMap((tool) => [hostIdFor(comparedDrillId(id, tool), 'source', 0), hostIdFor(comparedDrillId(id, tool), 'restore', 0)]);
    const { calls, saved, outcome, workflowId } = await runDrill(WORKFLOW_TYPES.restoreToolComparison, { preset: 'ci' }, hostsOf);
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    expect((outcome as WorkflowFailedError).cause).toMatchObject({ type: 'VerificationError' });
    // Both specs were checked before either drill made a host; then one drill after the other, each with its own tool.
    expect(calls.slice(0, 2)).toEqual(['preflightDrill', 'preflightDrill']);
    const [walg, pgbackrest] = (['wal-g', 'pgbackrest'] as const).map((tool) => comparedDrillId(workflowId, tool));
    expect(calls.filter((c) => c.startsWith('configureBackups')).map((c) => c.split(' tool=')[1])).toEqual(['wal-g', 'wal-g', 'pgbackrest', 'pgbackrest']);
    expect(calls.indexOf(`teardown ${hostIdFor(walg, 'restore', 0)}`)).toBeLessThan(calls.indexOf(`provision ${hostIdFor(pgbackrest, 'source', 0)}`));
    expect(saved.map((r) => r.runId)).toEqual([walg, pgbackrest]);
    const comparison = comparisons.find((c) => c.runId === workflowId)!;
    expect(comparison.status).toBe('failed');
    expect(comparison.rows.map((r) => [r.tool, r.status, r.drillRunId])).toEqual([
      ['wal-g', 'failed', walg],
      ['pgbackrest', 'failed', pgbackrest],
    ]);
    expect(comparison.verdict).toMatch(/^failed: wal-g failed: .*recovery ended before configured recovery target was reached.*; pgbackrest failed: /);
    expect(calls[calls.length - 1]).toBe('saveToolComparison');
  });

  it('refuses an asynchronous partition drill: no input can empty its quorum', async () => {
    const { calls, outcome } = await runDrill(WORKFLOW_TYPES.partitionDrill, { preset: 'ci', mode: 'async' }, () => []);
    const cause = (outcome as WorkflowFailedError).cause as { type?: string; message: string };
    expect(cause.type).toBe('InvalidSpecError');
    expect(cause.message).toMatch(/- mode: unknown field/);
    expect(calls).toEqual([]);
    const settings = await runDrill(WORKFLOW_TYPES.partitionDrill, { preset: 'ci', postgres: { settings: { synchronous_standby_names: '' } } }, () => []);
    const refused = (settings.outcome as WorkflowFailedError).cause as { type?: string; message: string };
    expect(refused.type).toBe('InvalidSpecError');
    expect(refused.message).toMatch(/postgres\.settings\.synchronous_standby_names: refused/);
    expect(settings.calls).toEqual([]);
  });

  const replicaHosts = (id: string) => [hostIdFor(id, 'client', 0), ...[1, 2, 3].map((i) => hostIdFor(id, 'node', i))];
  const powerCutHosts = (id: string) => [hostIdFor(id, 'client', 0), hostIdFor(id, 'node', 1)];

  /** The power-cut drill's hosts: `lost` acknowledged commits missing after each cut. */
  function fakePowerCutHost(calls: Calls, hostId: string, lost: number): Partial<HostActivities> {
    const who = /-node-1$/.test(hostId) ? 'n1' : 'client';
    const log = (what: string) => calls.push(`${what} ${who}`);
    const settings = { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', wal_sync_method: 'fdatasync', data_checksums: 'on' };
    return {
      async describeHost() {
        return { hostId, pid: 1, postgresRunning: true };
      },
      async configurePostgres(input) {
        log(`configure dataChecksums=${input.dataChecksums}`);
        return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
      },
      async createFailoverLedger() {},
      async runFailoverWriter(input) {
        log(`writer ${input.nodes.map((n) => n.node).join(',')}`);
        await new Promise((r) => setTimeout(r, 50));
        return { acknowledged: 400, failedWrites: 0, inDoubt: 4, acknowledgedByNode: { n1: 400 }, lastAckBeforeKillAt: new Date().toISOString(), firstAckAfterAt: null, newPrimaryNode: null, outageSeconds: null, stopReason: 'no write acknowledged for 2 s (maxOutageSeconds)' };
      },
      async recoverAfterPowerCut() {
        log('recover');
        return { started: true, seconds: 0.8, detail: '', log: { startedAt: null, redoStartAt: null, redoDoneAt: null, redoDoneLsn: '0/1BBB820', readyAt: null, fatal: null, crashRecovery: true, redoSeconds: 0.1 } };
      },
      async checkClusterAfterPowerCut() {
        log('check');
        return { amcheck: { exitCode: 0, ok: true, problems: 0, relations: [], detail: 'no corruption found' }, dataChecksums: true, checksumFailures: 0, settings };
      },
      async countAfterPowerCut(input) {
        log(`count rounds ${input.rounds.join(',')}`);
        return { ok: true as const, count: { acknowledged: 400 * input.rounds.length, lost, lostSample: Array.from({ length: Math.min(10, lost) }, (_, i) => 1_000_000_001 + i), inDoubtPresent: 2, rowsOnPrimary: 400 * input.rounds.length - lost } };
      },
    };
  }

  it('runs a power-cut round in order: writer, cut, the agent back, crash recovery, count and checks; then teardown', async () => {
    const { calls, saved, outcome, workflowId } = await runDrill(WORKFLOW_TYPES.powerCutDrill, { preset: 'ci' }, powerCutHosts, undefined, (c, h) => fakePowerCutHost(c, h, 0));
    const [client, n1] = powerCutHosts(workflowId);
    expect(outcome).toMatchObject({ status: 'passed', kind: 'power-cut-drill', figures: { rounds: 2, lostCommits: 0, notRecovered: 0, amcheckFailedRounds: 0, droppedPages: 24 } });
    expect(calls).toContain('configure dataChecksums=true n1');
    const round = calls.slice(calls.indexOf('writer n1 client'), calls.indexOf('saveDrillResult'));
    // The count (client) and the checks (n1) run at once: in either order.
    const sorted = (xs: string[]) => [...xs.slice(0, 4), ...xs.slice(4, 6).sort(), ...xs.slice(6, 10), ...xs.slice(10, 12).sort()];
    expect(sorted(round)).toEqual(
      sorted([
        'writer n1 client',
        `cut power ${n1}`,
        `provision ${n1} (power cuts)`,
        'recover n1',
        'check n1',
        'count rounds 1 client',
        'writer n1 client',
        `cut power ${n1}`,
        `provision ${n1} (power cuts)`,
        'recover n1',
        'check n1',
        'count rounds 1,2 client',
      ]),
    );
    const result = saved[0] as unknown as PowerCutDrillResult;
    expect(result.rounds.map((r) => r.cutAfterSeconds)).toEqual([1, 2].map((round) => cutMoment(result.spec.powerCut, round)));
    expect(result.baseline?.settings?.fsync).toBe('on');
    expect(result.verdict).toMatch(/^passed: 2 power cuts \(fsync = on, synchronous_commit = on, wal_sync_method = fdatasync\): 0 acknowledged commits lost/);
    expect(calls.slice(calls.indexOf('saveDrillResult') + 1).sort()).toEqual([client, n1].map((h) => `teardown ${h}`).sort());
  });

  it('fails a power cut that lost acknowledged commits after its first round, naming them, and tears down', async () => {
    const { calls, saved, outcome, workflowId } = await runDrill(WORKFLOW_TYPES.powerCutDrill, { preset: 'ci' }, powerCutHosts, undefined, (c, h) => fakePowerCutHost(c, h, 37));
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const result = saved[0] as unknown as PowerCutDrillResult;
    expect(result.rounds).toHaveLength(1);
    expect(result.verdict).toMatch(/^failed: round 1: 37 acknowledged commits lost by the power cut \(fsync = on, synchronous_commit = on\) \(first ids 1000000001,/);
    expect(result.summary).toMatchObject({ lostCommits: 37, roundsWithLoss: 1 });
    expect(calls.slice(calls.indexOf('saveDrillResult') + 1).sort()).toEqual(powerCutHosts(workflowId).map((h) => `teardown ${h}`).sort());
  });

  it('refuses a power-cut drill on a class that cannot drop writes, and fsync in its settings, before any host exists', async () => {
    for (const [input, field] of [
      [{ preset: 'ci', storageClass: { kind: 'local-disk' } }, 'storageClass.kind'],
      [{ preset: 'ci', postgres: { settings: { fsync: 'off' } } }, 'postgres.settings.fsync'],
    ] as const) {
      const { calls, outcome } = await runDrill(WORKFLOW_TYPES.powerCutDrill, input, () => []);
      expect(((outcome as WorkflowFailedError).cause as { message: string }).message).toContain(field);
      expect(calls).toEqual([]);
    }
  });

  it('runs a partition round in order: cut, promote, heal, fence probe, count, rejoin; the cut healed again before teardown', async () => {
    const { calls, saved, outcome, workflowId } = await runDrill(WORKFLOW_TYPES.partitionDrill, { preset: 'ci', backup: { enabled: false } }, replicaHosts, undefined, (c, h) => fakeReplicaHost(c, h, 0));
    const [client, n1, n2, n3] = replicaHosts(workflowId);
    expect(outcome).toMatchObject({ status: 'passed', kind: 'partition-drill', figures: { rounds: 1, splitBrainCommits: 0, lostCommits: 0 } });
    const round = calls.slice(calls.indexOf('writer routing=timeline client'), calls.indexOf('saveDrillResult'));
    // Both standbys' positions are asked for at once: in either order.
    round.splice(2, 2, ...round.slice(2, 4).sort());
    expect(round).toEqual([
      'writer routing=timeline client',
      // The writer stays with the old primary: only the standbys are on the other side.
      `cut ${n1} | ${n2},${n3}`,
      'standbyPosition n2',
      'standbyPosition n3',
      'promote n2',
      `heal ${n1}`,
      'probe n1 client',
      'count after cut on n1 client',
      'rejoin n1',
    ]);
    const result = saved[0] as unknown as PartitionDrillResult;
    expect(result.rounds[0]).toMatchObject({ ok: true, isolatedNode: 'n1', promotedNode: 'n2', oldPrimary: { fence: { outcome: 'hung' }, action: 'rewound', streaming: true } });
    // Undone after the save: the cut again (gone already: fine), then the hosts.
    const undo = calls.slice(calls.indexOf('saveDrillResult') + 1);
    expect(undo[0]).toBe(`heal ${n1}`);
    expect(undo.slice(1).sort()).toEqual([client, n1, n2, n3].map((h) => `teardown ${h}`).sort());
  });

  it('cuts the writer off with the standbys when partition.cutWriter is true', async () => {
    const { calls, workflowId } = await runDrill(
      WORKFLOW_TYPES.partitionDrill,
      { preset: 'ci', backup: { enabled: false }, partition: { cutWriter: true } },
      replicaHosts,
      undefined,
      (c, h) => fakeReplicaHost(c, h, 0),
    );
    const [client, n1, n2, n3] = replicaHosts(workflowId);
    expect(calls).toContain(`cut ${n1} | ${n2},${n3},${client}`);
  });

  it('fails a partition whose old primary acknowledged commits the new one lacks, naming them, yet rejoins it', async () => {
    const { calls, saved, outcome } = await runDrill(WORKFLOW_TYPES.partitionDrill, { preset: 'ci', backup: { enabled: false } }, replicaHosts, undefined, (c, h) => fakeReplicaHost(c, h, 37));
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const cause = (outcome as WorkflowFailedError).cause as { type?: string; message: string };
    expect(cause.type).toBe('VerificationError');
    expect(cause.message).toContain('37 split-brain commits: the old primary n1 acknowledged them after the cut and the new primary n2 lacks them');
    const result = saved[0] as unknown as PartitionDrillResult;
    expect(result.status).toBe('failed');
    expect(result.verdict).toMatch(/^failed: round 1: 37 split-brain commits.*\(1 partition, 37 split-brain commits acknowledged, 37 acknowledged commits lost/);
    expect(result.rounds[0]).toMatchObject({ ok: false, splitBrainCommits: 37, acknowledgedAfterCut: 37, acknowledgedWhileCutting: 2, lostCommits: 37, oldPrimary: { action: 'rewound', streaming: true } });
    expect(calls.indexOf('rejoin n1')).toBeLessThan(calls.indexOf('saveDrillResult'));
  });
});
