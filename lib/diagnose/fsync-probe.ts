/**
 * The fsync latency of the device that holds a server's data, with Debian's pg_test_fsync: its test file goes
 * beside the data directory on the same file system, never inside it, and is removed whatever happens.
 */
import { accessSync, constants, existsSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { FsyncProbe } from '../../common/results/diagnose-capture';
import { postgresInstalls } from '../postgres-binaries';
import { parsePgTestFsync } from '../parsers/pg-test-fsync';
import { runProcess } from '../process-runner';

/** Seconds per test pg_test_fsync runs (its minimum); it runs about 16 tests. */
const SECONDS_PER_TEST = 1;
/** pg_test_fsync takes about 16 s at one second per test; past this something is wrong with the device. */
const PROBE_TIMEOUT_MS = 120_000;

/** The pg_test_fsync binary of any installed PostgreSQL, or null. */
export function pgTestFsyncBinary(): string | null {
  for (const install of postgresInstalls()) {
    const bin = path.join(install.binDir, 'pg_test_fsync');
    if (existsSync(bin)) return bin;
  }
  return null;
}

/**
 * Where the probe may write: the data directory's parent when it is on the same file system and writable here,
 * else null with the reason (a data directory that is itself a mount point has no neighbour on its device).
 */
export function probeDirectory(dataDirectory: string): { dir: string | null; reason: string | null } {
  const parent = path.dirname(path.resolve(dataDirectory));
  try {
    if (statSync(parent).dev !== statSync(dataDirectory).dev)
      return { dir: null, reason: `${dataDirectory} is a mount point: no folder beside it on its device, and the probe never writes inside it` };
    accessSync(parent, constants.W_OK);
  } catch (err) {
    return { dir: null, reason: `cannot write beside ${dataDirectory} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); run diagnose as root or the server's OS user` };
  }
  return { dir: parent, reason: null };
}

/** Runs pg_test_fsync beside the data directory; returns the figures of `method` (the server's wal_sync_method). */
export async function probeFsync(dataDirectory: string, device: string | null, method: string, signal?: AbortSignal): Promise<{ probe: FsyncProbe | null; reason: string | null }> {
  const bin = pgTestFsyncBinary();
  if (!bin) return { probe: null, reason: 'pg_test_fsync is not installed (Debian: apt-get install postgresql)' };
  const where = probeDirectory(dataDirectory);
  if (!where.dir) return { probe: null, reason: where.reason };
  const file = path.join(where.dir, `storage-lab-fsync-probe-${process.pid}-${Date.now()}.tmp`);
  const started = Date.now();
  try {
    const out = await runProcess(bin, ['-f', file, '-s', String(SECONDS_PER_TEST)], { timeoutMs: PROBE_TIMEOUT_MS, signal, cwd: where.dir });
    const report = parsePgTestFsync(out.stdout);
    const chosen = report.oneWrite[method];
    if (!chosen) return { probe: null, reason: `pg_test_fsync has no figure for wal_sync_method ${method} on this platform` };
    return {
      probe: {
        method,
        opsPerSecond: chosen.opsPerSecond,
        usecsPerOp: chosen.usecsPerOp,
        oneWrite: Object.fromEntries(Object.entries(report.oneWrite).map(([m, r]) => [m, r?.opsPerSecond ?? null])),
        testFileDir: where.dir,
        device,
        seconds: (Date.now() - started) / 1000,
      },
      reason: null,
    };
  } finally {
    rmSync(file, { force: true });
  }
}
