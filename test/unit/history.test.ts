import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { aggregate } from '../../analysis/aggregate';
import { environmentKey, historyEntry, RunHistory, type HistoryEntry } from '../../analysis/history';
import { DirResultsStore } from '../../lib/results-store';
import type { ClusterResult } from '../../common/results/result';
import { type ExperimentInput } from '../../common/input/spec';
import { resolveSpec } from '../../common/input/resolve';
import { NO_PHASES } from '../helpers/phases';

const machine = { cpus: 2, memoryMiB: 24106, kernel: 'test', provider: 'local' };
const gp3Only: ExperimentInput = {
  preset: 'ci',
  storageClasses: { 'local-disk': null },
  compare: null,
  phases: NO_PHASES,
};

/** A finished run of `input` whose gp3 cluster measured `tps` every second. */
function finishedRun(runId: string, input: ExperimentInput, tps: number, finishedAt: string, status: ClusterResult['status'] = 'ok') {
  const spec = resolveSpec(input);
  const cluster: ClusterResult = {
    hostId: `${runId}-gp3-0`,
    className: 'gp3',
    index: 0,
    status,
    postgresVersion: '15.18',
    emulated: true,
    startedAt: finishedAt,
    finishedAt,
    tpsRun:
      status === 'ok'
        ? {
            tps,
            transactions: tps * 5,
            failedTransactions: 0,
            durationSeconds: 5,
            clients: 8,
            threads: 2,
            latencyMs: { mean: 8000 / tps, p50: 1, p95: 2, p99: 3 },
            tpsSeries: [tps, tps + 10, tps - 10, tps, tps + 5],
            pgbenchVersion: '15.18',
          }
        : undefined,
    failedAttempts: [],
    phases: {},
  };
  return aggregate({ runId, spec, clusters: [cluster], startedAt: finishedAt, finishedAt, environment: machine, cancelled: false });
}

