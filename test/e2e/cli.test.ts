/**
 * The CLI as a person uses it: `dev up` starts a Temporal dev server and a control worker of its own (free ports,
 * a temporary lab home), `run --preset ci --watch` runs the experiment to the end with progress, `drill partition
 * --preset ci --watch` prints the partition's counts and `drill power-cut --preset ci --watch` the power cuts' (each
 * also in the drill's report.md), `status` and `dev status` describe things, `dev down` stops everything.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../lib/process-runner';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { privateLabHome } from '../helpers/lab-home';

const cli = path.join(PROJECT_ROOT, 'dist/client/cli.js');

describe('storage-lab CLI (end to end)', () => {
  let home: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    ({ home, env } = await privateLabHome('cli'));
  });

  afterAll(async () => {
    await runProcess(process.execPath, [cli, 'dev', 'down'], { env }).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  });

  const storageLab = (args: string[], timeoutMs = 300_000) =>
    runProcess(process.execPath, [cli, ...args], { env, timeoutMs, okExitCodes: [0, 1, 2] });

  it('refuses a bad spec with exit code 2, naming the field, before contacting anything', async () => {
    const r = await storageLab(['run', '--preset', 'ci', '--set', 'workload.clients=0']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('workload.clients');
    expect(existsSync(path.join(home, 'results'))).toBe(false);
  });

  it('dev up, run --watch, status, dev down', async () => {
    const up = await storageLab(['dev', 'up']);
    expect(up.exitCode).toBe(0);
    const again = await storageLab(['dev', 'up']); // idempotent
    expect(again.exitCode).toBe(0);
    const status = await storageLab(['dev', 'status']);
    expect(status.stdout).toMatch(/temporal\s+running/);
    expect(status.stdout).toMatch(/control-worker\s+running/);

    // The run and both drills at once, each watched by its own command, as people sharing a lab would start them.
    const [run, drill, cuts] = await Promise.all([
      storageLab(['run', '--preset', 'ci', '--set', 'phases.backlog.enabled=false', '--watch', '--id', 'cli-e2e-run']),
      // One partition, no archive: the drill's own section, with its counts, once it ends.
      storageLab(['drill', 'partition', '--preset', 'ci', '--set', 'backup.enabled=false', '--watch', '--id', 'cli-e2e-partition']),
      // Two power cuts at the ci preset's seeded moments: the counts on the terminal and in the drill's report.
      storageLab(['drill', 'power-cut', '--preset', 'ci', '--watch', '--id', 'cli-e2e-power-cut']),
    ]);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/Run cli-e2e-run: completed/);
    // Without a terminal, progress is printed as lines, phase by phase.
    expect(run.stdout).toMatch(/-local-disk-0 \d+(\.\d+)?% provision/);
    expect(run.stdout).toContain(`UI: http://127.0.0.1:${env.STORAGE_LAB_UI_PORT}/namespaces/default/workflows/cli-e2e-run`);
    expect(run.stdout).toMatch(/-gp3-0 \d+(\.\d+)?% tps/);
    const result = JSON.parse(readFileSync(path.join(home, 'results', 'cli-e2e-run', 'result.json'), 'utf8'));
    expect(result.status).toBe('completed');
    expect(Object.keys(result.classes).sort()).toEqual(['gp3', 'local-disk']);

    const st = await storageLab(['status', 'cli-e2e-run']);
    expect(st.stdout).toMatch(/cli-e2e-run: COMPLETED/);
    expect(st.stdout).not.toMatch(/why:/);
    // A run the preflight refuses ends before any cluster reports: its status still says why.
    const refused = await storageLab(['run', '--preset', 'ci', '--set', 'host.memoryLimitMiB=1000000', '--watch', '--id', 'cli-e2e-refused']);
    expect(refused.exitCode).not.toBe(0);
    const why = await storageLab(['status', 'cli-e2e-refused']);
    expect(why.stdout).toMatch(/cli-e2e-refused: FAILED/);
    expect(why.stdout).toMatch(/ {2}why: This environment cannot run the spec:\n\s*- host\.memoryLimitMiB: 1 hosts at once x 1000000 MiB/);

    expect(drill.exitCode).toBe(0);
    expect(drill.stdout).toMatch(/partition-drill cli-e2e-partition: passed/);
    expect(drill.stdout).toMatch(/verdict: passed: 1 partition, 0 split-brain commits acknowledged, 0 acknowledged commits lost/);
    expect(drill.stdout).toMatch(/\| 1 \| n1 \| n[23] \| [\d.]+ s \|/);
    expect(drill.stdout).toMatch(/1 partition: 0 split-brain commits acknowledged \(\d+ acknowledged by an old primary after its cut\), 0 acknowledged commits lost/);

    expect(cuts.exitCode).toBe(0);
    expect(cuts.stdout).toMatch(/power-cut-drill cli-e2e-power-cut: passed/);
    expect(cuts.stdout).toMatch(/verdict: passed: 2 power cuts \(fsync = on, synchronous_commit = on, wal_sync_method = fdatasync\): 0 acknowledged commits lost, 0 not recovered/);
    const roundRow = /\| [12] \| [\d.]+ s \| [\d,]+ \| \d+ \(\d+\) \| \d+ pages \([\d.]+ MiB\) \| [\d,]+ \/ [\d,]+ \| [\d.]+ s \| [\d.]+ s \| 0 \| clean \| 0 \|/g;
    expect(cuts.stdout.match(roundRow)).toHaveLength(2);
    const counts = /2 power cuts: 0 acknowledged commits lost \(of [\d,]+; 0 rounds with a loss\), 0 clusters that did not come back, pg_amcheck not clean in 0/;
    expect(cuts.stdout).toMatch(counts);
    const report = readFileSync(path.join(home, 'results', 'cli-e2e-power-cut', 'report.md'), 'utf8');
    expect(report).toContain('## Power cuts');
    expect(report.match(roundRow)).toHaveLength(2);
    expect(report).toMatch(counts);

    const down = await storageLab(['dev', 'down']);
    expect(down.exitCode).toBe(0);
    const after = await storageLab(['dev', 'status']);
    expect(after.stdout).toMatch(/temporal\s+stopped/);
  });
});
