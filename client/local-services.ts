/**
 * The lab's long-running local services: the Temporal dev server and the control worker, started detached with
 * pid files under STORAGE_LAB_HOME, so `dev up` is idempotent and `dev down` finds them again. A rebuilt control
 * worker of another build id starts beside the old one, which serves its pinned runs to the end and then stops
 * (worker/versioning.ts).
 */
import { Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { controlTaskQueue, temporalEnv } from '../worker/env';
import { deriveBuildId, versioningSettings } from '../worker/versioning';
import { openLabFile, removeLabFile, writeLabFile } from '../lib/lab-fs';
import { ensureDir, labPaths, PROJECT_ROOT, registerLabPaths, type LabPaths } from '../lib/lab-paths';
import { PortInUseError, startDevServer, waitForServer } from '../infra/temporal/dev-server';

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

/** Where the local dev server's HTTP API and metrics ports lie, from its frontend's port (TEMPORAL_ADDRESS). */
export const DEV_HTTP_PORT_OFFSET = 10;
export const DEV_METRICS_PORT_OFFSET = 30;
/** Offsets from the frontend's port of every port `dev up` binds but the UI's (a block to find free: lib/net.ts). */
export const DEV_PORT_OFFSETS = [0, DEV_HTTP_PORT_OFFSET, DEV_METRICS_PORT_OFFSET] as const;

/** Ports of the local dev server; the UI on 8233 unless STORAGE_LAB_UI_PORT says otherwise. */
export function localEndpoints(env: NodeJS.ProcessEnv = process.env) {
  const address = env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const [ip, port] = address.split(':');
  const uiPort = Number(env.STORAGE_LAB_UI_PORT ?? Number(port) + 1000);
  return {
    ip,
    port: Number(port),
    uiPort,
    httpPort: Number(port) + DEV_HTTP_PORT_OFFSET,
    metricsPort: Number(port) + DEV_METRICS_PORT_OFFSET,
    address,
    uiUrl: `http://${ip}:${uiPort}`,
  };
}

const pidFile = (paths: LabPaths, name: string) => path.join(paths.runDir, `${name}.pid`);

/** A pid file: the process, the build stamp it was started from, and (control workers) its build id. */
function readPid(paths: LabPaths, name: string): { pid: number; stamp: string; buildId: string } | null {
  const file = pidFile(paths, name);
  if (!existsSync(file)) return null;
  const [pid, stamp, buildId] = readFileSync(file, 'utf8').split('\n');
  return { pid: Number(pid), stamp: stamp ?? '', buildId: buildId ?? '' };
}

/** Superseded control workers still serving their pinned runs: control-worker-draining-<pid>.pid. */
const DRAINING_PREFIX = 'control-worker-draining-';

function drainingWorkers(paths: LabPaths): string[] {
  if (!existsSync(paths.runDir)) return [];
  return readdirSync(paths.runDir)
    .filter((f) => f.startsWith(DRAINING_PREFIX) && f.endsWith('.pid'))
    .map((f) => f.slice(0, -'.pid'.length));
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
    }).catch((err: unknown) => {
      if (!(err instanceof PortInUseError)) throw err;
      throw new PortInUseError(
        `${err.message}: stop what holds it, or choose other ports: TEMPORAL_ADDRESS=${ep.ip}:<port> (the HTTP API and metrics ` +
          `take <port>+${DEV_HTTP_PORT_OFFSET} and <port>+${DEV_METRICS_PORT_OFFSET}) and STORAGE_LAB_UI_PORT=<port> for the UI`,
      );
    });
    writeLabFile(pidFile(paths, 'temporal'), `${started.process.pid}\n`);
  } else {
    await waitForServer(ep.address, 30_000);
  }

  for (const name of drainingWorkers(paths)) if (!alive(readPid(paths, name)?.pid)) removeLabFile(pidFile(paths, name));
  const worker = readPid(paths, 'control-worker');
  const stamp = buildStamp();
  if (!alive(worker?.pid) || worker?.stamp !== stamp) {
    const settings = versioningSettings(controlTaskQueue());
    const buildId = await buildIdOnDisk(settings.buildId);
    if (alive(worker?.pid) && worker?.buildId === buildId) {
      // The same workflow code (activities changed): replace it in place, its pinned runs go on in the new process.
      await stop(paths, 'control-worker');
    } else if (alive(worker?.pid) && worker?.buildId) {
      // Another build: the old one serves its pinned runs to the end and stops by itself (or at `dev down`).
      writeLabFile(pidFile(paths, `${DRAINING_PREFIX}${worker.pid}`), readFileSync(pidFile(paths, 'control-worker'), 'utf8'));
      removeLabFile(pidFile(paths, 'control-worker'));
    } else if (alive(worker?.pid)) {
      await stop(paths, 'control-worker'); // Started before worker versioning: it cannot drain.
    }
    const log = openLabFile(path.join(paths.logsDir, 'control-worker.log'), { append: true });
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'worker', 'control-worker.js')], {
      detached: true,
      stdio: ['ignore', log, log],
      // The build id computed here is the one the worker runs as (it would compute the same, bundling once more).
      env: { ...process.env, TEMPORAL_ADDRESS: ep.address, STORAGE_LAB_HOME: paths.home, STORAGE_LAB_BUILD_ID: buildId },
    });
    closeSync(log);
    child.unref();
    writeLabFile(pidFile(paths, 'control-worker'), `${child.pid}\n${stamp}\n${buildId}\n`);
    if (!settings.manual) await waitUntilCurrent(ep.address, settings.deploymentName, buildId, child, path.join(paths.logsDir, 'control-worker.log'));
  }
  return { address: ep.address, uiUrl: ep.uiUrl };
}

