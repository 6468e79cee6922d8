/**
 * A run's results folder belongs to that run: two workflow ids that differ only in characters outside
 * [A-Za-z0-9._-] name one folder (`a/b`, `a_b`), and the second may not write into the first's results. The folder
 * store on real files, the S3 store on moto's server.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DirResultsStore, RUN_CLAIM_KEY, type ResultsStore } from '../../lib/results-store';
import { S3ResultsStore } from '../../lib/s3-results-store';
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
