/**
 * Keeps a host's agent running, as systemd's Restart=always does on EC2: an agent killed mid-step (kill -9, or the
 * kernel's OOM killer in the host's memory cgroup) comes back and takes over the host's queue, and Temporal retries
 * the step on it. The supervisor lives outside the host's cgroups, so what kills the host's processes for memory
 * cannot kill it; it starts each agent inside them, so Postgres and pgbench inherit the host's limits.
 * SIGTERM stops both.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { joinScript } from '../lib/cgroups';
import { readConfig } from '../infra/providers/local/host-config-file';
import { registerLabRoot } from '../lib/lab-fs';

const RESTART_DELAY_MS = 1_000;
const configFile = process.argv[2];
// The host's folder (its host.json is read through the file guard).
if (configFile) registerLabRoot(path.dirname(path.resolve(configFile)));
const agentScript = path.join(__dirname, 'host-agent.js');
let agent: ChildProcess | undefined;
let stopping = false;

/** The agent's command: joins the host's cgroups first (when it has them), then becomes the agent. */
function agentCommand(): [string, string[]] {
  const cg = readConfig(configFile).cgroup;
  const dirs = cg ? [...new Set([cg.memoryDir, cg.ioDir, cg.cpuDir, cg.netDir ?? null].filter((d): d is string => d !== null))] : [];
  if (dirs.length === 0) return [process.execPath, [agentScript, configFile]];
  return ['sh', ['-c', `${joinScript({ dirs })} && exec "$0" "$@"`, process.execPath, agentScript, configFile]];
}

function start(): void {
  const [cmd, args] = agentCommand();
  agent = spawn(cmd, args, { stdio: 'inherit' });
  agent.on('exit', (code, signal) => {
    if (stopping) process.exit(0);
    console.error(
      JSON.stringify({ time: new Date().toISOString(), level: 'WARN', msg: `host agent exited (${signal ?? `code ${code}`}); restarting in ${RESTART_DELAY_MS} ms`, role: 'host-supervisor', config: configFile }),
    );
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