/** The build id of the code on disk, as the control worker derives it (worker/versioning.ts). */
async function buildIdOnDisk(explicit: string | undefined): Promise<string> {
  const bundle = async () => {
    const { bundleWorkflowCode } = await import('@temporalio/worker');
    const silent = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, trace: () => undefined, log: () => undefined };
    return (await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: silent })).code;
  };
  return deriveBuildId(PROJECT_ROOT, bundle, explicit);
}

/** Waits until the new control worker made its build current, so that a run started next reaches it. */
async function waitUntilCurrent(address: string, deploymentName: string, buildId: string, child: ChildProcess, logFile: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the control worker exited with code ${child.exitCode}; see ${logFile}`);
      const current = await connection.workflowService
        .describeWorkerDeployment({ namespace: temporalEnv().namespace, deploymentName })
        .then((r) => r.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId)
        .catch(() => undefined); // No deployment until the worker's first poll.
      if (current === buildId) return;
      if (Date.now() > deadline) throw new Error(`the control worker (build ${buildId}) did not become current within 120 s; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await connection.close();
  }
}

/**
 * Stops the control workers (a draining one too: its open pinned runs wait for a worker of their build), then the
 * dev server (the SQLite file keeps every run for the next `dev up`).
 */
export async function devDown(): Promise<void> {
  const paths = labPaths();
  registerLabPaths(paths);
  for (const name of drainingWorkers(paths)) await stop(paths, name);
  await stop(paths, 'control-worker');
  await stop(paths, 'temporal');
}

export function devStatus(): ServiceStatus[] {
  const paths = labPaths();
  const ep = localEndpoints();
  const workerLog = `logs ${path.join(paths.logsDir, 'control-worker.log')}`;
  const status = (name: string, detail: (buildId: string) => string): ServiceStatus => {
    const p = readPid(paths, name);
    return { name, pid: p?.pid ?? null, running: alive(p?.pid), detail: detail(p?.buildId ?? '') };
  };
  return [
    status('temporal', () => `${ep.address}, UI ${ep.uiUrl}, db ${paths.temporalDb}`),
    status('control-worker', (buildId) => `${buildId ? `build ${buildId}, ` : ''}${workerLog}`),
    // Until its pinned runs are over (it then stops; the next `dev up` removes its pid file).
    ...drainingWorkers(paths)
      .map((name) => status(name, (buildId) => `build ${buildId}, draining, ${workerLog}`))
      .filter((s) => s.running),
  ];
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
