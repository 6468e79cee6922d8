/**
 * kill -9 of the control worker (workflows and control activities) at seven points of one run, restarting it each
 * time: the run completes, with every row loaded exactly once, no failed attempt, and nothing left behind.
 * Short control activities are held by the fault hook (test/helpers/fault-control-worker.ts) so the kill lands
 * inside them: after provisioning (the host exists, the completion is lost), before teardown, and after
 * writeResults (the results are written, the completion is lost). Host activities run on the host's agent and are
 * caught while pending: configure, load, warm-up, TPS run.
 */
import { hostIdFor } from '../../common/core/ids';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { startControlProcess, type ControlProcess } from '../helpers/control-process';
import { readResult, SMALL_GP3, waitForActivity } from '../helpers/faults';
import { startTestLab, type TestLab } from '../helpers/lab';

describe('kill -9 of the control worker (faults)', () => {
  let lab: TestLab;
  let worker: ControlProcess | undefined;

  beforeAll(async () => {
    lab = await startTestLab('cw-kill');
    // This lab's control worker runs as a process of its own instead of inside the test.
    await lab.stopWorker();
  });
  afterAll(async () => {
    await worker?.kill();
    await lab?.close();
  });

  it('completes a run killed at 7 points with exact rows and no leftovers', async () => {
    const kills: string[] = [];
    let n = 0;
    const restart = async (point: string, holds: string[] = []) => {
      await worker!.kill();
      kills.push(point);
      worker = await startControlProcess(lab, { name: `w${++n}`, holds });
    };
    worker = await startControlProcess(lab, { name: `w${++n}`, holds: ['provisionHost:after'] });
    const started = Date.now();
    const handle = await lab.startExperiment(SMALL_GP3);
    const runId = handle.workflowId;
    const cluster = clusterWorkflowId(runId, 'gp3', 0);

    await worker.waitForHold('provisionHost', 'after');
    await restart('provisionHost: host created, completion not reported');
    await waitForActivity(lab.client, cluster, 'configurePostgres');
    await restart('configurePostgres running on the agent');
    await waitForActivity(lab.client, cluster, 'loadData', 'load');
    await restart('loadData between chunks');
    await waitForActivity(lab.client, cluster, 'runPgbench', 'warmup');
    await restart('warm-up pgbench');
    await waitForActivity(lab.client, cluster, 'runPgbench', 'tps');
    await restart('TPS pgbench', ['teardownHost:before']);
    await worker.waitForHold('teardownHost', 'before');
    await restart('teardownHost: started, nothing removed yet', ['writeResults:after']);
    await worker.waitForHold('writeResults', 'after');
    await restart('writeResults: results written, completion not reported');

    const summary = (await handle.result()) as { status: string };
    expect(summary.status).toBe('completed');
    expect(kills).toHaveLength(7);
    const result = readResult(lab, runId);
    const c = result.classes.gp3.clusters[0];
    expect(c.status).toBe('ok');
    expect(c.load?.verified).toEqual({ rows: 1_000_000, distinctAids: 1_000_000 });
    expect(c.load?.chunks).toBe(20);
    // The TPS run happened on the agent: a dead control worker did not disturb the measurement.
    expect(c.failedAttempts).toEqual([]);
    expect(c.tpsRun?.tpsSeries.length).toBeGreaterThanOrEqual(4);
    expect(lab.leftovers([hostIdFor(runId, 'gp3', 0)])).toEqual([]);
    console.log(`completed after ${kills.length} kills in ${Math.round((Date.now() - started) / 1000)} s:\n  ${kills.join('\n  ')}`);
  });
});
