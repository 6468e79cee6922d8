/**
 * The durability drills for real, at tiny sizes: real control worker, host agents, Postgres, WAL-G (the default) and
 * kill -9, on a folder store. A restore to a time between two marker rows is exact; a missing archived WAL segment
 * fails the restore drill with a clear verdict naming it, in bounded time, and wal-verify names it too; an experiment
 * cluster with durability on archives WAL and is backed up; five failovers in a row lose no acknowledged commit under
 * ANY 1, and the archive each primary in turn fed stays continuous across the six timelines (wal-verify integrity
 * timeline).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { backupsDirFor } from '../../lib/lab-paths';
import { runFolderName } from '../../lib/results-store';
import { WalG } from '../../lib/walg';
import type { DrillResult, FailoverDrillResult, RestoreDrillResult } from '../../common/results/drill-result';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { runInOwnLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';
import { NO_PHASES } from '../helpers/phases';

describe('durability drills (integration)', () => {
  type Drill<R extends DrillResult> = { lab: TestLab; workflowId: string; outcome: unknown; result: R; seconds: number };
  // The four cases are independent runs, each in a lab of its own (home, control worker, hosts: its leftover check sees
  // only its own), all started at once here so their waits overlap; each case awaits its own run and checks it.
  const labs: TestLab[] = [];
  let runs: {
    restore: Promise<Drill<RestoreDrillResult>>;
    missingWal: Promise<Drill<RestoreDrillResult>>;
    durability: Promise<{ lab: TestLab; workflowId: string; summary: unknown }>;
    failover: Promise<Drill<FailoverDrillResult>>;
  };
  beforeAll(() => {
    const inLab = <T>(name: string, body: (lab: TestLab) => Promise<T>) => runInOwnLab(labs, name, body);
    runs = {
      restore: inLab('drills-restore', (lab) => drill<RestoreDrillResult>(lab, WORKFLOW_TYPES.restoreDrill, { preset: 'ci' })),
      missingWal: inLab('drills-missing-wal', (lab) =>
        drill<RestoreDrillResult>(lab, WORKFLOW_TYPES.restoreDrill, { preset: 'ci', target: 'lsn', restoreTimeoutSeconds: 60, inject: { missingWalSegment: true } }),
      ),
      durability: inLab('drills-durability', async (lab) => {
        const handle = await lab.startExperiment({
          preset: 'ci',
          storageClasses: { gp3: null },
          compare: null,
          durability: { enabled: true, archiveTimeoutSeconds: 5 },
          workload: { durationSeconds: 2, warmupSeconds: 0 },
          phases: NO_PHASES,
        });
        return { lab, workflowId: handle.workflowId, summary: await handle.result() };
      }),
      // The store is kept, to prove in its case that the check across timelines fails when the archive has a gap.
      failover: inLab('drills-failover', (lab) => drill<FailoverDrillResult>(lab, WORKFLOW_TYPES.failoverDrill, { preset: 'ci', rounds: 5, backup: { keep: true } })),
    };
  });
  afterAll(async () => {
    if (runs) await Promise.allSettled(Object.values(runs));
    await Promise.all(labs.map((lab) => lab.close()));
  });

  async function drill<R extends DrillResult>(lab: TestLab, type: string, input: Record<string, unknown>): Promise<Drill<R>> {
    const workflowId = uniqueId(type);
    const started = Date.now();
    const handle = await lab.client.workflow.start(type, { taskQueue: lab.taskQueue, workflowId, args: [input] });
    const outcome = await handle.result().then(
      (v) => v as unknown,
      (e) => e as unknown,
    );
    const file = path.join(lab.paths.resultsDir, runFolderName(workflowId), 'result.json');
    const result = JSON.parse(readFileSync(file, 'utf8')) as R;
    return { lab, workflowId, outcome, result, seconds: (Date.now() - started) / 1000 };
  }

  function expectNothingLeft(lab: TestLab, workflowId: string, hostIds: string[]): void {
    expect(lab.leftovers(hostIds)).toEqual([]);
    expect(existsSync(path.join(backupsDirFor(lab.paths.hostsDir), runFolderName(workflowId)))).toBe(false);
  }

  it('restores to a time between two marker rows exactly, verified, and leaves nothing behind', async () => {
    const { lab, workflowId, outcome, result } = await runs.restore;
    expect(result.verdict).toMatch(/^passed/);
    expect(outcome).toMatchObject({ status: 'passed', kind: 'restore-drill' });
    const target = result.target!;
    expect(target.type).toBe('time');
    // Markers were written on both sides of the target; exactly those before it came back.
    expect(target.lastIdBefore).toBeGreaterThan(5);
    expect(result.failurePoint!.lastMarkerId).toBeGreaterThan(target.lastIdBefore + 5);
    expect(result.verification.ledger).toMatchObject({ ok: true, maxPresentId: target.lastIdBefore, presentRows: target.lastIdBefore, idsAfterTarget: 0 });
    expect(result.recovery!.detail).toMatch(/recovery stopping before commit/);
    // pgbench wrote after the target too: equal checksums mean recovery stopped where it should.
    const tables = result.verification.checksums!.tables;
    expect(Object.keys(tables).sort()).toEqual(['pgbench_accounts', 'pgbench_branches', 'pgbench_history', 'pgbench_tellers']);
    for (const t of Object.values(tables)) expect(t.restored).toEqual(t.expected);
    expect(tables.pgbench_history.restored.rows).toBeGreaterThan(0);
    for (const check of ['checksums', 'amcheck', 'archiveContinuity', 'backupVerify'] as const) expect(result.verification[check]!.ok).toBe(true);
    const rto = result.rto!;
    for (const part of [rto.fetchSeconds, rto.replaySeconds, rto.promoteSeconds]) expect(part).toBeGreaterThan(0);
    expect(rto.totalSeconds).toBeCloseTo(rto.fetchSeconds + rto.replaySeconds + rto.promoteSeconds, 5);
    expect(result.rpo!.seconds).toBeGreaterThanOrEqual(0);
    expect(result.backupTool).toEqual({ name: 'wal-g', version: '3.0.8' });
    expect(result.backup).toMatchObject({ tool: 'wal-g', type: 'full' });
    // The repository check in WAL-G's own words, timed.
    expect(result.verification.backupVerify).toMatchObject({ ok: true, tool: 'wal-g', walInvalid: 0, missingWal: [] });
    expect(result.verification.backupVerify!.detail).toMatch(/^wal-g wal-verify: integrity OK, timeline OK; \d+ segments found/);
    expect(result.verification.backupVerify!.seconds).toBeGreaterThan(0);
    const report = readFileSync(path.join(lab.paths.resultsDir, runFolderName(workflowId), 'report.md'), 'utf8');
    expect(report).toContain('backups with wal-g 3.0.8');
    expect(report).toMatch(/\| repository check \([\d.]+ s\) \| PASS \| wal-g wal-verify: integrity OK/);
    expect(report).not.toContain('pgbackrest');
    expectNothingLeft(lab, workflowId, [hostIdFor(workflowId, 'source', 0), hostIdFor(workflowId, 'restore', 0)]);
  });

  it('fails with a clear verdict, in bounded time, when an archived WAL segment is missing', async () => {
    const { lab, workflowId, outcome, result, seconds } = await runs.missingWal;
    expect(seconds).toBeLessThan(240);
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    const cause = (outcome as WorkflowFailedError).cause as { type?: string; message: string };
    expect(cause.type).toBe('VerificationError');
    const segment = result.injectedMissingSegment!;
    expect(segment).toMatch(/^[0-9A-F]{24}$/);
    expect(result.status).toBe('failed');
    expect(result.verdict).toContain('recovery ended before configured recovery target was reached');
    expect(result.verdict).toContain(`missing from the archive: ${segment}`);
    expect(cause.message).toContain(segment);
    expect(result.verification.archiveContinuity).toMatchObject({ ok: false, missing: [segment] });
    // WAL-G's own check finds the same gap.
    expect(result.verification.backupVerify).toMatchObject({ ok: false, tool: 'wal-g', missingWal: [segment] });
    expect(result.rto).toBeNull();
    expectNothingLeft(lab, workflowId, [hostIdFor(workflowId, 'source', 0), hostIdFor(workflowId, 'restore', 0)]);
  });

  it('archives WAL and takes a base backup of an experiment cluster when durability is on', async () => {
    const { lab, workflowId, summary } = await runs.durability;
    expect(summary).toMatchObject({ status: 'completed' });
    const result = JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(workflowId), 'result.json'), 'utf8'));
    const cluster = result.classes['local-disk'].clusters[0];
    expect(cluster.phases.durability.backup).toMatchObject({ tool: 'wal-g', type: 'full' });
    expect(cluster.phases.durability.backupTool).toEqual({ name: 'wal-g', version: '3.0.8' });
    const report = readFileSync(path.join(lab.paths.resultsDir, runFolderName(workflowId), 'report.md'), 'utf8');
    expect(report).toMatch(new RegExp(`\\| ${cluster.hostId} \\| wal-g 3\\.0\\.8 \\| 5 s \\| full \\|`));
    expect(cluster.phases.durability.backup.databaseBytes).toBeGreaterThan(20 * 2 ** 20);
    expect(cluster.tps).toBeGreaterThan(0);
    expect(lab.leftovers([cluster.hostId])).toEqual([]);
    expect(existsSync(path.join(backupsDirFor(lab.paths.hostsDir), runFolderName(`${workflowId}/local-disk-0`)))).toBe(false);
  });

  it('fails over five times in a row (kill -9, promote, pg_rewind) with no acknowledged commit lost', async () => {
    // The store was kept, to prove below that the check across timelines fails when the archive has a gap.
    const { lab, workflowId, outcome, result } = await runs.failover;
    expect(result.verdict).toMatch(/^passed/);
    expect(outcome).toMatchObject({ status: 'passed', kind: 'failover-drill' });
    expect(result.synchronousStandbyNames).toBe('ANY 1 (n2, n3)');
    expect(result.rounds).toHaveLength(5);
    let acknowledged = 0;
    result.rounds.forEach((round, i) => {
      expect(round.ok).toBe(true);
      expect(round.lostCommits).toBe(0);
      // Each round kills the primary the previous one promoted.
      if (i > 0) expect(round.killedNode).toBe(result.rounds[i - 1].promotedNode);
      expect(round.promotedNode).not.toBe(round.killedNode);
      expect(round.writer.newPrimaryNode).toBe(round.promotedNode);
      expect(round.rtoSeconds).toBeGreaterThan(0);
      expect(Date.parse(round.writer.firstAckAfterAt!)).toBeGreaterThan(Date.parse(round.writer.lastAckBeforeKillAt!));
      expect(['rewound', 'rebuilt']).toContain(round.oldPrimary.action);
      // Every round's check covers the commits of all earlier rounds too.
      expect(round.acknowledgedTotal).toBeGreaterThan(acknowledged);
      acknowledged = round.acknowledgedTotal;
    });
    expect(result.summary).toMatchObject({ rounds: 5, lostCommits: 0 });
    // Every node archived through WAL-G; each promotion began a timeline and the archive follows them all.
    const archive = result.archive!;
    expect(archive.backupTool).toEqual({ name: 'wal-g', version: '3.0.8' });
    expect(archive.backup).toMatchObject({ tool: 'wal-g', type: 'full' });
    expect(archive.timeline).toBe(6);
    expect(archive.throughSegment).toMatch(/^00000006[0-9A-F]{16}$/);
    expect(archive.check).toMatchObject({ ok: true, tool: 'wal-g', walInvalid: 0, missingWal: [] });
    expect(archive.check!.detail).toMatch(/^wal-g wal-verify: integrity OK, timeline OK; .*timeline 6, highest in storage 6$/);
    expect(result.verdict).toContain(`archive continuous through ${archive.throughSegment} (wal-g)`);
    // Each round's new primary archived its first segment on its new timeline (timelines 2..6).
    expect(result.rounds.map((r) => r.archivedOnNewTimeline!.slice(0, 8))).toEqual(['00000002', '00000003', '00000004', '00000005', '00000006']);

    // The same check over the kept store, with one segment of a middle timeline removed, names the gap.
    const store = { kind: 'folder' as const, path: path.join(backupsDirFor(lab.paths.hostsDir), runFolderName(workflowId)) };
    const checker = new WalG({ hostDir: mkdtempSync(path.join(lab.paths.home, 'walg-check-')), dataDir: '/nonexistent', socketDir: '/nonexistent', postgres: { host: '127.0.0.1', port: 1 }, runAs: {} }, store);
    await checker.configure({ compression: 'lz4' });
    const onTimeline3 = (await checker.archivedWal()).find((w) => w.segment.startsWith('00000003'))!;
    expect(onTimeline3).toBeDefined();
    await checker.removeArchivedSegment(onTimeline3);
    const broken = await checker.checkRepository(archive.throughSegment!);
    expect(broken.ok).toBe(false);
    expect(broken.missingWal).toEqual([onTimeline3.segment]);
    rmSync(store.path, { recursive: true, force: true });
    rmSync(`${store.path}.labels.json`, { force: true });
    const hosts = [hostIdFor(workflowId, 'client', 0), ...[1, 2, 3].map((i) => hostIdFor(workflowId, 'node', i))];
    expectNothingLeft(lab, workflowId, hosts);
  });
});
