import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HISTORY_SCHEMA_VERSION, drillLine, historyEntry, RunHistory, type HistoryEntry, type RunEnvironment } from '../../analysis/history';
import type { ExperimentResult } from '../../common/results/result';
import { DirResultsStore } from '../../lib/results-store';
import { historyCommand } from '../../client/commands/history';

const environment: RunEnvironment = {
  provider: 'local',
  instanceType: null,
  cpus: 2,
  memoryGiB: 24,
  postgresMajor: 15,
  memoryLimitMiB: 384,
  workload: { scale: 20, clients: 16, threads: 2, durationSeconds: 30, warmupSeconds: 5, script: 'abc' },
  storage: { gp3: { kind: 'emulated-ebs', emulated: true, iops: 3000, throughputMiBps: 125 } },
};

/** An indexed nightly run whose gp3 cluster measured `level` TPS every second (median `level`). */
function entry(runId: string, level: number, day: number, verdict?: 'pass' | 'regressed'): HistoryEntry {
  const at = `2026-01-0${day}T02:00:00.000Z`;
  return {
    schemaVersion: HISTORY_SCHEMA_VERSION,
    runId,
    preset: 'nightly',
    status: 'completed',
    startedAt: at,
    finishedAt: at,
    environment,
    envKey: 'local-2cpu-24gib-pg15-mem384-wtest',
    classes: {
      gp3: {
        kind: 'emulated-ebs',
        emulated: true,
        iops: 3000,
        throughputMiBps: 125,
        medianTps: level,
        units: [{ runId, hostId: `${runId}-gp3-0`, tps: level, tpsSeries: [level - 50, level, level + 50] }],
      },
    },
    verdict: verdict && { verdict, summary: `gp3: ${verdict}`, baselineRunIds: [], pinned: false, effects: { gp3: verdict === 'pass' ? 0.01 : -0.5 } },
  };
}

/** A result.json that indexes as `e` (what historyEntry reads of it). */
function resultOf(e: HistoryEntry): ExperimentResult {
  const env = e.environment;
  return {
    runId: e.runId,
    preset: e.preset,
    status: e.status,
    startedAt: e.startedAt,
    finishedAt: e.finishedAt,
    postgresVersion: `${env.postgresMajor}.18`,
    host: { cpus: env.cpus!, memoryMiB: env.memoryGiB! * 1024, kernel: 'linux', provider: 'local' },
    spec: { provider: 'local', host: { memoryLimitMiB: env.memoryLimitMiB, instanceType: 'x' }, data: { scale: env.workload.scale }, workload: env.workload },
    classes: {},
    ratios: {},
    compare: null,
    checks: [],
  } as unknown as ExperimentResult;
}

describe('storage-lab history', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'history-command-'));
  });
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the run-to-run spread of the runs a baseline may draw on, leaving out regressed ones', async () => {
    const store = new DirResultsStore(dir);
    const history = new RunHistory(store);
    for (const e of [entry('n1', 4500, 1), entry('n2', 5000, 2), entry('n3', 2000, 3, 'regressed'), entry('n4', 5500, 4, 'pass')])
      await history.record(e);
    const printed: string[] = [];
    jest.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
    const shown = await historyCommand({ preset: 'nightly' }, store);
    expect(shown.map((e) => e.runId)).toEqual(['n1', 'n2', 'n3', 'n4']);
    // 4,500, 5,000 and 5,500: standard deviation 500, mean 5,000.
    expect(printed).toContain('  gp3: run-to-run CV 10.0 % over 3 runs not judged regressed (median per-second TPS of each: 4,500-5,500)');
  });

  it("keeps the drills a nightly run ran in its entry, and prints each one's outcome and counts", async () => {
    const store = new DirResultsStore(dir);
    const history = new RunHistory(store);
    const partition = { kind: 'partition-drill', status: 'passed', figures: { rounds: 10, splitBrainCommits: 0, lostCommits: 0, rtoSecondsMedian: 1.95, tool: null } };
    const failover = { kind: 'failover-drill', status: 'failed', figures: { rounds: 1, lostCommits: 12, rtoSecondsMedian: 0.4 } };
    // The entry is made from the run's result.json, where the experiment put its drills' summaries.
    const indexed = historyEntry({ ...resultOf(entry('n5', 5000, 5)), drills: [{ ...partition, runId: 'n5/partition-drill', verdict: 'passed: ...', location: '/r' }, { ...failover, runId: 'n5/failover-drill', verdict: 'failed', location: '/r' }] });
    expect(indexed.drills).toEqual([partition, failover]);
    await history.record(entry('n4', 5000, 4));
    await history.record({ ...entry('n5', 5000, 5), drills: indexed.drills });
    const printed: string[] = [];
    jest.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
    await historyCommand({ preset: 'nightly' }, store);
    const header = printed.find((l) => l.includes('FINISHED'))!;
    expect(header).toMatch(/VERDICT\s+DRILLS$/);
    expect(printed.find((l) => l.includes(' n5 '))).toContain('partition PASS (0 split-brain, 0 lost, RTO 1.95 s, 10 rounds); failover FAILED (12 lost, RTO 0.4 s, 1 rounds)');
    expect(printed.find((l) => l.includes(' n4 '))).toMatch(/–$/);
  });

  it("prints a power-cut drill's counts: lost, pg_amcheck, crash recovery", () => {
    expect(drillLine({ kind: 'power-cut-drill', status: 'passed', figures: { rounds: 20, lostCommits: 0, amcheckFailedRounds: 0, recoverySecondsMedian: 1.1 } })).toBe(
      'power-cut PASS (0 lost, pg_amcheck not clean 0, recovery 1.1 s, 20 rounds)',
    );
    expect(drillLine({ kind: 'power-cut-drill', status: 'failed', figures: { rounds: 1, lostCommits: 257, amcheckFailedRounds: 0, recoverySecondsMedian: 0.66 } })).toBe(
      'power-cut FAILED (257 lost, pg_amcheck not clean 0, recovery 0.66 s, 1 rounds)',
    );
  });

  it('says where it looked when a preset has no runs yet (a fresh lab)', async () => {
    const store = new DirResultsStore(dir);
    const printed: string[] = [];
    jest.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
    expect(await historyCommand({ preset: 'nightly' }, store)).toEqual([]);
    expect(printed).toEqual([`no runs of preset nightly in ${path.join(dir, '_history')}`]);
  });
});
