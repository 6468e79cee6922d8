/**
 * kill -9 of a host's agent during the TPS run: its supervisor brings the agent back, the lost attempt times out
 * on its heartbeat, the workflow records it as a failed attempt and measures again; the retry stops the killed
 * attempt's pgbench first. Before the kill: the running pgbench's OS user is the unprivileged one, its role no superuser,
 * and neither it nor the agent holds the control worker's secrets (its environment has them). The result holds exactly one
 * TPS run (the second), the failed attempt is listed and flagged by a self-check, never averaged in.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { toolProcesses } from '../../activities/host/leftovers';
import { withConnection } from '../../lib/pg';
import { hostIdFor } from '../../common/core/ids';
import { WORKLOAD_ROLE } from '../../common/core/names';
import { CLIENT_OS_USER, lookupUser } from '../../lib/postgres-binaries';
import type { HostConfig } from '../../common/core/hosts';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { readResult, waitForActivity } from '../helpers/faults';
import { agentPids, startTestLab, type TestLab, hostDirOf } from '../helpers/lab';
import { NO_PHASES } from '../helpers/phases';

const LOCAL_DISK_ONLY = {
  preset: 'ci',
  storageClasses: { gp3: null },
  compare: null,
  // The killed attempt is noticed by its heartbeat within the host's silence bound.
  host: { deadAfterSeconds: 20 },
  workload: { warmupSeconds: 0, durationSeconds: 5 },
  phases: NO_PHASES,
};

/** Secrets a control worker's environment may hold: no host agent or tool may inherit them. */
const SECRETS = { PGPASSWORD: 'pg-secret', AWS_SECRET_ACCESS_KEY: 'aws-secret', TEMPORAL_API_KEY: 'temporal-secret' };

/** The variable names of a process's environment. */
const environNames = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((e) => e.slice(0, e.indexOf('=')));

describe('kill -9 of a host agent during the TPS run (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    Object.assign(process.env, SECRETS);
    lab = await startTestLab('agent-kill');
  });
  afterAll(async () => {
    for (const name of Object.keys(SECRETS)) delete process.env[name];
    await lab?.close();
  });

  it('records the lost attempt, measures again, and keeps only the second run', async () => {
    const handle = await lab.startExperiment(LOCAL_DISK_ONLY);
    const runId = handle.workflowId;
    const hostId = hostIdFor(runId, 'local-disk', 0);
    const tps = await waitForActivity(lab.client, clusterWorkflowId(runId, 'local-disk', 0), 'runPgbench', 'tps');
    expect(tps.details?.percent).toBeGreaterThan(0);
    // Least privilege: the workload runs as the unprivileged client user, never root, and as a non-superuser role.
    const config = JSON.parse(readFileSync(path.join(hostDirOf(lab.paths, hostId), 'host.json'), 'utf8')) as HostConfig;
    const pgbench = toolProcesses(config.socketDir).filter((p) => p.name === 'pgbench');
    expect(pgbench.length).toBe(1);
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pgbench[0].pid}/status`, 'utf8'))![1]);
    expect(uid).toBe(lookupUser(CLIENT_OS_USER)!.uid);
    expect(uid).not.toBe(0);
    const roles = await withConnection(config, (c) =>
      c.query<{ usename: string; rolsuper: boolean }>(
        `SELECT DISTINCT a.usename, r.rolsuper FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename WHERE a.application_name = 'storage-lab pgbench tps'`,
      ),
    );
    expect(roles.rows).toEqual([{ usename: WORKLOAD_ROLE, rolsuper: false }]);
    const pids = agentPids(lab.paths, hostId);
    expect(pids).toHaveLength(1);
    for (const pid of [pgbench[0].pid, pids[0]]) for (const secret of Object.keys(SECRETS)) expect(environNames(pid)).not.toContain(secret);
    expect(environNames(pids[0])).toContain('TEMPORAL_ADDRESS');
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
