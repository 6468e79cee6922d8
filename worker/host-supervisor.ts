/**
 * Keeps a host's agent running, as systemd's Restart=always does on EC2: an agent killed mid-phase comes back,
 * and Temporal retries the phase on it (the load resumes from the database). SIGTERM stops both.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const RESTART_DELAY_MS = 1_000;
const configFile = process.argv[2];
const agentScript = path.join(__dirname, 'host-agent.js');
let agent: ChildProcess | undefined;
let stopping = false;

function start(): void {
  agent = spawn(process.execPath, [agentScript, configFile], { stdio: 'inherit' });
  agent.on('exit', (code, signal) => {
    if (stopping) process.exit(0);
    console.error(`host agent exited (${signal ?? `code ${code}`}); restarting in ${RESTART_DELAY_MS} ms`);
    setTimeout(start, RESTART_DELAY_MS);
  });
}

for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    stopping = true;
    if (agent?.exitCode === null) agent.kill(sig);
    else process.exit(0);
  });
}

start();