describe('run history', () => {
  let dir: string;
  let history: RunHistory;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'history-test-'));
    history = new RunHistory(new DirResultsStore(dir));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keys the environment on host shape, PostgreSQL major, memory limit and workload, not on storage limits', () => {
    const normal = historyEntry(finishedRun('a', gp3Only, 5000, '2026-01-01T00:00:00Z'));
    const halfIops = historyEntry(
      finishedRun('b', { ...gp3Only, storageClasses: { 'local-disk': null, gp3: { iops: 1500 } } }, 2500, '2026-01-02T00:00:00Z'),
    );
    expect(normal.envKey).toMatch(/^local-2cpu-24gib-pg15-mem384-w[0-9a-z]{7}$/);
    expect(halfIops.envKey).toBe(normal.envKey);
    expect(halfIops.environment.storage.gp3.iops).toBe(1500);
    expect(normal.environment.storage.gp3.iops).toBe(3000);
    const moreClients = historyEntry(finishedRun('c', { ...gp3Only, workload: { clients: 16 } }, 5000, '2026-01-03T00:00:00Z'));
    expect(moreClients.envKey).not.toBe(normal.envKey);
    const moreMemory = historyEntry(finishedRun('d', { ...gp3Only, host: { memoryLimitMiB: 512 } }, 5000, '2026-01-03T00:00:00Z'));
    expect(moreMemory.envKey).not.toBe(normal.envKey);
    expect(environmentKey({ ...normal.environment, postgresMajor: 16 })).not.toBe(normal.envKey);
    expect(normal.classes.gp3.units).toEqual([
      { runId: 'a', hostId: 'a-gp3-0', tps: 5000, tpsSeries: [5000, 5010, 4990, 5000, 5005] },
    ]);
  });

  it('indexes runs by preset and picks the latest comparable, completed, not-regressed runs as the baseline', async () => {
    const entries: HistoryEntry[] = [];
    for (let i = 1; i <= 5; i++) entries.push(historyEntry(finishedRun(`run-${i}`, gp3Only, 5000 + i, `2026-01-0${i}T00:00:00Z`)));
    entries.push(historyEntry(finishedRun('failed', gp3Only, 0, '2026-01-06T00:00:00Z', 'failed')));
    entries.push(historyEntry(finishedRun('other-env', { ...gp3Only, workload: { clients: 4, threads: 2 } }, 9000, '2026-01-06T00:00:00Z')));
    entries.push(historyEntry(finishedRun('nightly-1', { preset: 'nightly' }, 7000, '2026-01-06T00:00:00Z')));
    const regressed = historyEntry(finishedRun('bad', gp3Only, 2500, '2026-01-07T00:00:00Z'));
    regressed.verdict = { verdict: 'regressed', summary: 'gp3: regressed', baselineRunIds: [], pinned: false, effects: { gp3: -0.5 } };
    entries.push(regressed);
    for (const e of entries.reverse()) await history.record(e);

    expect(await history.presets()).toEqual(['ci', 'nightly']);
    expect((await history.entries('ci')).map((e) => e.runId)).toEqual([
      'run-1', 'run-2', 'run-3', 'run-4', 'run-5', 'failed', 'other-env', 'bad',
    ]);
    const candidate = historyEntry(finishedRun('new', gp3Only, 5000, '2026-01-08T00:00:00Z'));
    const latest = await history.baseline(candidate, 3, 0.15);
    expect(latest).toEqual({ entries: expect.any(Array), pinned: false });
    expect(latest.entries.map((e) => e.runId)).toEqual(['run-3', 'run-4', 'run-5']);
    // A run is never its own baseline, and runs after it do not count.
    const early = historyEntry(finishedRun('run-2', gp3Only, 5002, '2026-01-02T00:00:00Z'));
    expect((await history.baseline(early, 10, 0.15)).entries.map((e) => e.runId)).toEqual(['run-1']);
  });

  it('leaves out of the baseline a run with a drop the verdict could not confirm (inconclusive beyond minEffect)', async () => {
    for (let i = 1; i <= 5; i++) {
      const e = historyEntry(finishedRun(`run-${i}`, gp3Only, 5000, `2026-01-0${i}T00:00:00Z`));
      // run-4 dropped 30 % but the test could not tell; run-5 moved 5 %, within what counts.
      if (i === 4) e.verdict = { verdict: 'inconclusive', summary: '', baselineRunIds: [], pinned: false, effects: { gp3: -0.3 } };
      if (i === 5) e.verdict = { verdict: 'inconclusive', summary: '', baselineRunIds: [], pinned: false, effects: { gp3: -0.05 } };
      await history.record(e);
    }
    const candidate = historyEntry(finishedRun('new', gp3Only, 5000, '2026-01-08T00:00:00Z'));
    expect((await history.baseline(candidate, 3, 0.15)).entries.map((e) => e.runId)).toEqual(['run-2', 'run-3', 'run-5']);
    // With a larger minimum effect the 30 % drop is no longer beyond it, and the run counts.
    expect((await history.baseline(candidate, 3, 0.4)).entries.map((e) => e.runId)).toEqual(['run-3', 'run-4', 'run-5']);
  });

  it('uses a pinned baseline whole, for its preset and environment only', async () => {
    for (let i = 1; i <= 4; i++) await history.record(historyEntry(finishedRun(`run-${i}`, gp3Only, 5000, `2026-01-0${i}T00:00:00Z`)));
    const candidate = historyEntry(finishedRun('new', gp3Only, 5000, '2026-01-08T00:00:00Z'));
    await history.setPins('ci', candidate.envKey, ['run-1', 'run-2', 'run-1']);
    expect((await history.pins('ci', candidate.envKey))?.runIds).toEqual(['run-1', 'run-2']);
    const pinned = await history.baseline(candidate, 1, 0.15);
    expect(pinned.pinned).toBe(true);
    expect(pinned.entries.map((e) => e.runId)).toEqual(['run-1', 'run-2']);
    expect(await history.pins('nightly', candidate.envKey)).toBeNull();
    await history.setPins('ci', candidate.envKey, []);
    expect((await history.baseline(candidate, 2, 0.15)).pinned).toBe(false);
  });
});
