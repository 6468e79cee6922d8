/**
 * The nightly regression verdict with real runs: a baseline of normal gp3 runs (the default minimum, 5), then a
 * nightly run with gp3 modelled at half the IOPS (flagged regressed: the workflow fails with the verdict), then a
 * normal nightly rerun (pass). One storage class and short runs keep it short.
 *
 * The contrast must come from the device, whatever else runs on the machine. At the ci preset's 8 clients and
 * gp3's 3,000 IOPS the volume is not what binds: its 2 ms write latency caps WAL flushes near 500 a second, group
 * commit packs the clients into each, and the rest of the budget goes unused unless the CPU drives thousands of
 * TPS (docs/benchmarks.md). So these runs take one client: every commit waits for its own WAL flush (one write I/O,
 * no group commit), and the model starts each I/O no sooner than the budget's spacing allows (infra/volume/model.go),
 * so a transaction takes max(1 / IOPS, 2 ms + the CPU's share). The budget must be the larger whatever the load:
 * at 200 IOPS (5 ms) it was not, on CI's idle machine either (baseline 160-190 TPS, a normal rerun at 199 called
 * inconclusive, +16 %), and with a CPU hog the CPU's share passed 3 ms and then 8 ms. At 40 IOPS (25 ms) with a
 * 2-core hog and a second test file beside it (load average 8-12) the baseline still ran 35-40 TPS: the share passed
 * 23 ms at times. At 20 IOPS (50 ms) and 10 (100 ms) it would have to pass 48 ms; a modelled volume may be that slow
 * (the spec's least IOPS is 10 for one; a real EBS volume's is 100).
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RunHistory } from '../../analysis/history';
import { DirResultsStore, runFolderName } from '../../lib/results-store';
import type { Verdict } from '../../common/results/verdict';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { DEFAULT_VERDICT_OPTIONS } from '../../common/input/regression-options';
import type { ExperimentResult } from '../../common/results/result';
import { historyCommand } from '../../client/commands/history';
import type { NightlyRegressionSummary } from '../../workflows/nightly-regression-workflow';
import { startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';
import { NO_PHASES } from '../helpers/phases';

/** The budget of the normal runs: a 25th of the 500 writes a second gp3's 2 ms write latency allows one client. */
const GP3_IOPS = 20;
/** gp3 only, one client, no phases, 2 s warm-up and 8 per-second samples: enough for a verdict. */
const NORMAL = {
  preset: 'ci',
  storageClasses: { 'local-disk': null, gp3: { iops: GP3_IOPS } },
  compare: null,
  workload: { clients: 1, threads: 1, durationSeconds: 8, warmupSeconds: 2 },
  phases: NO_PHASES,
};
/** A verdict's least baseline, and one spare. */
const BASELINE_RUNS = DEFAULT_VERDICT_OPTIONS.minBaselineRuns + 1;
const HALF_IOPS = { ...NORMAL, storageClasses: { 'local-disk': null, gp3: { iops: GP3_IOPS / 2 } } };

