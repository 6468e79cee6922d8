/**
 * A run's results folder belongs to that run: two workflow ids that differ only in characters outside
 * [A-Za-z0-9._-] name one folder (`a/b`, `a_b`), and the second may not write into the first's results; nor may a new
 * run started under a finished run's workflow id (another execution). The folder store on real files, the S3 store on
 * moto's server, and the results activities as the control worker runs them.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DirResultsStore, RUN_CLAIM_KEY, type ResultsStore } from '../../lib/results-store';
import { S3ResultsStore } from '../../lib/s3-results-store';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createResultsActivities } from '../../activities/control/results';
import { resolveSpec } from '../../common/input/resolve';
import { startMoto, type Moto } from '../helpers/moto';

/** What each store must do with a run, an impostor mapping to its folder, and a reserved run. */
async function claims(store: ResultsStore): Promise<void> {
  await store.put('exp-1/restore-drill', 'result.json', '{"run":"the drill"}');
  await store.put('exp-1/restore-drill', 'report.md', 'the drill');
  // exp-1_restore-drill is stored in the same folder: refused, non-retryable by name, naming the run it belongs to.
  await expect(store.put('exp-1_restore-drill', 'result.json', '{"run":"an impostor"}')).rejects.toMatchObject({
    name: 'UnsafeIdError',
    message: expect.stringContaining('belongs to run "exp-1/restore-drill"'),
  });
  expect(await store.get('exp-1/restore-drill', 'result.json')).toBe('{"run":"the drill"}');
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
      await claims(store);
      expect(readFileSync(path.join(root, 'exp-1_restore-drill', RUN_CLAIM_KEY), 'utf8')).toBe('exp-1/restore-drill');
      expect(readdirSync(path.join(root, 'exp-1_restore-drill')).sort()).toEqual([RUN_CLAIM_KEY, 'clusters', 'report.md', 'result.json'].sort());
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
      await claims(new S3ResultsStore(moto.clients.s3, { bucket: 'claims', prefix: 'storage-lab/results' }));
    });
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
