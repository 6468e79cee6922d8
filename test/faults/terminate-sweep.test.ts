/**
 * Terminated runs. Terminating an experiment cancels its clusters (parent close policy), which tear their hosts
 * down themselves. Terminating the clusters too leaves hosts that no compensation will remove: `storage-lab sweep`
 * (the sweeper workflow on this lab's control worker) finds them and removes every process, mount, loop device,
 * cgroup and folder.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { hostIdFor } from '../../common/core/ids';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { SMALL_GP3, waitForActivity } from '../helpers/faults';
import { startTestLab, type TestLab } from '../helpers/lab';
import { serverAddress } from '../helpers/temporal';

const run = promisify(execFile);
const CLI = path.join(__dirname, '..', '..', 'client', 'cli.js');
const SMALL = { ...SMALL_GP3, data: { scale: 2, chunkRows: 20_000 } };

describe('terminated runs (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('terminate');
  });
  afterAll(async () => {
    await lab?.close();
  });

  /** Waits until a workflow has closed; returns its status. */
  async function closed(workflowId: string): Promise<string> {
    for (;;) {
      const status = (await lab.client.workflow.getHandle(workflowId).describe()).status.name;
      if (status !== 'RUNNING') return status;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('terminating an experiment cancels its cluster, which tears its host down', async () => {
    const handle = await lab.startExperiment(SMALL);
    const cluster = clusterWorkflowId(handle.workflowId, 'gp3', 0);
    await waitForActivity(lab.client, cluster, 'runPgbench', 'tps');
    await handle.terminate('fault test: terminate the experiment');
    expect(await closed(cluster)).toBe('CANCELLED');
    expect(lab.leftovers([hostIdFor(handle.workflowId, 'gp3', 0)])).toEqual([]);
  });

  it('storage-lab sweep removes what terminated clusters left behind', async () => {
    const handle = await lab.startExperiment(SMALL);
    const hostId = hostIdFor(handle.workflowId, 'gp3', 0);
    const cluster = clusterWorkflowId(handle.workflowId, 'gp3', 0);
    await waitForActivity(lab.client, cluster, 'runPgbench', 'tps');
    await lab.client.workflow.getHandle(cluster).terminate('fault test: no compensation runs');
    await handle.terminate('fault test: terminate the experiment');
    const left = lab.leftovers([hostId]);
    for (const kind of ['host folder', 'mount', 'loop device', 'cgroup', 'process'])
      expect(left.some((l) => l.startsWith(kind))).toBe(true);

    const { stdout } = await run(process.execPath, [CLI, 'sweep'], {
      env: { ...process.env, TEMPORAL_ADDRESS: serverAddress(), STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue },
      timeout: 120_000,
    });
    expect(stdout).toMatch(new RegExp(`Removed 1 hosts:\\n\\s+local\\s+${hostId}\\s+run ${handle.workflowId} has closed`));
    expect(lab.leftovers([hostId])).toEqual([]);
  });
});