describe('nightly regression verdict (e2e)', () => {
  let lab: TestLab;
  const hostIds: string[] = [];
  beforeAll(async () => {
    lab = await startTestLab('regression');
  });
  afterAll(async () => {
    await lab?.close();
  });

  const readResult = (runId: string): ExperimentResult =>
    JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(runId), 'result.json'), 'utf8'));

  function startNightly(input: Record<string, unknown>): Promise<WorkflowHandle> {
    return lab.client.workflow.start(WORKFLOW_TYPES.nightlyRegression, {
      taskQueue: lab.taskQueue,
      workflowId: uniqueId('nightly'),
      args: [input],
    });
  }

  it('flags gp3 at half the IOPS as regressed and passes a normal rerun', async () => {
    // The baseline: one run more than a verdict needs, in two waves. Each run is held at its own volume's budget (a
    // transaction's 50 ms), which the others' CPU does not reach on a quiet machine; with a CPU hog on both cores and
    // five runs at once, one ran 17 TPS where four ran 20 (clean-clone run 25, 2026-12-04), was set aside as an
    // outlier, as the verdict should, and left four: too few for a verdict. The spare run holds one such night.
    const waves = [Math.ceil(BASELINE_RUNS / 2), Math.floor(BASELINE_RUNS / 2)];
    const handles: Awaited<ReturnType<typeof lab.startExperiment>>[] = [];
    for (const size of waves) {
      const wave = await Promise.all(Array.from({ length: size }, () => lab.startExperiment(NORMAL)));
      for (const handle of wave) await handle.result().catch(() => undefined);
      handles.push(...wave);
    }
    for (const handle of handles) hostIds.push(hostIdFor(handle.workflowId, 'gp3', 0));
    for (const handle of handles) expect(((await handle.result()) as { status: string }).status).toBe('completed');
    const store = new DirResultsStore(lab.paths.resultsDir);
    const indexed = await new RunHistory(store).entries('ci');
    // The history lists runs in the order they finished.
    const baseline = indexed.map((e) => e.runId);
    expect([...baseline].sort()).toEqual(handles.map((h) => h.workflowId).sort());
    expect(new Set(indexed.map((e) => e.envKey)).size).toBe(1);

    // Half the IOPS: the nightly workflow fails, with the verdict and its numbers in the failure message.
    const half = await startNightly(HALF_IOPS);
    const halfRun = `${half.workflowId}/experiment`;
    hostIds.push(hostIdFor(halfRun, 'gp3', 0));
    const failure = await half.result().then(
      () => null,
      (e: unknown) => e,
    );
    const halfResult = readResult(halfRun);
    const halfVerdict = halfResult.verdict as Verdict;
    console.log(
      `baseline run medians (TPS): ${halfVerdict.classes[0]?.baseline.runMedians.join(', ')} (run-to-run CV ${halfVerdict.classes[0]?.baseline.spread?.cv})\nhalf IOPS: ${halfVerdict.summary}`,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as { type?: string; message: string; nonRetryable?: boolean };
    expect(cause.type).toBe('RegressionError');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toMatch(/^regressed: run .* is slower than its baseline \((5|6) runs\)/);
    expect(cause.message).toMatch(/gp3: regressed: .*effect -\d+\.\d %, 95 % CI \[-\d+\.\d %, -\d+\.\d %\]; t = -(\d+\.\d\d|∞) on logs, .* p = .* run-to-run CV \d/);
    expect(halfResult.status).toBe('completed');
    expect(halfResult.classes.gp3.limits.iops).toBe(GP3_IOPS / 2);
    expect(halfVerdict.verdict).toBe('regressed');
    expect(halfVerdict.baselineRunIds).toEqual(baseline);
    const gp3Half = halfVerdict.classes[0];
    expect(gp3Half.effect).toBeLessThan(-halfVerdict.options.minEffect);
    expect(gp3Half.ci![1]).toBeLessThan(0);
    expect(gp3Half.pValue).toBeLessThan(halfVerdict.options.alpha);
    // Five or six: the spare run may have been set aside as an outlier.
    expect(gp3Half.baseline.runs).toBeGreaterThanOrEqual(DEFAULT_VERDICT_OPTIONS.minBaselineRuns);
    // Runs held at their budget may have identical medians: a spread of 0 is a spread, and the verdict handles it.
    expect(gp3Half.baseline.spread!.cv).toBeGreaterThanOrEqual(0);
    const report = readFileSync(path.join(lab.paths.resultsDir, runFolderName(halfRun), 'report.md'), 'utf8');
    expect(report).toContain('## Regression verdict: **regressed**');
    expect(report).toMatch(/\| baseline run-to-run CV \|/);
    expect((await half.describe()).status.name).toBe('FAILED');

    // A normal rerun: pass, against the same baseline runs (the regressed night is not part of the baseline).
    const rerun = await startNightly(NORMAL);
    hostIds.push(hostIdFor(`${rerun.workflowId}/experiment`, 'gp3', 0));
    const summary = (await rerun.result()) as NightlyRegressionSummary;
    console.log(`normal rerun:\n${summary.verdict.summary}`);
    expect(summary.verdict.verdict).toBe('pass');
    expect(summary.verdict.baselineRunIds).toEqual(baseline);
    const gp3Rerun = summary.verdict.classes[0];
    expect(Math.abs(gp3Rerun.effect!)).toBeLessThan(summary.verdict.options.minEffect);

    // What a person sees: `storage-lab history --preset ci`.
    const listed = await historyCommand({ preset: 'ci' }, store);
    expect(listed.map((e) => [e.runId, e.verdict?.verdict ?? null])).toEqual([
      ...baseline.map((r) => [r, null]),
      [halfRun, 'regressed'],
      [summary.runId, 'pass'],
    ]);
    expect(lab.leftovers(hostIds)).toEqual([]);
  });
});
