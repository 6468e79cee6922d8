/**
 * kill -9 of a host's agent during the TPS run: its supervisor brings the agent back, the lost attempt times out
 * on its heartbeat, the workflow records it as a failed attempt and measures again. The result holds exactly one
 * TPS run (the second), the failed attempt is listed and flagged by a self-check, never averaged in.
 */
import { hostIdFor } from '../../common/ids';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { readResult, waitForActivity } from '../helpers/faults';
import { agentPids, startTestLab, type TestLab } from '../helpers/lab';

const LOCAL_DISK_ONLY = {
  preset: 'ci',
  storageClasses: { gp3: null },
  compare: null,
  workload: { warmupSeconds: 0, durationSeconds: 5 },
  phases: { vacuum: { enabled: false }, backlog: { enabled: false } },
};

describe('kill -9 of a host agent during the TPS run (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('agent-kill');
  });
  afterAll(async () => {
    await lab?.close();
  });

  it('records the lost attempt, measures again, and keeps only the second run', async () => {
    const handle = await lab.startExperiment(LOCAL_DISK_ONLY);
    const runId = handle.workflowId;
    const hostId = hostIdFor(runId, 'local-disk', 0);
    const tps = await waitForActivity(lab.client, clusterWorkflowId(runId, 'local-disk', 0), 'runPgbench', 'tps');
    expect(tps.details?.percent).toBeGreaterThan(0);
    const pids = agentPids(lab.paths, hostId);
    expect(pids).toHaveLength(1);
    process.kill(pids[0], 'SIGKILL');

    const summary = (await handle.result()) as { status: string; failedChecks: string[] };
    expect(summary.status).toBe('completed');
    const result = readResult(lab, runId);
    const cls = result.classes['local-disk'];
    const c = cls.clusters[0];
    expect(c.status).toBe('ok');
    expect(c.failedAttempts).toEqual([
      { phase: 'tps', attempt: 1, error: expect.stringMatching(/heartbeat/i), at: expect.any(String) },
    ]);
    // One run of 5 s, not two runs merged: its per-second series and its own summary agree.
    const run = c.tpsRun!;
    expect(run.durationSeconds).toBe(5);
    expect(run.tpsSeries.length).toBeGreaterThanOrEqual(4);
    expect(run.tpsSeries.length).toBeLessThanOrEqual(6);
    expect(cls.medianTps).toBeCloseTo(run.tps, 0);
    expect(result.checks).toContainEqual(
      expect.objectContaining({ name: 'attempt failed (not averaged in)', scope: hostId, ok: false }),
    );
    expect(summary.failedChecks.some((f) => f.startsWith('attempt failed (not averaged in)'))).toBe(true);
    // The killed agent's pgbench ran on into the void; it is gone with the host.
    expect(lab.leftovers([hostId])).toEqual([]);
  });
});
