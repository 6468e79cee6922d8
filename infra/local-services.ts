/**
 * The lab's long-running local services: the Temporal dev server and the control worker, started detached with
 * pid files under STORAGE_LAB_HOME, so `dev up` is idempotent and `dev down` finds them again.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { openLabFile, removeLabFile, writeLabFile } from './lab-fs';
import { ensureDir, labPaths, registerLabPaths, type LabPaths } from './lab-paths';
import { startDevServer, waitForServer } from './temporal/dev-server';

export interface ServiceStatus {
  name: string;
  pid: number | null;
  running: boolean;
  detail: string;
}

export interface LocalEndpoints {
  address: string;
  uiUrl: string;
}

/** Ports of the local dev server; the UI on 8233 unless STORAGE_LAB_UI_PORT says otherwise. */
export function localEndpoints(env: NodeJS.ProcessEnv = process.env) {
  const address = env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const [ip, port] = address.split(':');
  const uiPort = Number(env.STORAGE_LAB_UI_PORT ?? Number(port) + 1000);
  return {
    ip,
    port: Number(port),
    uiPort,
    httpPort: Number(port) + 10,
    metricsPort: Number(port) + 30,
    address,
    uiUrl: `http://${ip}:${uiPort}`,
  };
}

const pidFile = (paths: LabPaths, name: string) => path.join(paths.runDir, `${name}.pid`);

function readPid(paths: LabPaths, name: string): { pid: number; stamp: string } | null {
  const file = pidFile(paths, name);
  if (!existsSync(file)) return null;
  const [pid, stamp] = readFileSync(file, 'utf8').split('\n');
  return { pid: Number(pid), stamp: stamp ?? '' };
}

function alive(pid: number | undefined | null): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Identifies the build a worker runs, so `dev up` restarts a worker left running from an older build. */
function buildStamp(): string {
  const marker = path.join(__dirname, '..', 'workflows', 'index.js');
  return existsSync(marker) ? String(statSync(marker).mtimeMs) : 'unknown';
}

/** Starts the dev server and the control worker unless they already run. */
export async function devUp(): Promise<LocalEndpoints> {
  const paths = labPaths();
  registerLabPaths(paths);
  const ep = localEndpoints();
  ensureDir(paths.home);
  ensureDir(paths.logsDir);
  ensureDir(paths.runDir);

  const server = readPid(paths, 'temporal');
  if (!alive(server?.pid)) {
    const started = await startDevServer({
      dbFile: paths.temporalDb,
      logFile: path.join(paths.logsDir, 'temporal.log'),
      ip: ep.ip,
      port: ep.port,
      uiPort: ep.uiPort,
      httpPort: ep.httpPort,
      metricsPort: ep.metricsPort,
      detached: true,
    });
    writeLabFile(pidFile(paths, 'temporal'), `${started.process.pid}\n`);
  } else {
    await waitForServer(ep.address, 30_000);
  }

  const worker = readPid(paths, 'control-worker');
  const stamp = buildStamp();
  if (alive(worker?.pid) && worker?.stamp !== stamp) await stop(paths, 'control-worker');
  if (!alive(worker?.pid) || worker?.stamp !== stamp) {
    const log = openLabFile(path.join(paths.logsDir, 'control-worker.log'), { append: true });
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'worker', 'control-worker.js')], {
      detached: true,
      stdio: ['ignore', log, log],
      env: { ...process.env, TEMPORAL_ADDRESS: ep.address, STORAGE_LAB_HOME: paths.home },
    });
    closeSync(log);
    child.unref();
    writeLabFile(pidFile(paths, 'control-worker'), `${child.pid}\n${stamp}\n`);
  }
  return { address: ep.address, uiUrl: ep.uiUrl };
}

/** Stops the control worker, then the dev server (the SQLite file keeps every run for the next `dev up`). */
export async function devDown(): Promise<void> {
  const paths = labPaths();
  registerLabPaths(paths);
  await stop(paths, 'control-worker');
  await stop(paths, 'temporal');
}

export function devStatus(): ServiceStatus[] {
  const paths = labPaths();
  const ep = localEndpoints();
  return (['temporal', 'control-worker'] as const).map((name) => {
    const p = readPid(paths, name);
    const running = alive(p?.pid);
    const detail =
      name === 'temporal' ? `${ep.address}, UI ${ep.uiUrl}, db ${paths.temporalDb}` : `logs ${path.join(paths.logsDir, `${name}.log`)}`;
    return { name, pid: p?.pid ?? null, running, detail };
  });
}

async function stop(paths: LabPaths, name: string): Promise<void> {
  const p = readPid(paths, name);
  if (p && alive(p.pid)) {
    process.kill(p.pid, 'SIGTERM');
    for (let i = 0; i < 100 && alive(p.pid); i++) await new Promise((r) => setTimeout(r, 100));
    if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
  }
  removeLabFile(pidFile(paths, name));
}
