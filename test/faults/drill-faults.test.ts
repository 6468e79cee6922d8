/**
 * Faults in a restore drill (two hosts: the source and the restore host, a WAL-G store in a folder).
 * Cancelled while the restore host fetches the backup: the drill ends CANCELLED with its result saved, both hosts
 * and its backup store removed. Terminated at the same point: no compensation runs, and `storage-lab sweep` removes
 * both hosts.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { backupsDirFor } from '../../lib/lab-paths';
import { runFolderName } from '../../lib/results-store';
import type { RestoreDrillResult } from '../../common/results/drill-result';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { waitForActivity } from '../helpers/faults';
import { startTestLab, type TestLab } from '../helpers/lab';
import { serverAddress, uniqueId } from '../helpers/temporal';

const run = promisify(execFile);
const CLI = path.join(__dirname, '..', '..', 'client', 'cli.js');

describe('restore drill faults (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('drill-faults');
  });
  afterAll(async () => {
    await lab?.close();
  });

  const startDrill = () =>
    lab.client.workflow.start(WORKFLOW_TYPES.restoreDrill, {
      taskQueue: lab.taskQueue,
      workflowId: uniqueId('restore-drill'),
      args: [{ preset: 'ci' }],
    });
  const hostsOf = (runId: string) => [hostIdFor(runId, 'source', 0), hostIdFor(runId, 'restore', 0)];
  const backupStore = (runId: string) => path.join(backupsDirFor(lab.paths.hostsDir), runFolderName(runId));

  it('cancelled while the restore host fetches the backup: result saved, hosts and backup store removed', async () => {
    const handle = await startDrill();
    await waitForActivity(lab.client, handle.workflowId, 'restoreBackup');
    await handle.cancel();
    await handle.result().catch(() => undefined);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const result = JSON.parse(
      readFileSync(path.join(lab.paths.resultsDir, runFolderName(handle.workflowId), 'result.json'), 'utf8'),
    ) as RestoreDrillResult;
    expect(result.status).toBe('cancelled');
    expect(result.backup?.tool).toBe('wal-g');
    expect(lab.leftovers(hostsOf(handle.workflowId))).toEqual([]);
    expect(existsSync(backupStore(handle.workflowId))).toBe(false);
  });

  it('terminated while the restore host fetches the backup: storage-lab sweep removes both hosts and the backup store', async () => {
    const handle = await startDrill();
    await waitForActivity(lab.client, handle.workflowId, 'restoreBackup');
    await handle.terminate('fault test: no compensation runs');
    const hostIds = hostsOf(handle.workflowId);
    expect(lab.leftovers(hostIds).some((l) => l.startsWith('process'))).toBe(true);
    const { stdout } = await run(process.execPath, [CLI, 'sweep'], {
      env: { ...process.env, TEMPORAL_ADDRESS: serverAddress(), STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue },
      timeout: 120_000,
    });
    expect(stdout).toMatch(/Removed 2 hosts:/);
    for (const hostId of hostIds) expect(stdout).toContain(hostId);
    expect(lab.leftovers(hostIds)).toEqual([]);
    expect(stdout).toMatch(/Removed 1 backup stores:/);
    expect(existsSync(backupStore(handle.workflowId))).toBe(false);
  });
});
