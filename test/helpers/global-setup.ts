/**
 * One Temporal dev server for the whole suite (2 cores: one server, not one per file), on free ports of
 * 127.0.0.1 under a temporary folder, and one workflow bundle that every workflow test reuses.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startThrowawayServer } from '../../infra/temporal/dev-server';

export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-suite-'));
  // Host folders live below it and Postgres runs as the postgres user, who must be able to traverse it.
  chmodSync(dir, 0o755);
  const { server } = await startThrowawayServer(dir);
  // Jest stopped by a signal skips its global teardown: a watchdog outside it runs the teardown then. Started before
  // anything else can fail or be interrupted.
  spawn(process.execPath, [require.resolve('./suite-watchdog'), String(process.pid), String(server.process.pid)], {
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, STORAGE_LAB_TEST_DIR: dir, STORAGE_LAB_TEST_SERVER_PID: String(server.process.pid) },
  }).unref();
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: { info: () => undefined, warn: () => undefined, error: console.error, debug: () => undefined, trace: () => undefined, log: () => undefined },
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);
  Object.assign(process.env, {
    TEMPORAL_ADDRESS: server.address,
    STORAGE_LAB_TEST_DIR: dir,
    STORAGE_LAB_TEST_UI: server.uiUrl,
    STORAGE_LAB_TEST_BUNDLE: bundlePath,
    STORAGE_LAB_TEST_SERVER_PID: String(server.process.pid),
  });
}
