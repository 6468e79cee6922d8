import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HISTORY_SCHEMA_VERSION, RunHistory, type HistoryEntry, type RunEnvironment } from '../../analysis/history';
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

  it('says where it looked when a preset has no runs yet (a fresh lab)', async () => {
    const store = new DirResultsStore(dir);
    const printed: string[] = [];
    jest.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
    expect(await historyCommand({ preset: 'nightly' }, store)).toEqual([]);
    expect(printed).toEqual([`no runs of preset nightly in ${path.join(dir, '_history')}`]);
  });
});
