/**
 * The tool comparison's pure parts: the input checked for every tool at once (each tool's problems, and a backup.tool
 * the comparison would override), each tool's drill input, a row from a drill's summary, and the one table.
 */
import { toolComparisonTable } from '../../analysis/report/drills-markdown';
import { comparisonRow, type DrillSummary } from '../../common/results/drill-result';
import { InvalidSpecError } from '../../common/input/spec';
import { COMPARED_TOOLS, comparedDrillId, inputWithTool, resolveForEveryTool } from '../../common/input/tool-comparison';

function problemsOf(input: unknown): { path: string; message: string }[] {
  try {
    resolveForEveryTool(input);
  } catch (err) {
    if (err instanceof InvalidSpecError) return err.problems;
    throw err;
  }
  return [];
}

const summary = (tool: string, figures: Partial<Record<string, number | string | null>>, status: DrillSummary['status'] = 'passed'): DrillSummary => ({
  runId: `cmp/${tool}`,
  kind: 'restore-drill',
  status,
  verdict: status === 'passed' ? 'passed: restored' : 'failed: recovery failed: requested WAL segment 000000010000000000000005 has already been removed',
  location: `/results/cmp_${tool}`,
  figures: { tool, ...figures },
});

describe('restore drill with each backup tool', () => {
  it('runs WAL-G first, then pgBackRest, each on its own drill input and workflow id', () => {
    expect(COMPARED_TOOLS).toEqual(['wal-g', 'pgbackrest']);
    const input = { preset: 'ci', backup: { archiveTimeoutSeconds: 2 } };
    expect(inputWithTool(input, 'pgbackrest')).toEqual({ preset: 'ci', backup: { archiveTimeoutSeconds: 2, tool: 'pgbackrest' } });
    expect(input.backup).toEqual({ archiveTimeoutSeconds: 2 });
    expect(resolveForEveryTool({ preset: 'ci' }).map((s) => s.backup.tool)).toEqual(['wal-g', 'pgbackrest']);
    expect(comparedDrillId('drill-compare-tools-1', 'wal-g')).toBe('drill-compare-tools-1/wal-g');
  });

  it('refuses an input either tool cannot run, every problem at once, and a backup.tool it would override', () => {
    const problems = problemsOf({
      preset: 'ci',
      backup: { tool: 'wal-g', store: { kind: 's3', bucket: 'lab-backups', endpoint: 'http://127.0.0.1:9000' } },
      workload: { clients: -1 },
    });
    expect(problems.map((p) => p.path).sort()).toEqual(['backup.store.endpoint', 'backup.tool', 'workload.clients']);
    expect(problems.find((p) => p.path === 'backup.tool')!.message).toMatch(/remove backup\.tool/);
    // A problem both tools share is named once.
    expect(problems.filter((p) => p.path === 'workload.clients')).toHaveLength(1);
    expect(() => resolveForEveryTool('ci')).toThrow(/\{"preset":"ci"\}/);
  });

  it('takes a row from the drill summary\'s figures and prints one table, a failed drill with its verdict', () => {
    const walg = comparisonRow('wal-g', 'cmp/wal-g', summary('wal-g', {
      toolVersion: '3.0.8', backupBytes: 7.1 * 2 ** 20, databaseBytes: 44 * 2 ** 20, backupSeconds: 0.3, fetchSeconds: 0.66,
      replaySeconds: 0.54, promoteSeconds: 0.12, rtoSeconds: 1.32, rpoSeconds: 0.53, rpoBytes: 315_808, verifySeconds: 0.03,
    }));
    expect(walg).toMatchObject({ tool: 'wal-g', toolVersion: '3.0.8', status: 'passed', rtoSeconds: 1.32, verifySeconds: 0.03 });
    const failed = comparisonRow('pgbackrest', 'cmp/pgbackrest', summary('pgbackrest', {}, 'failed'));
    expect(failed).toMatchObject({ toolVersion: null, backupBytes: null, rtoSeconds: null });
    const [header, , a, b] = toolComparisonTable([walg, failed]);
    expect(header).toBe('| tool | backup size (of the database) | backup time | RTO: fetch | replay | promote | total | RPO | verify time | outcome |');
    expect(a).toBe('| wal-g 3.0.8 | 7.1 MiB (16 %) | 0.3 s | 0.66 s | 0.54 s | 0.12 s | 1.32 s | 0.53 s (315,808 bytes) | 0.03 s | PASS |');
    expect(b).toBe('| pgbackrest | – | – | – | – | – | – | – | – | **FAILED**: failed: recovery failed: requested WAL segment 000000010000000000000005 has already been removed |');
  });
});
