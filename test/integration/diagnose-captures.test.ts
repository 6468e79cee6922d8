/**
 * Diagnose captures kept in the results store (what diagnoseWorkflow's activity does with one): the capture and its
 * reports under the run, an index entry per capture listed by `storage-lab captures`, and `predict --from` a
 * capture. On a capture of PostgreSQL 15 under the reference's UPDATE workload (test/fixtures/postgres-15).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DirResultsStore } from '../../lib/results-store';
import { captureMarkdown, captureText } from '../../analysis/report/diagnose';
import { captureHistory, saveCapture } from '../../analysis/diagnose-captures';
import { runProcess } from '../../lib/process-runner';
import { demandsFromCapture } from '../../common/model/demands';
import { medianFlushLags, syncStandbyWait, verdictGroupOf, type CapturedStandby, type DiagnoseCapture } from '../../common/results/diagnose-capture';
import { breakdownKeyOf } from '../../common/results/breakdown';
import { predict, sourceCheck } from '../../common/model/predict';
import { PROJECT_ROOT } from '../../lib/lab-paths';

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
    // The model explains its source: the host's CPU per transaction (pgbench's and the WAL writer's included) is
    // mostly beside the backends' path, which the samples show at 0.07 ms.
    expect(sourceCheck(d).ok).toBe(true);
    const r = await storageLab(['predict', '--from', fixture, '--target', '{"kind":"ebs","iops":3000,"throughputMiBps":125}']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^from: diagnose capture of monitor@127\.0\.0\.1:\d+\/bench/m);
    expect(r.stdout).toMatch(/^predicted: [\d,]+ TPS \([\d,]+-[\d,]+\), mean latency [\d.]+ ms \((bound by |no queue saturated)/m);
  });

  describe('of a primary with synchronous standbys', () => {
    const standby = (name: string, syncState: string, flushLagMs: number | null): CapturedStandby => ({ name, syncState, state: 'streaming', flushLagMs });
    const withStandbys = (names: string, commit: string, standbys: CapturedStandby[]): DiagnoseCapture => {
      const c = capture();
      return { ...c, settings: { ...c.settings, synchronous_commit: commit, synchronous_standby_names: names }, replication: { standbys } };
    };

    it('wait for the k-th fastest of a quorum, the slowest of the standbys in sync, and for none when commits do not wait', () => {
      const quorum = [standby('s1', 'quorum', 3), standby('s2', 'quorum', 1.2)];
      expect(syncStandbyWait(withStandbys('ANY 1 (s1, s2)', 'on', quorum))?.waitMs).toBe(1.2);
      expect(syncStandbyWait(withStandbys('ANY 2 (s1, s2)', 'on', quorum))?.waitMs).toBe(3);
      expect(syncStandbyWait(withStandbys('ANY 2 (s1, s2)', 'on', quorum))?.detail).toMatch(/the 2nd fastest of 2 standbys \(s1, s2\)/);
      const priority = [standby('s1', 'sync', 0.8), standby('s2', 'sync', 2.5), standby('s3', 'potential', 9)];
      expect(syncStandbyWait(withStandbys('FIRST 2 (s1, s2, s3)', 'remote_apply', priority))?.waitMs).toBe(2.5);
      expect(syncStandbyWait(withStandbys('ANY 1 (s1, s2)', 'local', quorum))).toBeNull();
      expect(syncStandbyWait(withStandbys('ANY 1 (s1, s2)', 'off', quorum))).toBeNull();
      expect(syncStandbyWait(withStandbys('', 'on', [standby('s1', 'async', 4)]))).toBeNull();
      // Nothing recent to time: no figure rather than a made-up one.
      expect(syncStandbyWait(withStandbys('ANY 1 (s1)', 'on', [standby('s1', 'quorum', null)]))).toBeNull();
      expect(syncStandbyWait(capture())).toBeNull();
    });

    it('take each standby\'s median flush lag over the window\'s readings', () => {
      const readings = [
        [standby('s1', 'quorum', 0.5), standby('s2', 'quorum', null)],
        [standby('s1', 'quorum', 0.04), standby('s2', 'quorum', 3)],
        [standby('s1', 'quorum', 0.2)],
        [standby('s1', 'quorum', 9), standby('s2', 'quorum', 1)],
      ];
      expect(medianFlushLags(readings)).toEqual([
        { ...standby('s1', 'quorum', 0.35), flushLagReadings: 4 },
        { ...standby('s2', 'quorum', 2), flushLagReadings: 2 },
      ]);
      expect(medianFlushLags([[standby('s1', 'async', null)]])).toEqual([{ ...standby('s1', 'async', null), flushLagReadings: 0 }]);
      expect(medianFlushLags([])).toEqual([]);
    });

    it('count IPC:SyncRep in the commit wait, not as this server\'s storage', () => {
      expect(breakdownKeyOf('IPC:SyncRep')).toBe('walFsync');
      expect(verdictGroupOf('IPC:SyncRep')).toBe('other');
    });

    it('give predict the round trip: the flush lag less a grouped flush like the primary\'s', () => {
      const c = withStandbys('ANY 1 (s1, s2)', 'on', [standby('s1', 'quorum', 5), standby('s2', 'quorum', 2)]);
      const d = demandsFromCapture(c);
      // Less a flush like the primary's, grouped at the capture's rate (half of another in progress when one is).
      const flush = c.fsync!.usecsPerOp / 1000;
      const grouped = flush * (1 + Math.min(1, (c.tps / 1000) * flush) / 2);
      expect(d.storage.syncStandbyRttMs).toBeCloseTo(Math.max(0.01, 2 - grouped), 9);
      expect(d.notes.join(' ')).toMatch(/synchronous standbys: quorum: the fastest of 2 standbys/);
      expect(demandsFromCapture(capture()).storage.syncStandbyRttMs).toBeUndefined();
      // Where the samples saw commits wait in IPC:SyncRep, that wait (the thing itself) sets the round trip.
      const before = Object.values(c.diagnostics.waitEvents).reduce((a, b) => a + b, 0);
      const sampled: DiagnoseCapture = { ...c, diagnostics: { ...c.diagnostics, waitEvents: { ...c.diagnostics.waitEvents, 'IPC:SyncRep': before } } };
      const ds = demandsFromCapture(sampled);
      const server = Object.values(ds.serverMs!).reduce((a, b) => a + b, 0);
      expect(ds.storage.syncStandbyRttMs).toBeCloseTo(Math.max(0.01, server / 2 - grouped), 9);
      expect(ds.storage.syncStandbyRttMs).not.toBeCloseTo(d.storage.syncStandbyRttMs!, 3);
      expect(ds.notes.join(' ')).toMatch(/sampled in IPC:SyncRep/);
      // The same capture predicted without the standby (0) commits faster.
      const own = predict(d, { kind: 'local-disk' });
      expect(predict(d, { kind: 'local-disk', syncStandbyRttMs: 0 }).tps).toBeGreaterThan(own.tps);
      expect(captureText(c).join('\n')).toMatch(/standbys: s1 \(quorum, flush lag 5 ms\), s2 \(quorum, flush lag 2 ms\); commits wait for them: quorum/);
    });
  });
});
