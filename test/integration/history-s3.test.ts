/**
 * The run history over the S3 results store (moto's server on 127.0.0.1): the same index, baseline and pins as in
 * a folder, so a lab on AWS compares nightly runs the same way.
 */
import { aggregate } from '../../analysis/aggregate';
import { historyEntry, RunHistory } from '../../analysis/history';
import { S3ResultsStore } from '../../lib/s3-results-store';
import type { ClusterResult } from '../../common/results/result';
import { resolveSpec } from '../../common/input/resolve';
import { startMoto, type Moto } from '../helpers/moto';
import { NO_PHASES } from '../helpers/phases';

const BUCKET = 'history-test';
const GP3_ONLY = {
  preset: 'ci',
  storageClasses: { 'local-disk': null },
  compare: null,
  phases: NO_PHASES,
};

function finishedRun(runId: string, preset: 'ci' | 'nightly', tps: number, finishedAt: string) {
  const spec = resolveSpec(preset === 'ci' ? GP3_ONLY : { ...GP3_ONLY, preset });
  const cluster: ClusterResult = {
    hostId: `${runId}-gp3-0`,
    className: 'gp3',
    index: 0,
    status: 'ok',
    postgresVersion: '15.18',
    emulated: true,
    startedAt: finishedAt,
    finishedAt,
    tpsRun: {
      tps,
      transactions: tps * 5,
      failedTransactions: 0,
      durationSeconds: 5,
      clients: spec.workload.clients,
      threads: 2,
      latencyMs: { mean: (1000 * spec.workload.clients) / tps, p50: 1, p95: 2, p99: 3 },
      tpsSeries: [tps, tps + 20, tps - 20, tps, tps + 10],
      pgbenchVersion: '15.18',
    },
    failedAttempts: [],
    phases: {},
  };
  const environment = { cpus: 2, memoryMiB: 24106, kernel: 'test', provider: 'local' };
  return aggregate({ runId, spec, clusters: [cluster], startedAt: finishedAt, finishedAt, environment, cancelled: false });
}

describe('run history in S3 (moto)', () => {
  let moto: Moto;
  beforeAll(async () => {
    moto = await startMoto();
    await moto.createBucket(BUCKET);
  });
  afterAll(async () => {
    await moto?.stop();
  });

  it('indexes runs by preset, picks the baseline and keeps pins', async () => {
    const store = new S3ResultsStore(moto.clients.s3, { bucket: BUCKET, prefix: 'storage-lab/results' });
    const history = new RunHistory(store);
    for (const [runId, preset, tps, at] of [
      ['exp-ci/1', 'ci', 5000, '2026-01-01T00:00:00Z'],
      ['exp-ci/2', 'ci', 5100, '2026-01-02T00:00:00Z'],
      ['exp-ci/3', 'ci', 4900, '2026-01-03T00:00:00Z'],
      ['nightly-1/experiment', 'nightly', 3000, '2026-01-03T00:00:00Z'],
    ] as const)
      await history.record(historyEntry(finishedRun(runId, preset, tps, at)));

    expect(await history.presets()).toEqual(['ci', 'nightly']);
    expect((await history.entries('ci')).map((e) => e.runId)).toEqual(['exp-ci/1', 'exp-ci/2', 'exp-ci/3']);
    expect((await history.entries('nightly')).map((e) => e.runId)).toEqual(['nightly-1/experiment']);
    const candidate = historyEntry(finishedRun('exp-ci/4', 'ci', 2500, '2026-01-04T00:00:00Z'));
    expect((await history.baseline(candidate, 2, 0.15)).entries.map((e) => e.runId)).toEqual(['exp-ci/2', 'exp-ci/3']);
    await history.setPins('ci', candidate.envKey, ['exp-ci/1']);
    expect(await history.baseline(candidate, 2, 0.15)).toMatchObject({ pinned: true, entries: [{ runId: 'exp-ci/1' }] });
    // The index lives beside the runs, under the results prefix.
    expect(await store.runs()).toContain('_history');
  });
});
