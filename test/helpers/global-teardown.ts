/** Stops the suite's Temporal server and removes its folder. */
import { rmSync } from 'node:fs';

export default async function globalTeardown(): Promise<void> {
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
  if (process.env.STORAGE_LAB_TEST_DIR && !process.env.STORAGE_LAB_KEEP_TEST_DIR)
    rmSync(process.env.STORAGE_LAB_TEST_DIR, { recursive: true, force: true });
}
