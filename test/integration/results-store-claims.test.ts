/**
 * A run's results folder belongs to that run: two workflow ids never name one folder (`a/b`, `a_b`: escaped
 * injectively), a folder from before the escaping that two ids shared is found only by the run its claim names, a
 * claim made by another refuses the run naming it, and a new run started under a finished run's workflow id (another
 * execution) may not write into it; claims are atomic (exactly one of several writers at once wins). A backup store is
 * claimed the same way by the workflow that prepares it (a label linked into place, or an S3 object put with
 * If-None-Match), and only its owner removes it. The folder store on real files, the S3 store on moto's server, and
 * the activities as the control worker runs them.
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DirResultsStore, RUN_CLAIM_KEY, type ResultsStore } from '../../lib/results-store';
import { S3ResultsStore } from '../../lib/s3-results-store';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createResultsActivities } from '../../activities/control/results';
import { createBackupStoreActivities } from '../../activities/control/backup-stores';
import { runFolderName } from '../../common/core/ids';
import type { ResolvedBackupStore } from '../../common/input/backup-store';
import { resolveSpec } from '../../common/input/resolve';
import { registerLabRoot } from '../../lib/lab-fs';
import { backupsDirFor } from '../../lib/lab-paths';
import { startMoto, type Moto } from '../helpers/moto';

/** What each store must do with runs whose ids escaped alike before, a folder from before, claims, a reserved run. */
async function claims(store: ResultsStore, plantLegacy: (folder: string, claim: string) => Promise<void>): Promise<void> {
  await store.put('exp-1/restore-drill', 'result.json', '{"run":"the drill"}');
  await store.put('exp-1/restore-drill', 'report.md', 'the drill');
  // exp-1_restore-drill has a folder of its own now: it writes there, and reads none of the drill's results.
  await store.put('exp-1_restore-drill', 'result.json', '{"run":"another run"}');
  expect(await store.get('exp-1/restore-drill', 'result.json')).toBe('{"run":"the drill"}');
  expect(await store.get('exp-1_restore-drill', 'result.json')).toBe('{"run":"another run"}');
  expect(store.location('exp-1/restore-drill')).toMatch(/exp-1_2frestore-drill$/);
  expect(store.location('exp-1_restore-drill')).toMatch(/exp-1__restore-drill$/);
  expect(await store.runs()).toEqual(expect.arrayContaining(['exp-1/restore-drill', 'exp-1_restore-drill']));
  // A folder from before the escaping (one name for old/run and old_run) is found by the run its claim names, only.
  await plantLegacy('old_run', 'old/run');
  expect(await store.get('old/run', 'result.json')).toBe('{"legacy":true}');
  expect(await store.get('old_run', 'result.json')).toBeNull();
  // A claim someone else made at a run's folder: refused, non-retryable by name, naming the run it belongs to.
  await plantLegacy(runFolderName('exp-2'), 'exp-2-impostor');
  await expect(store.put('exp-2', 'result.json', '{"run":"exp-2"}')).rejects.toMatchObject({
    name: 'UnsafeIdError',
    message: expect.stringContaining('belongs to run "exp-2-impostor"'),
  });
  // Claims are atomic: of eight executions claiming one run at once, exactly one wins, and every one sees the winner.
  const seen = await Promise.all(Array.from({ length: 8 }, (_, i) => store.claim('exp-3', '.run-execution', `execution-${i}`)));
  expect(new Set(seen).size).toBe(1);
  // The claim is not a result: listing the run's files leaves it out.
  await store.put('exp-1/restore-drill', 'clusters/h1.json', '{}');
  expect(await store.list('exp-1/restore-drill', 'clusters')).toEqual(['clusters/h1.json']);
  // The lab's own index is a run of its own, which no workflow id reaches.
  await store.put({ reserved: '_history' }, 'entries/a.json', '{}');
  await store.put({ reserved: '_history' }, 'entries/b.json', '{}');
}

