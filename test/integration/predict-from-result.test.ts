/**
 * Predicting from a stored result: the demands of a class of a real run (test/fixtures/results/predict-check-1.json,
 * the predict-check preset run once on this machine), the report's predictions from the calibration class and
 * from the previous run of the same spec, and `storage-lab predict --from` on a result file and on a run id.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyEntry, RunHistory } from '../../analysis/history';
import { runPredictions } from '../../analysis/predictions';
import { predictionsMarkdown } from '../../analysis/report/predictions-markdown';
import { DirResultsStore } from '../../lib/results-store';
import { runProcess } from '../../lib/process-runner';
import { demandsFromClass, targetOfClass } from '../../common/model/demands';
import { predict } from '../../common/model/predict';
import type { ExperimentResult } from '../../common/results/result';
import { calibrationPredictions } from '../../common/model/run-predictions';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const fixture = path.join(PROJECT_ROOT, 'test', 'fixtures', 'results', 'predict-check-1.json');
const load = (): ExperimentResult => JSON.parse(readFileSync(fixture, 'utf8')) as ExperimentResult;
const cli = path.join(PROJECT_ROOT, 'dist/client/cli.js');
const storageLab = (args: string[]) => runProcess(process.execPath, [cli, ...args], { timeoutMs: 60_000, okExitCodes: [0, 1, 2] });

describe('demands of a class of a stored run', () => {
  it('are the sampler\'s figures per committed transaction, its own transactions left out', () => {
    const result = load();
    const d = demandsFromClass(result, 'local-disk');
    const c = result.classes['local-disk'].clusters[0];
    const diag = c.diagnostics!;
    const tx = diag.database.xactCommit + diag.database.xactRollback - diag.ownTransactions!;
    expect(d.reads.perTx).toBeCloseTo((diag.cgroupIo!.readIops * diag.seconds) / tx, 12);
    expect(d.cpu.msPerTx).toBeCloseTo((1000 * diag.cpu!.seconds) / tx, 12);
    expect(d.wal.bytesPerTx).toBeCloseTo(diag.wal!.wal_bytes / tx, 9);
    expect(d.device.flushLatencyMs).toBeCloseTo(diag.wal!.wal_sync_time / diag.wal!.wal_sync, 12);
    expect(d.cache).toEqual({ dataBytes: diag.databaseBytes, cacheBytes: diag.memory!.cacheMiB * 2 ** 20, memoryMiB: 768 });
    // Server time by part sums to the active backends over TPS (Little's law).
    const s = d.serverMs!;
    expect(s.cpu + s.pageReads + s.walFsync + s.lock + s.other).toBeCloseTo((1000 * diag.avgActiveSessions) / c.tpsRun!.tps, 9);
    expect(d.client.gapMs).toBe(c.tpsRun!.clientGapMs);
    expect(d.storage).toEqual({ kind: 'local-disk', vcpus: 2, memoryMiB: 768, clients: 64, label: 'local-disk' });
    // The class with the second memory limit says so, for the cache model.
    expect(targetOfClass(result, 'gp3-3000-mem1536')).toMatchObject({ kind: 'emulated-ebs', iops: 3000, memoryMiB: 1536 });
  });

  it('the model gives back the calibration class within the tolerance (source figures consistent)', () => {
    const d = demandsFromClass(load(), 'local-disk');
    const own = predict(d, d.storage);
    expect(Math.abs(own.tps - d.measured.tps) / d.measured.tps).toBeLessThan(0.15);
  });

  it('predicts every other class from the calibration class, beside what it measured', () => {
    const set = calibrationPredictions(load())!;
    expect(set.sourceCheck?.ok).toBe(true);
    expect(set.rows.map((r) => r.className)).toEqual(['gp3-1500', 'gp3-3000', 'gp3-6000', 'gp3-3000-mem1536']);
    for (const r of set.rows) {
      expect(r.problem).toBeUndefined();
      expect(r.errorPct.tps).toBeCloseTo((100 * (r.predicted!.tps - r.measured!.tps)) / r.measured!.tps, 9);
    }
    // More IOPS, more TPS; more memory at the same IOPS, fewer reads, more TPS.
    const tps = Object.fromEntries(set.rows.map((r) => [r.className, r.predicted!.tps]));
    expect(tps['gp3-1500']).toBeLessThan(tps['gp3-3000']);
    expect(tps['gp3-3000']).toBeLessThan(tps['gp3-6000']);
    expect(tps['gp3-3000']).toBeLessThan(tps['gp3-3000-mem1536']);
    const md = predictionsMarkdown({ computedAt: 'now', calibration: set }).join('\n');
    expect(md).toContain('## Predicted vs measured');
    expect(md).toMatch(/Goal: every class's TPS within ±15 %: (met|\*\*missed\*\*)/);
  });

  it('finds the previous run of the same preset and environment in the history and predicts this run from it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-predict-'));
    try {
      const store = new DirResultsStore(dir);
      const previous = load();
      const current: ExperimentResult = { ...load(), runId: 'predict-check-2', startedAt: '2026-12-02T00:00:00.000Z', finishedAt: '2026-12-02T00:30:00.000Z' };
      await store.put(previous.runId, 'result.json', JSON.stringify(previous));
      await new RunHistory(store).record(historyEntry(previous));
      const p = (await runPredictions(store, current))!;
      expect(p.previousRun?.runId).toBe('predict-check-1');
      expect(p.previousRun?.sets.map((s) => s.rows[0].className)).toEqual(Object.keys(current.classes));
      // The same measurements predicting themselves: each class within the source-consistency tolerance.
      for (const s of p.previousRun!.sets) expect(Math.abs(s.rows[0].errorPct.tps!)).toBeLessThan(15);
      // A run of another environment (another memory limit) is not "the previous run of the same spec".
      const other: ExperimentResult = { ...current, spec: { ...current.spec, host: { ...current.spec.host, memoryLimitMiB: 1024 } } };
      expect((await runPredictions(store, other))?.previousRun).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Every recorded predict-check run (predict-check-1 included), held to the goal or to the known-miss list, beside the
// baselines: test/unit/predict-fixtures.test.ts.

describe('storage-lab predict', () => {
  it('--from a result file --target gp3 at 6,000 IOPS prints the demands, the source consistency check, a "predicted:" line and the baselines', async () => {
    const r = await storageLab(['predict', '--from', fixture, '--class', 'local-disk', '--target', '{"kind":"ebs","iops":6000,"throughputMiBps":250}']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^from: run predict-check-1, class local-disk/m);
    expect(r.stdout).toMatch(/source figures consistent \(Little's law\): PASS: the model gives [\d,]+ TPS on the source's own storage/);
    expect(r.stdout).toMatch(/^ {2}baselines: cap ÷ I\/O [\d,]+ TPS \(IOPS cap 6,000 ÷ [\d.]+ I\/O operations per transaction at the source\); clients × TPS [\d,]+ TPS/m);
    expect(r.stdout).toMatch(/^predicted: [\d,]+ TPS \([\d,]+-[\d,]+\), mean latency [\d.]+ ms, p95 [\d.]+ ms \(bound by [^,]+, \d+ % busy\)$/m);
    expect(r.stdout).toMatch(/assumption: AWS: gp3 baseline/);
  });

  it('--from a run id finds its result.json in the results store', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-predict-'));
    try {
      await new DirResultsStore(dir).put('predict-check-1', 'result.json', readFileSync(fixture, 'utf8'));
      const r = await storageLab(['predict', '--from', 'predict-check-1', '--results-dir', dir, '--target', '[{"kind":"emulated-ebs","iops":1500},{"kind":"local-disk","vcpus":4}]', '--json']);
      expect(r.exitCode).toBe(0);
      const out = JSON.parse(r.stdout) as { sourceCheck: { ok: boolean }; predictions: { tps: number; target: { kind: string } }[] };
      expect(out.predictions.map((p) => p.target.kind)).toEqual(['emulated-ebs', 'local-disk']);
      expect(out.predictions[0].tps).toBeLessThan(out.predictions[1].tps);
      expect(out.sourceCheck.ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--reference prints gp3 and NVMe predicted from each other, beside 1,734 and 16,030', async () => {
    const r = await storageLab(['predict', '--reference']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^gp3 from nvme: predicted: [\d,]+ TPS/m);
    expect(r.stdout).toMatch(/published 1,734 TPS, 36.9 ms: TPS error [+-][\d.]+ %/);
    expect(r.stdout).toMatch(/published 16,030 TPS, 4 ms: TPS error [+-][\d.]+ %/);
    // NVMe with and without the standby's round trip, side by side.
    expect(r.stdout).toMatch(/^ {2}0 ms +[\d,]+ TPS \(\+[\d.]+ %\) +[\d,]+ TPS/m);
    expect(r.stdout).toMatch(/^ {2}1 ms \(used\) +15,704 TPS \(-2\.0 %\)/m);
  });

  it('refuses a bad target with exit code 2, naming the field', async () => {
    const r = await storageLab(['predict', '--from', fixture, '--target', '{"kind":"ebs","iops":-5}']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/iops: must be positive/);
    const none = await storageLab(['predict', '--from', 'no-such-run', '--results-dir', os.tmpdir(), '--target', '{"kind":"ebs"}']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/no such file, and no result.json/);
  });
});
