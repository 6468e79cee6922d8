/**
 * Diagnose captures kept in the results store (what diagnoseWorkflow's activity does with one): the capture and its
 * reports under the run, an index entry per capture listed by `storage-lab captures`, and `predict --from` a
 * capture. On a capture of PostgreSQL 15 under the reference's UPDATE workload (test/fixtures/postgres-15).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DirResultsStore } from '../../activities/control/results-store';
import { captureMarkdown, captureText } from '../../activities/diagnose/report';
import { captureHistory, saveCapture } from '../../activities/diagnose/store';
import { runProcess } from '../../activities/lib/process-runner';
import { demandsFromCapture } from '../../common/demands';
import type { DiagnoseCapture } from '../../common/diagnose';
import { PROJECT_ROOT } from '../../infra/lab-paths';

const fixture = path.join(PROJECT_ROOT, 'test', 'fixtures', 'postgres-15', 'diagnose-capture.json');
const capture = (): DiagnoseCapture => JSON.parse(readFileSync(fixture, 'utf8')) as DiagnoseCapture;
const cli = path.join(PROJECT_ROOT, 'dist/client/cli.js');
const storageLab = (args: string[]) => runProcess(process.execPath, [cli, ...args], { timeoutMs: 60_000, okExitCodes: [0, 1, 2] });

describe('diagnose captures', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-captures-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('are stored with their reports and indexed by target, oldest first', async () => {
    const store = new DirResultsStore(dir);
    const first = capture();
    const second = { ...capture(), capturedAt: '2026-12-02T00:00:00.000Z', verdict: 'cpu-bound' as const };
    const other = { ...capture(), target: 'monitor@replica.example:5432/app' };
    await saveCapture(store, 'diagnose-b', second);
    await saveCapture(store, 'diagnose-a', first);
    await saveCapture(store, 'diagnose-c', other);
    for (const f of ['capture.json', 'report.md', 'report.html']) expect(existsSync(path.join(dir, 'diagnose-a', f))).toBe(true);
    const mine = await captureHistory(store, first.target);
    expect(mine.map((e) => e.runId)).toEqual(['diagnose-a', 'diagnose-b']);
    expect(mine[0]).toMatchObject({ verdict: 'storage-bound', target: first.target, tps: first.tps, fsyncMs: first.evidence.fsyncMs });
    expect((await captureHistory(store)).map((e) => e.runId).sort()).toEqual(['diagnose-a', 'diagnose-b', 'diagnose-c']);

    const listed = await storageLab(['captures', '--results-dir', dir, '--target', first.target]);
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^captured\s+target\s+verdict\s+TPS\s+storage/);
    expect(listed.stdout).toMatch(/storage-bound .* diagnose-a/);
    expect(listed.stdout).toMatch(/cpu-bound .* diagnose-b/);
    expect(listed.stdout).not.toContain('replica.example');
  });

  it('reads as text and Markdown with the verdict line first and the evidence', () => {
    const c = capture();
    const text = captureText(c);
    expect(text[1]).toMatch(/^verdict: storage-bound \(storage \d+ %/);
    expect(text.join('\n')).toMatch(/fsync probe: fdatasync \d+ µs per 8 kB write/);
    const md = captureMarkdown(c);
    expect(md).toContain('**Verdict: storage-bound**');
    expect(md).toContain('| LWLock:WALWrite |');
    expect(md).toContain('track_wal_io_timing is off');
  });

  it('are a source of demands for predict: clients seen, their time outside the server by Little\'s law', async () => {
    const c = capture();
    const d = demandsFromCapture(c);
    const seconds = c.diagnostics.seconds;
    expect(d.clients).toBe(c.diagnostics.sessions!.distinctBackends);
    expect(d.measured.tps).toBe(c.tps);
    expect(d.cpu.msPerTx).toBeCloseTo((1000 * c.diagnostics.cpu!.seconds) / (c.tps * seconds), 9);
    // The server's flush, measured by pg_test_fsync (track_wal_io_timing was off).
    expect(d.device.flushLatencyMs).toBeCloseTo(c.fsync!.usecsPerOp / 1000, 12);
    const serverMs = (1000 * c.diagnostics.avgActiveSessions) / c.tps;
    expect(d.client.gapMs).toBeCloseTo((1000 * d.clients) / c.tps - serverMs, 6);
    const r = await storageLab(['predict', '--from', fixture, '--target', '{"kind":"ebs","iops":3000,"throughputMiBps":125}']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^from: diagnose capture of monitor@127\.0\.0\.1:\d+\/bench/m);
    expect(r.stdout).toMatch(/^predicted: [\d,]+ TPS, mean latency [\d.]+ ms \(bound by /m);
  });
});