describe('results stores: a run folder belongs to one run', () => {
  it('in a folder', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-claims-'));
    try {
      const store = new DirResultsStore(root);
      await claims(store, async (folder, claim) => {
        mkdirSync(path.join(root, folder));
        writeFileSync(path.join(root, folder, RUN_CLAIM_KEY), claim);
        writeFileSync(path.join(root, folder, 'result.json'), '{"legacy":true}');
      });
      expect(readFileSync(path.join(root, 'exp-1_2frestore-drill', RUN_CLAIM_KEY), 'utf8')).toBe('exp-1/restore-drill');
      expect(readdirSync(path.join(root, 'exp-1_2frestore-drill')).sort()).toEqual([RUN_CLAIM_KEY, 'clusters', 'report.md', 'result.json'].sort());
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  describe('in S3 (moto)', () => {
    let moto: Moto;
    beforeAll(async () => {
      moto = await startMoto();
      await moto.createBucket('claims');
    });
    afterAll(async () => {
      await moto?.stop();
    });

    it('as in a folder', async () => {
      const put = (Key: string, Body: string) => moto.clients.s3.send(new PutObjectCommand({ Bucket: 'claims', Key, Body }));
      await claims(new S3ResultsStore(moto.clients.s3, { bucket: 'claims', prefix: 'storage-lab/results' }), async (folder, claim) => {
        await put(`storage-lab/results/${folder}/${RUN_CLAIM_KEY}`, claim);
        await put(`storage-lab/results/${folder}/result.json`, '{"legacy":true}');
      });
    });

    it('claims a backup store in S3 with a conditional put: one owner, another refused naming both, only the owner removes', async () => {
      const activities = createBackupStoreActivities({ hostsDir: '/nonexistent/hosts' });
      const store = { kind: 's3' as const, bucket: 'claims', prefix: 'storage-lab/backups', region: 'us-east-1', endpoint: moto.endpoint };
      Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'testing', AWS_SECRET_ACCESS_KEY: 'testing' });
      const as = (workflowId: string, runId: string) => new MockActivityEnvironment({ workflowExecution: { workflowId, runId } });
      const owner = (execution: string) => ({ workflowId: 'drill-s3', execution });
      const executions = ['e1', 'e2', 'e3', 'e4', 'e5'];
      // Five executions of one workflow id at once (a reused id): exactly one gets the store.
      const outcomes = await Promise.all(
        executions.map((e) => as('drill-s3', e).run(activities.prepareBackupStore, { runId: 'drill-s3', store, owner: owner(e) }).then(() => e, (err: Error) => err)),
      );
      const winners = outcomes.filter((o): o is string => typeof o === 'string');
      expect(winners).toHaveLength(1);
      for (const o of outcomes.filter((o): o is Error => typeof o !== 'string')) {
        expect(o).toMatchObject({ type: 'OwnedByAnotherRunError', nonRetryable: true });
        expect(o.message).toMatch(new RegExp(`s3://claims/storage-lab/backups/drill-s3 belongs to workflow "drill-s3" \\(execution ${winners[0]}\\).*workflow "drill-s3" \\(execution e\\d\\)`));
      }
      const loser = executions.find((e) => e !== winners[0])!;
      expect(await as('drill-s3', loser).run(activities.removeBackupStore, { runId: 'drill-s3', store, owner: owner(loser) })).toMatch(/^left s3:\/\/claims\/storage-lab\/backups\/drill-s3 alone: /);
      expect(await as('drill-s3', winners[0]).run(activities.removeBackupStore, { runId: 'drill-s3', store, owner: owner(winners[0]) })).toMatch(/in place \(the bucket's lifecycle rules expire it\)/);
      // The owner record lies beside the run's prefix, outside the tool's repository.
      const record = await moto.clients.s3.send(new GetObjectCommand({ Bucket: 'claims', Key: 'storage-lab/backups/drill-s3.owner.json' }));
      expect(JSON.parse(await record.Body!.transformToString())).toMatchObject({ kind: 'backup-store', runId: 'drill-s3', execution: winners[0] });
    });
  });
});

describe('local backup stores are claimed by the workflow that prepares them', () => {
  it('gives x_y and x/y stores of their own; refuses another owner naming both, and only the owner removes a store', async () => {
    const home = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR ?? os.tmpdir(), 'store-claims-'));
    chmodSync(home, 0o755);
    try {
      const hostsDir = path.join(home, 'hosts');
      registerLabRoot(backupsDirFor(hostsDir));
      const activities = createBackupStoreActivities({ hostsDir });
      const as = (workflowId: string, runId: string) => new MockActivityEnvironment({ workflowExecution: { workflowId, runId } });
      const folder = { kind: 'folder' as const };
      const prepare = (workflowId: string, execution: string) => as(workflowId, execution).run(activities.prepareBackupStore, { runId: workflowId, store: folder, owner: { workflowId, execution } });
      const remove = (workflowId: string, execution: string) => as(workflowId, execution).run(activities.removeBackupStore, { runId: workflowId, store: folder, owner: { workflowId, execution } });
      const a = (await prepare('x_y', 'e1')) as ResolvedBackupStore;
      const b = (await prepare('x/y', 'e2')) as ResolvedBackupStore;
      expect([path.basename(a.path), path.basename(b.path)]).toEqual(['x__y', 'x_2fy']);
      expect(await prepare('x_y', 'e1')).toEqual(a); // A retry of the owner.
      // The same id reused by another execution: refused before anything is made, naming both; its undo leaves it.
      await expect(prepare('x_y', 'e9')).rejects.toMatchObject({
        type: 'OwnedByAnotherRunError',
        nonRetryable: true,
        message: expect.stringMatching(/the backup store .*x__y belongs to workflow "x_y" \(execution e1\), claimed at .*; workflow "x_y" \(execution e9\) may not use it: refused, nothing of it touched/),
      });
      expect(await remove('x_y', 'e9')).toMatch(/^left .*x__y alone: /);
      expect(existsSync(a.path)).toBe(true);
      // A workflow may not name another as the owner it acts for.
      await expect(
        as('intruder', 'e5').run(activities.removeBackupStore, { runId: 'x_y', store: folder, owner: { workflowId: 'x_y', execution: 'e1' } }),
      ).rejects.toMatchObject({ type: 'OwnedByAnotherRunError', message: expect.stringContaining('workflow "intruder" named workflow "x_y"') });
      // Each owner removes its own, and only its own.
      expect(await remove('x/y', 'e2')).toMatch(/^removed .*x_2fy$/);
      expect(existsSync(a.path)).toBe(true);
      expect(await remove('x_y', 'e1')).toMatch(/^removed .*x__y$/);
      expect(readdirSync(backupsDirFor(hostsDir))).toEqual([]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('the results activities claim a run folder for one workflow execution', () => {
  it("refuses a new run under a finished run's id before it writes anything, and lets the run's own retries through", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-executions-'));
    try {
      const store = new DirResultsStore(root);
      const activities = createResultsActivities({ results: store });
      const as = (runId: string) => new MockActivityEnvironment({ workflowExecution: { workflowId: 'exp-7', runId } });
      const spec = resolveSpec({ preset: 'ci' });
      await as('execution-a').run(activities.saveSpec, { runId: 'exp-7', spec });
      await as('execution-a').run(activities.saveSpec, { runId: 'exp-7', spec }); // a retry of the same execution
      const before = readFileSync(path.join(root, 'exp-7', 'spec.json'), 'utf8');
      await expect(as('execution-b').run(activities.saveSpec, { runId: 'exp-7', spec: resolveSpec({ preset: 'nightly' }) })).rejects.toMatchObject({
        name: 'UnsafeIdError',
        message: expect.stringMatching(/^workflowId: run "exp-7" finished before \(execution execution-a\) .* would replace them: start the run with another workflow id/),
      });
      expect(readFileSync(path.join(root, 'exp-7', 'spec.json'), 'utf8')).toBe(before);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
