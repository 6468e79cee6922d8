/**
 * The local experiment for real, at tiny sizes: real dev server, real control worker and host agents, real
 * Postgres and pgbench, emulated gp3 on a loop device under cgroup limits.
 */
import { PHASES } from '../../common/phases/registry';
import type { WorkflowHandle } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runFolderName } from '../../lib/results-store';
import { hostIdFor } from '../../common/core/ids';
import type { ExperimentResult } from '../../common/results/result';
import { readProgress } from '../../client/progress-view';
import { agentPids, runInOwnLab, startTestLab, type TestLab } from '../helpers/lab';
import { NO_PHASES } from '../helpers/phases';

function readResult(lab: TestLab, runId: string): ExperimentResult {
  return JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(runId), 'result.json'), 'utf8'));
}

/** Polls the run's progress as the CLI reads it until a cluster is in `step` with at least `percent` done. */
async function waitForStep(lab: TestLab, handle: WorkflowHandle, step: string, percent = 0, timeoutMs = 120_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const progress = await readProgress(lab.client, handle.workflowId).catch(() => null);
    const hit = progress && Object.values(progress.clusters).find((c) => c.step === step && (c.percent ?? 0) >= percent);
    if (hit) return hit.hostId;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no cluster reached ${step} ${percent}% within ${timeoutMs / 1000} s`);
}

describe('local experiment (integration)', () => {
  // The three cases are independent runs, each in a lab of its own (home, control worker, hosts: its leftover check
  // sees only its own), all started at once here so their waits overlap; each case awaits its own run and checks it.
  const labs: TestLab[] = [];
  let runs: {
    ci: Promise<{ lab: TestLab; handle: WorkflowHandle; summary: unknown }>;
    killed: Promise<{ lab: TestLab; handle: WorkflowHandle; hostId: string; pids: number[]; summary: unknown }>;
    cancelled: Promise<{ lab: TestLab; handle: WorkflowHandle; hostId: string; outcome: unknown }>;
  };
  beforeAll(() => {
    const inLab = <T>(name: string, body: (lab: TestLab) => Promise<T>) => runInOwnLab(labs, name, body);
    runs = {
      ci: inLab('local', async (lab) => {
        // The ci preset loads every host; this run asks for data sets (issue 31) to show their path end to end.
        // A 4 s warm-up: every host now starts with the data set out of the page cache (startCold), and the checks
        // below compare the sampled page-read time with the server's, which on this machine's disk are short bursts
        // the 50 ms samples catch badly (0.251 against 0.357 ms a transaction with the preset's 1 s, clean-clone
        // run 42); warmed, the window's reads come from the cache, as the window of a loaded host's did before.
        const handle = await lab.startExperiment({ preset: 'ci', data: { reuse: 'auto' }, workload: { warmupSeconds: 4 } });
        return { lab, handle, summary: await handle.result() };
      }),
      killed: inLab('local-kill', async (lab) => {
        // 2 million rows in 40 chunks: long enough to kill the agent between chunks.
        const handle = await lab.startExperiment({
          preset: 'ci',
          storageClasses: { gp3: null },
          compare: null,
          data: { scale: 20, chunkRows: 50_000 },
          phases: NO_PHASES,
        });
        const hostId = await waitForStep(lab, handle, 'load', 10);
        const pids = agentPids(lab.paths, hostId);
        if (pids.length === 1) process.kill(pids[0], 'SIGKILL'); // Its case fails on any other count.
        return { lab, handle, hostId, pids, summary: await handle.result() };
      }),
      cancelled: inLab('local-cancel', async (lab) => {
        const handle = await lab.startExperiment({ preset: 'ci', storageClasses: { 'local-disk': null }, compare: null, data: { scale: 10, chunkRows: 20_000 } });
        const hostId = await waitForStep(lab, handle, 'load', 5);
        await handle.cancel();
        const outcome = await handle.result().then(
          (v) => v as unknown,
          (e) => e as unknown,
        );
        return { lab, handle, hostId, outcome };
      }),
    };
  });
  afterAll(async () => {
    if (runs) await Promise.allSettled(Object.values(runs));
    await Promise.all(labs.map((lab) => lab.close()));
  });

  it('runs the ci preset end to end and leaves nothing behind', async () => {
    const { lab, handle, summary } = await runs.ci;
    expect((summary as { status: string }).status).toBe('completed');
    const result = readResult(lab, handle.workflowId);
    expect(result.schemaVersion).toBe(1);
    expect(result.postgresVersion).toMatch(/^\d+\.\d+/);
    expect(Object.keys(result.classes).sort()).toEqual(['gp3', 'local-disk']);
    // Data sets (issue 31): one host loads and publishes, the other restores what it published (whichever claims first).
    expect(Object.values(result.classes).map((cls) => cls.clusters[0]?.dataSet?.prepared).sort()).toEqual(['loaded-and-published', 'restored']);
    for (const cls of Object.values(result.classes)) {
      expect(cls.clusters).toHaveLength(1);
      const c = cls.clusters[0];
      expect(c.status).toBe('ok');
      expect(c.rows).toBe(200_000);
      if (c.dataSet?.prepared === 'restored') {
        // Compared with the publisher's manifest: every check ran and passed.
        expect(c.dataSet.checks!.map((x) => x.name)).toEqual(['row counts', 'checksums', 'relation sizes', 'freeze state', 'pg_amcheck', 'index entries']);
        expect(c.dataSet.checks!.filter((x) => !x.ok)).toEqual([]);
        expect(c.dataSet.restore!.restoreSeconds).toBeGreaterThan(0);
        expect(c.load).toBeUndefined();
      } else {
        expect(c.load?.verified).toEqual({ rows: 200_000, distinctAids: 200_000 });
        expect(c.dataSet!.publishSeconds).toBeGreaterThan(0);
      }
      expect(c.tps).toBeGreaterThan(0);
      expect(c.tpsSeries!.length).toBeGreaterThanOrEqual(4);
      expect(c.latencyMs!.p99).toBeGreaterThanOrEqual(c.latencyMs!.p50);
      // The sampler ran next to the TPS run, and the breakdown sums to the mean latency.
      expect(c.diagnostics!.samplesPerSecond).toBeGreaterThanOrEqual(10);
      expect(Object.values(c.breakdownMs!).reduce((s, v) => s + v, 0)).toBeCloseTo(c.latencyMs!.mean, 3);
      // 8 MB of dead tuples within 10 %, VACUUM timed; a 16 MB backlog reached before the drain.
      const vacuum = c.phases.vacuum!;
      expect(Math.abs(vacuum.deadBytes / (8 * 2 ** 20) - 1)).toBeLessThanOrEqual(0.1);
      expect(vacuum.vacuumSeconds).toBeGreaterThan(0);
      const backlog = c.phases.backlog!;
      expect(backlog.reachedBeforeDrain).toBe(true);
      expect(backlog.retainedBytes).toBeGreaterThanOrEqual(16 * 2 ** 20);
      expect(backlog.drainSeconds).toBeGreaterThan(0);
      expect(cls.phases.vacuum!.vacuumSeconds).toBe(vacuum.vacuumSeconds);
      // The CHECKPOINT right after the TPS run, with the workload through it.
      const checkpoint = c.phases.checkpoint!;
      expect(checkpoint.counters.requested).toBeGreaterThanOrEqual(1);
      expect(checkpoint.workload!.tpsBefore).toBeGreaterThan(0);
      expect(checkpoint.workload!.tpsMinDuring).not.toBeNull();
    }
    // Each phase's own checks hold on a real run (the checkpoint's, the VACUUM's, the backlog's).
    const phaseCheckNames = PHASES.flatMap((p) => Object.keys(p.selfTest.breaks));
    expect(result.checks.filter((c) => phaseCheckNames.includes(c.name) && !c.ok)).toEqual([]);
    const report = readFileSync(path.join(lab.paths.resultsDir, runFolderName(handle.workflowId), 'report.md'), 'utf8');
    for (const heading of ['## Data preparation', '## Checkpoint after the TPS run', '## VACUUM over bloat', '## Logical-replication backlog drain']) expect(report).toContain(heading);
    console.log(report.split('\n').filter((l) => /^\| .*(local-disk|gp3)-0 \|/.test(l)).join('\n'));
    expect(result.classes.gp3.emulated).toBe(true);
    expect(result.classes.gp3.limits.iops).toBe(3000);
    expect(result.ratios.tps).not.toBeNull();
    expect(result.ratios.vacuum).not.toBeNull();
    expect(result.ratios.backlog).not.toBeNull();
    // The cross-checks from independent measurements hold on a real run.
    for (const name of ['page-read time: samples vs server', 'WAL time: samples vs server'])
      expect(result.checks.filter((c) => c.name === name).map((c) => `${c.ok} ${c.detail}`)).toEqual([expect.stringMatching(/^true/), expect.stringMatching(/^true/)]);
    // Little's law on the server: never more time in the server than the latency. More outside it than the check's
    // tolerance is the client's side on a loaded machine (pgbench and its wake-ups waiting for a core: 0.725 ms of
    // 4.55, 16 %, in a clean clone's suite beside other work), which the check reports and this run may show.
    const occupancy = result.checks.filter((c) => c.name === 'server occupancy matches the latency');
    expect(occupancy).toHaveLength(2);
    for (const c of occupancy) expect(`${c.ok} ${c.detail}`).toMatch(/^true|^false .* \(\d+(\.\d+)? ms, \d+ %, outside the server/);
    const html = readFileSync(path.join(lab.paths.resultsDir, runFolderName(handle.workflowId), 'report.html'), 'utf8');
    expect(html.match(/<svg /g)?.length).toBeGreaterThanOrEqual(5);
    const hostIds = ['local-disk', 'gp3'].map((c) => hostIdFor(handle.workflowId, c, 0));
    expect(lab.leftovers(hostIds)).toEqual([]);
  });

  it('survives kill -9 of the host agent mid-load with exact row counts', async () => {
    const { lab, handle, hostId, pids, summary } = await runs.killed;
    expect(pids.length).toBe(1);
    expect((summary as { status: string }).status).toBe('completed');
    const cluster = readResult(lab, handle.workflowId).classes['local-disk'].clusters[0];
    expect(cluster.load?.chunksResumed).toBeGreaterThan(0);
    expect(cluster.load?.verified).toEqual({ rows: 2_000_000, distinctAids: 2_000_000 });
    expect(lab.leftovers([hostId])).toEqual([]);
  });

  it('leaves no processes, mounts, loop devices or cgroups when cancelled mid-run', async () => {
    const { lab, handle, hostId, outcome } = await runs.cancelled;
    expect(outcome).toBeInstanceOf(Error);
    const description = await handle.describe();
    expect(description.status.name).toBe('CANCELLED');
    const result = readResult(lab, handle.workflowId);
    expect(result.status).toBe('cancelled');
    expect(result.classes.gp3.clusters[0].status).toBe('cancelled');
    expect(lab.leftovers([hostId])).toEqual([]);
  });
});

describe('local experiment without cgroups (integration)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    process.env.STORAGE_LAB_NO_CGROUPS = '1';
    lab = await startTestLab('nocgroups');
  });
  afterAll(async () => {
    delete process.env.STORAGE_LAB_NO_CGROUPS;
    await lab?.close();
  });

  it('still runs, and marks every class "not emulated" in the result and the report', async () => {
    const handle = await lab.startExperiment({
      preset: 'ci',
      phases: NO_PHASES,
    });
    await handle.result();
    const result = readResult(lab, handle.workflowId);
    for (const cls of Object.values(result.classes)) {
      expect(cls.emulated).toBe(false);
      expect(cls.emulationNote).toMatch(/not emulated/);
      expect(cls.limits.iops).toBeNull();
      expect(cls.clusters[0].status).toBe('ok');
    }
    const report = readFileSync(path.join(lab.paths.resultsDir, runFolderName(handle.workflowId), 'report.md'), 'utf8');
    expect(report).toMatch(/not emulated/);
    expect(lab.leftovers(['local-disk', 'gp3'].map((c) => hostIdFor(handle.workflowId, c, 0)))).toEqual([]);
  });

  it('refuses a class that requires emulation, before creating anything', async () => {
    const handle = await lab.startExperiment({ preset: 'ci', storageClasses: { gp3: { emulation: 'required' } } });
    await expect(handle.result()).rejects.toMatchObject({
      cause: { type: 'PreflightError', message: expect.stringContaining('storageClasses.gp3.emulation') },
    });
    expect(lab.leftovers(['local-disk', 'gp3'].map((c) => hostIdFor(handle.workflowId, c, 0)))).toEqual([]);
  });
});
