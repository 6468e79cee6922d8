/**
 * `storage-lab schedule` and `storage-lab history` as a person runs them: the real CLI in a child process against
 * the suite's server, a schedule on this lab's control queue, a triggered nightly run that really runs (tiny),
 * and bad input that exits with code 2 naming what to fix.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ScheduleNotFoundError } from '@temporalio/client';
import { hostIdFor } from '../../common/core/ids';
import type { NightlyRegressionSummary } from '../../workflows/nightly-regression-workflow';
import { startTestLab, type TestLab } from '../helpers/lab';
import { serverAddress, uniqueId } from '../helpers/temporal';
import { NO_PHASES } from '../helpers/phases';

const run = promisify(execFile);
const CLI = path.join(__dirname, '..', '..', 'client', 'cli.js');

/** The smallest nightly that measures something: gp3 only, scale 1, 3 s, no phases. */
const TINY = {
  storageClasses: { 'local-disk': null },
  compare: null,
  data: { scale: 1, chunkRows: 20_000 },
  // 7 s: the verdict sets aside a run with fewer than 5 per-second samples.
  workload: { durationSeconds: 7, warmupSeconds: 0 },
  phases: NO_PHASES,
};

describe('storage-lab schedule and history (CLI, e2e)', () => {
  let lab: TestLab;
  let dir: string;
  const name = uniqueId('nightly').replace(/[^A-Za-z0-9._-]/g, '-');

  beforeAll(async () => {
    lab = await startTestLab('schedule');
    dir = mkdtempSync(path.join(os.tmpdir(), 'schedule-cli-'));
  });
  afterAll(async () => {
    for (const id of [name, `${name}-drill`]) await lab?.client.schedule.getHandle(id).delete().catch(() => undefined);
    await lab?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the CLI; resolves with exit code and output whether it succeeded or not. */
  async function cli(...args: string[]): Promise<{ code: number; out: string }> {
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: serverAddress(),
      STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue,
      STORAGE_LAB_HOME: lab.paths.home,
      STORAGE_LAB_HOSTS_DIR: lab.paths.hostsDir,
    };
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env, timeout: 60_000 });
      return { code: 0, out: stdout + stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, out: e.stdout + e.stderr };
    }
  }

  it('creates, lists, pauses, triggers and deletes a nightly schedule; the triggered run really runs', async () => {
    const specFile = path.join(dir, 'tiny.json');
    writeFileSync(specFile, JSON.stringify(TINY));

    const created = await cli('schedule', 'create', name, '--cron', '0 2 * * *', '--preset', 'ci', '--spec', specFile);
    expect(created).toMatchObject({ code: 0 });
    expect(created.out).toContain(`Created schedule ${name}: nightly (nightlyRegressionWorkflow) at '0 2 * * *' (UTC), overlap policy SKIP`);
    expect(created.out).toMatch(/next run: \d{4}-\d\d-\d\dT02:00:00\.000Z/);
    const description = await lab.client.schedule.getHandle(name).describe();
    expect(description.policies.overlap).toBe('SKIP');
    expect(description.action).toMatchObject({ workflowType: 'nightlyRegressionWorkflow', taskQueue: lab.taskQueue });

    const listed = await cli('schedule', 'list');
    expect(listed.code).toBe(0);
    const row = listed.out.split('\n').find((l) => l.startsWith(name));
    expect(row).toMatch(new RegExp(`^${name}\\s+nightly\\s+0 2 \\* \\* \\*\\s+active\\s+\\S+T02:00:00\\.000Z\\s+–$`));

    expect((await cli('schedule', 'pause', name, '--note', 'disk swap')).code).toBe(0);
    expect((await cli('schedule', 'list')).out).toMatch(new RegExp(`${name}.*paused: disk swap`));
    expect((await cli('schedule', 'unpause', name)).code).toBe(0);
    expect((await lab.client.schedule.getHandle(name).describe()).state.paused).toBe(false);

    const triggered = await cli('schedule', 'trigger', name);
    expect(triggered.code).toBe(0);
    const runId = /Started (\S+)/.exec(triggered.out)?.[1];
    expect(runId).toMatch(new RegExp(`^${name}-`));
    const summary = (await lab.client.workflow.getHandle(runId!).result()) as NightlyRegressionSummary;
    expect(summary.status).toBe('completed');
    // The first night has no history to compare with: no verdict but inconclusive, and the run still succeeds.
    expect(summary.verdict.verdict).toBe('inconclusive');
    expect(summary.verdict.classes[0].reason).toMatch(/^0 usable baseline runs .* at least 5$/);
    expect((await cli('schedule', 'list')).out).toMatch(new RegExp(`${name}.*${runId} at `));

    const history = await cli('history', '--preset', 'ci');
    expect(history.code).toBe(0);
    expect(history.out).toMatch(/preset ci, environment local-\d+cpu-\d+gib-pg\d+-mem384-w[0-9a-z]{7}/);
    expect(history.out).toMatch(new RegExp(`${runId}/experiment\\s+completed\\s+gp3 \\d+ @3000 IOPS\\s+inconclusive`));

    // A restore drill schedule: the drill's own input, checked before the schedule is made.
    const drill = await cli('schedule', 'create', `${name}-drill`, '--cron', '0 3 * * 0', '--workflow', 'restore-drill', '--preset', 'ci');
    expect(drill).toMatchObject({ code: 0 });
    expect(drill.out).toContain(`Created schedule ${name}-drill: restore-drill (restoreDrillWorkflow) at '0 3 * * 0' (UTC)`);
    expect((await cli('schedule', 'list')).out).toMatch(new RegExp(`${name}-drill\\s+restore-drill\\s+0 3 \\* \\* 0\\s+active`));
    expect((await cli('schedule', 'delete', `${name}-drill`)).code).toBe(0);

    expect((await cli('schedule', 'delete', name)).code).toBe(0);
    await expect(lab.client.schedule.getHandle(name).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect(lab.leftovers([hostIdFor(`${runId}/experiment`, 'gp3', 0)])).toEqual([]);
  });

  it('rejects bad input with exit code 2, naming what to fix, and creates nothing', async () => {
    const badCron = await cli('schedule', 'create', `${name}-x`, '--cron', '61 2 * * *', '--preset', 'nightly');
    expect(badCron.code).toBe(2);
    expect(badCron.out).toMatch(/--cron '61 2 \* \* \*'/);
    const badSpec = await cli('schedule', 'create', `${name}-x`, '--cron', '0 2 * * *', '--set', 'workload.clients=0');
    expect(badSpec.code).toBe(2);
    expect(badSpec.out).toMatch(/workload\.clients: must be at least 1/);
    const badOption = await cli('schedule', 'create', `${name}-x`, '--cron', '0 2 * * *', '--set', 'regression.minEffect=5');
    expect(badOption.code).toBe(2);
    expect(badOption.out).toMatch(/regression\.minEffect: must be between 0 and 1/);
    const badWorkflow = await cli('schedule', 'create', `${name}-x`, '--cron', '0 2 * * *', '--workflow', 'backup');
    expect(badWorkflow.code).toBe(2);
    expect(badWorkflow.out).toMatch(/--workflow backup: unknown; use one of: nightly, experiment, restore-drill/);
    await expect(lab.client.schedule.getHandle(`${name}-x`).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    const badDrill = await cli('schedule', 'create', `${name}-x`, '--cron', '0 3 * * *', '--workflow', 'restore-drill', '--set', 'target=yesterday');
    expect(badDrill.code).toBe(2);
    expect(badDrill.out).toMatch(/target: must be "time", "lsn" or "latest"/);
    const missing = await cli('schedule', 'trigger', `${name}-missing`);
    expect(missing.code).toBe(2);
    expect(missing.out).toMatch(/no schedule ".*-missing"/);
  });
});
