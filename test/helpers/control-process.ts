/** A lab's control worker as a separate process (test/helpers/fault-control-worker.ts), to kill -9 and restart. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestLab } from './lab';
import { serverAddress } from './temporal';

export interface ControlProcess {
  readonly pid: number;
  /** Folder where held activities leave their markers. */
  faultDir: string;
  /** Waits until a held activity reached its hold (the marker exists). */
  waitForHold(activity: string, when: 'before' | 'after', timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
}

/** Starts the lab's control worker in its own process; resolves once it polls. */
export async function startControlProcess(
  lab: TestLab,
  opts: { holds?: string[]; address?: string; name: string },
): Promise<ControlProcess> {
  const faultDir = path.join(lab.paths.home, 'faults', opts.name);
  mkdirSync(faultDir, { recursive: true });
  const logFile = path.join(lab.paths.home, `control-worker-${opts.name}.log`);
  const log = openSync(logFile, 'a');
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'fault-control-worker.js')], {
    stdio: ['ignore', log, log],
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: opts.address ?? serverAddress(),
      STORAGE_LAB_HOME: lab.paths.home,
      STORAGE_LAB_HOSTS_DIR: lab.paths.hostsDir,
      STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue,
      STORAGE_LAB_FAULT_HOLDS: (opts.holds ?? []).join(','),
      STORAGE_LAB_FAULT_DIR: faultDir,
    },
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  while (!readFileSync(logFile, 'utf8').includes(`control worker ${child.pid} polling`)) {
    if (child.exitCode !== null) throw new Error(`control worker exited (${child.exitCode}); see ${logFile}`);
    if (Date.now() > deadline) throw new Error(`control worker did not start within 60 s; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: child.pid!,
    faultDir,
    async waitForHold(activity, when, timeoutMs = 120_000) {
      const marker = path.join(faultDir, `${activity}-${when}`);
      const end = Date.now() + timeoutMs;
      while (!existsSync(marker)) {
        if (child.exitCode !== null) throw new Error(`control worker exited before ${activity} (${when}); see ${logFile}`);
        if (Date.now() > end) throw new Error(`${activity} did not reach its hold (${when}) within ${timeoutMs / 1000} s`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
