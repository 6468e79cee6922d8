/**
 * kill -9 of the Temporal dev server in the middle of a run (a server of this test's own, on free ports, with its
 * own SQLite file), then a restart on the same file and ports: the control worker and the host agent reconnect,
 * the load resumes, and the run completes with exact rows and nothing left behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { hostIdFor } from '../../common/core/ids';
import { startDevServer, startThrowawayServer, type DevServer, type DevServerOptions } from '../../infra/temporal/dev-server';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { readResult, SMALL_GP3, waitForActivity } from '../helpers/faults';
import { startTestLab, type TestLab } from '../helpers/lab';
import { connect } from '../helpers/temporal';

describe('Temporal server restart mid-run (faults)', () => {
  let dir: string;
  let options: DevServerOptions;
  let server: DevServer | undefined;
  let lab: TestLab | undefined;

  const stopServer = async () => {
    const child = server?.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, 'restart-server-'));
    ({ server, options } = await startThrowawayServer(dir));
    lab = await startTestLab('restart', { address: server.address });
  });
  afterAll(async () => {
    await lab?.close();
    await stopServer();
    rmSync(dir, { recursive: true, force: true });
  });

  it('completes a run whose server was killed and restarted during the load', async () => {
    const handle = await lab!.startExperiment(SMALL_GP3);
    const runId = handle.workflowId;
    const load = await waitForActivity(lab!.client, clusterWorkflowId(runId, 'gp3', 0), 'loadData', 'load');
    await stopServer();
    const downAt = Date.now();
    await new Promise((r) => setTimeout(r, 2_000));
    server = await startDevServer(options);
    console.log(`server down for ${Date.now() - downAt} ms during the load (${load.details?.percent ?? 0} % loaded)`);

    // A new client: the test's own connection saw the server go away.
    const { connection, client } = await connect(server.address);
    try {
      const summary = (await client.workflow.getHandle(runId).result()) as { status: string };
      expect(summary.status).toBe('completed');
    } finally {
      await connection.close();
    }
    const c = readResult(lab!, runId).classes.gp3.clusters[0];
    expect(c.status).toBe('ok');
    expect(c.load?.verified).toEqual({ rows: 1_000_000, distinctAids: 1_000_000 });
    expect(lab!.leftovers([hostIdFor(runId, 'gp3', 0)])).toEqual([]);
  });
});
