/**
 * `storage-lab drill restore --compare-tools` end to end at the smallest size: the CLI starts the comparison on a real
 * control worker (host agents, Postgres, WAL-G and pgBackRest), the restore drill runs with each tool in turn, and
 * the CLI prints one table with both tools' figures; the comparison's result.json and report.md hold the same, and
 * each drill left its own result and nothing else behind. A comparison that cannot run with one of the tools is
 * refused before anything starts, naming the field.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runFolderName } from '../../lib/results-store';
import { runProcess } from '../../lib/process-runner';
import type { RestoreDrillResult, RestoreToolComparison } from '../../common/results/drill-result';
import { hostIdFor } from '../../common/core/ids';
import { comparedDrillId } from '../../common/input/tool-comparison';
import { PROJECT_ROOT, backupsDirFor } from '../../lib/lab-paths';
import { startTestLab, type TestLab } from '../helpers/lab';
import { serverAddress } from '../helpers/temporal';

const cli = path.join(PROJECT_ROOT, 'dist/client/cli.js');

describe('storage-lab drill restore --compare-tools (end to end)', () => {
  let lab: TestLab;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    lab = await startTestLab('compare-tools');
    env = {
      ...process.env,
      STORAGE_LAB_HOME: lab.paths.home,
      STORAGE_LAB_HOSTS_DIR: lab.paths.hostsDir,
      TEMPORAL_ADDRESS: serverAddress(),
      STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue,
    };
  });
  afterAll(async () => {
    await lab?.close();
  });

  const storageLab = (args: string[]) => runProcess(process.execPath, [cli, ...args], { env, timeoutMs: 600_000, okExitCodes: [0, 1, 2] });

  it('refuses an input one tool cannot run, naming the field, before starting anything', async () => {
    const r = await storageLab(['drill', 'restore', '--compare-tools', '--preset', 'ci', '--set', 'backup.compression=bzip2']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('backup.compression: wal-g cannot compress with bzip2');
    expect(existsSync(lab.paths.resultsDir) ? readdirSync(lab.paths.resultsDir) : []).toEqual([]);
  });

  it('runs the ci restore drill with WAL-G, then pgBackRest, and prints one table of both', async () => {
    const runId = 'compare-tools-e2e';
    const r = await storageLab(['drill', 'restore', '--compare-tools', '--preset', 'ci', '--watch', '--id', runId]);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(`Started the restore drill with wal-g, then pgbackrest as ${runId}`);
    const table = r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('| '));
    expect(table[0]).toMatch(/\| tool \| backup size \(of the database\) \| backup time \| RTO: fetch \| replay \| promote \| total \| RPO \| verify time \| outcome \|/);
    const walg = table.find((l) => l.includes('| wal-g 3.0.8 |'))!;
    const pgbackrest = table.find((l) => /\| pgbackrest 2\.\d+ \|/.test(l))!;
    for (const row of [walg, pgbackrest]) {
      expect(row).toMatch(/\| PASS \|$/);
      // Every figure measured: sizes in MiB, times in seconds, no gap.
      expect(row).not.toContain('–');
      expect(row.match(/[\d.]+ s/g)!.length).toBeGreaterThanOrEqual(7);
    }

    const comparison = JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(runId), 'result.json'), 'utf8')) as RestoreToolComparison;
    expect(comparison).toMatchObject({ kind: 'restore-tool-comparison', status: 'passed', preset: 'ci' });
    expect(comparison.rows.map((x) => x.tool)).toEqual(['wal-g', 'pgbackrest']);
    for (const row of comparison.rows) {
      for (const figure of ['backupBytes', 'databaseBytes', 'backupSeconds', 'fetchSeconds', 'replaySeconds', 'promoteSeconds', 'rtoSeconds', 'verifySeconds'] as const)
        expect(row[figure]).toBeGreaterThan(0);
      expect(row.rtoSeconds).toBeCloseTo(row.fetchSeconds! + row.replaySeconds! + row.promoteSeconds!, 5);
      // The table's figures are the drill's own: its result.json says the same.
      const drill = JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(row.drillRunId), 'result.json'), 'utf8')) as RestoreDrillResult;
      expect(drill.backupTool!.name).toBe(row.tool);
      expect(drill.backup!.repositoryBytes).toBe(row.backupBytes);
      expect(drill.rto!.totalSeconds).toBe(row.rtoSeconds);
      expect(drill.verification.backupVerify!.seconds).toBe(row.verifySeconds);
      expect(drill.verification.backupVerify!.detail).toMatch(row.tool === 'wal-g' ? /^wal-g wal-verify: / : /^pgbackrest verify: /);
      expect(lab.leftovers([hostIdFor(row.drillRunId, 'source', 0), hostIdFor(row.drillRunId, 'restore', 0)])).toEqual([]);
      expect(existsSync(path.join(backupsDirFor(lab.paths.hostsDir), runFolderName(row.drillRunId)))).toBe(false);
      expect(row.drillRunId).toBe(comparedDrillId(runId, row.tool));
    }
    const report = readFileSync(path.join(lab.paths.resultsDir, runFolderName(runId), 'report.md'), 'utf8');
    expect(report).toContain(walg);
    expect(report).toContain(pgbackrest);
  });
});
