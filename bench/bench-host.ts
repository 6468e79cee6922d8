/**
 * A bare local host for benchmarks: a Postgres in a temporary folder (no cgroups, no Temporal server), driven by
 * the lab's own host activities inside a mock activity context, so a benchmark measures the real code paths.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configurePostgres, stopPostgres, type LabConfigInput } from '../activities/host/postgres';
import type { HostDeps } from '../activities/host/deps';
import { LAB_SETTINGS } from '../common/input/postgres-settings';
import { registerLabRoot } from '../lib/lab-fs';
import { clientOsUser, findClientBinDir, findPostgresBinDir, postgresOsUser } from '../lib/postgres-binaries';
import type { HostConfig } from '../common/core/hosts';
import { deviceOfPath } from '../lib/block-devices';
import { freePort } from '../lib/net';
import { IoCap } from '../lib/io-cap';

export interface BenchHost {
  deps: HostDeps;
  /** Runs an activity function in a mock activity context (heartbeats go nowhere). */
  run<A extends unknown[], R>(fn: (deps: HostDeps, ...args: A) => Promise<R>, ...args: A): Promise<R>;
  close(): Promise<void>;
}

/** Settings given as one record, split as a host takes them: the names the lab manages as its own, the rest as a spec's. */
export function hostSettings(settings: Record<string, string>): Pick<LabConfigInput, 'server' | 'user'> {
  const entries = Object.entries(settings);
  const lab = entries.filter(([k]) => Object.hasOwn(LAB_SETTINGS, k));
  return { server: Object.fromEntries(lab), user: Object.fromEntries(entries.filter(([k]) => !Object.hasOwn(LAB_SETTINGS, k))) };
}

/** Where a bench host lives: a temporary folder (default), or a folder the caller made (a small file system of its own). */
export interface BenchHostOptions {
  /** PostgreSQL major (default: the newest full installation). */
  version?: number;
  /** The folder to make the host in; the caller removes it. */
  hostDir?: string;
}

export async function startBenchHost(name: string, settings: Record<string, string>, opts: BenchHostOptions = {}): Promise<BenchHost> {
  const hostDir = opts.hostDir ?? mkdtempSync(path.join(os.tmpdir(), `storage-lab-bench-${name}-`));
  chmodSync(hostDir, 0o755);
  registerLabRoot(hostDir);
  const osUser = postgresOsUser();
  const pgBinDir = findPostgresBinDir(opts.version);
  if (!pgBinDir) throw new Error(`PostgreSQL ${opts.version ?? ''} is not installed: run infra/bootstrap.sh`);
  const pgClientBinDir = findClientBinDir(pgBinDir);
  for (const sub of ['disk', 'run', 'logs']) {
    mkdirSync(path.join(hostDir, sub), { mode: 0o755 });
    if (osUser) chownSync(path.join(hostDir, sub), osUser.uid, osUser.gid);
  }
  mkdirSync(path.join(hostDir, 'secrets'), { mode: 0o700 });
  const passwordFile = path.join(hostDir, 'secrets', 'db-password');
  writeFileSync(passwordFile, `bench-${process.pid}-${Date.now()}`, { mode: 0o600 });
  const config: HostConfig = {
    hostId: `bench-${name}`,
    runId: 'bench',
    provider: 'local',
    className: 'local-disk',
    kind: 'local-disk',
    taskQueue: 'bench',
    emulated: false,
    limits: { iops: null, throughputMiBps: null, memoryLimitMiB: null },
    postgres: { host: '127.0.0.1', port: await freePort() },
    hostDir,
    dataDir: path.join(hostDir, 'disk', 'pgdata'),
    socketDir: path.join(hostDir, 'run'),
    device: deviceOfPath(hostDir),
    osUser: osUser?.name ?? null,
    passwordFile,
    pgBinDir,
    ...(pgClientBinDir && pgClientBinDir !== pgBinDir ? { pgClientBinDir } : {}),
    cgroup: null,
  };
  const deps: HostDeps = { config, osUser, clientUser: clientOsUser(), ioCap: new IoCap(config) };
  const run = <A extends unknown[], R>(fn: (d: HostDeps, ...args: A) => Promise<R>, ...args: A): Promise<R> =>
    new MockActivityEnvironment().run(() => fn(deps, ...args));
  await run(configurePostgres, { hostId: config.hostId, ...hostSettings(settings) });
  return {
    deps,
    run,
    async close() {
      await run(stopPostgres, { hostId: config.hostId, mode: 'immediate' }).catch(() => undefined);
      if (!opts.hostDir) rmSync(hostDir, { recursive: true, force: true });
    },
  };
}

/** Median of a list of numbers. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
