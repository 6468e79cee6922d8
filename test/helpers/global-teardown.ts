/**
 * Stops the suite's Temporal server and removes its folder. A test that failed half-way may have left hosts running
 * (supervisor, agent, Postgres, a mounted loop device, cgroups): each lab's hosts are torn down by the local
 * provider first, so a failed test cannot leave processes or devices behind for the next run.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { registerLabRoot } from '../../lib/lab-fs';
import path from 'node:path';
import { LocalProvider } from '../../infra/providers/local/local-provider';

async function tearDownLeftHosts(suiteDir: string): Promise<void> {
  for (const lab of readdirSync(suiteDir, { withFileTypes: true })) {
    const hostsDir = path.join(suiteDir, lab.name, 'hosts');
    if (!lab.isDirectory() || !existsSync(hostsDir)) continue;
    registerLabRoot(hostsDir);
    const provider = new LocalProvider({ hostsDir, agentEnv: {}, supervisorScript: '' });
    for (const { hostId, runId } of await provider.list()) {
      try {
        // As the sweeper would: for the run the host's record names (its owner's workflow may be gone).
        await provider.teardown(hostId, { sweptRun: runId });
        console.error(`global teardown: removed host ${hostId} that ${lab.name} left`);
      } catch (err) {
        console.error(`global teardown: host ${hostId} that ${lab.name} left: ${String(err)}`);
      }
    }
  }
}

export default async function globalTeardown(): Promise<void> {
  const dir = process.env.STORAGE_LAB_TEST_DIR;
  if (dir && existsSync(dir)) await tearDownLeftHosts(dir);
  const pid = Number(process.env.STORAGE_LAB_TEST_SERVER_PID);
  if (pid) {
    try {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 100; i++) {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      }
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  if (dir && !process.env.STORAGE_LAB_KEEP_TEST_DIR) rmSync(dir, { recursive: true, force: true });
}
