/**
 * WAL-G built beside the demo's first run. On a fresh machine its build took 270 s, more than the rest of the
 * bootstrap together, and a run needs WAL-G first when its first host has loaded (the data set's publish) or for the
 * durability step, minutes after it starts. So `infra/bootstrap.sh demo` starts the build and goes on; the tools
 * cache says how it goes: `wal-g.building` holds the builder's pid while it runs, `wal-g.build.log` its output (kept
 * when it fails). Whoever needs WAL-G asks walgState() and waits with waitForWalg(): for a build that runs, within a
 * bound; a build that ended without a binary fails at once, with its log's last lines.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { lastLogLines, readKernelFile, readOperatorFile } from './lab-fs';
import { labPaths } from './lab-paths';
import { findWalg } from './walg';

/** In the tools cache: the pid of the bootstrap that builds WAL-G, while it builds. */
export const WALG_BUILD_MARKER = 'wal-g.building';
/** In the tools cache: the build's output, left for the reader when the build failed. */
export const WALG_BUILD_LOG = 'wal-g.build.log';
/** How long a run waits for the build: 270 s on a fresh 2-core machine; a run beside it may slow it a few times. */
export const WALG_BUILD_WAIT_MS = 20 * 60_000;

export type WalgState =
  | { state: 'present'; binary: string }
  | { state: 'building'; pid: number; log: string }
  | { state: 'failed'; log: string; detail: string }
  | { state: 'absent' };

/** Whether pid is a bootstrap that still runs: a pid taken over by another program is not a build. */
export function bootstrapAlive(pid: number): boolean {
  try {
    return readKernelFile(`/proc/${pid}/cmdline`).split('\0').some((arg) => arg.endsWith('bootstrap.sh'));
  } catch {
    return false;
  }
}

/** WAL-G as the tools cache has it now. */
export function walgState(env: NodeJS.ProcessEnv = process.env, alive: (pid: number) => boolean = bootstrapAlive): WalgState {
  const binary = findWalg(env);
  if (binary) return { state: 'present', binary };
  const bin = labPaths(env).cacheBin;
  const log = path.join(bin, WALG_BUILD_LOG);
  let marker = '';
  try {
    marker = readOperatorFile(path.join(bin, WALG_BUILD_MARKER)).toString('utf8').trim();
  } catch {
    // No build has been started, or it ended.
  }
  const pid = Number(marker);
  if (/^\d+$/.test(marker) && pid > 0 && alive(pid)) return { state: 'building', pid, log };
  if (existsSync(log)) return { state: 'failed', log, detail: lastLines(log) };
  return { state: 'absent' };
}

/** Why a run cannot have WAL-G: the build failed, ran past the bound, or was never started. */
export class WalgUnavailable extends Error {}

/**
 * The WAL-G binary, once there: at once when it is, after the build beside this run when one runs (onWait is told on
 * every poll), or a WalgUnavailable with the reason.
 */
export async function waitForWalg(opts: {
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  timeoutMs?: number;
  pollMs?: number;
  onWait?: (building: { pid: number; log: string; waitedSeconds: number }) => void;
  alive?: (pid: number) => boolean;
} = {}): Promise<string> {
  const started = Date.now();
  const timeoutMs = opts.timeoutMs ?? WALG_BUILD_WAIT_MS;
  for (;;) {
    const s = walgState(opts.env, opts.alive);
    if (s.state === 'present') return s.binary;
    if (s.state === 'failed') throw new WalgUnavailable(`WAL-G's build beside this run ended without a binary; run infra/bootstrap.sh again. The end of its log (${s.log}):\n${s.detail}`);
    if (s.state === 'absent') throw new WalgUnavailable('WAL-G is not installed: run infra/bootstrap.sh (it builds wal-g into the tools cache, .cache/bin)');
    const waitedSeconds = Math.round((Date.now() - started) / 1000);
    if (Date.now() - started >= timeoutMs)
      throw new WalgUnavailable(`WAL-G's build (bootstrap pid ${s.pid}) still ran after ${Math.round(timeoutMs / 1000)} s of waiting; its log: ${s.log}`);
    opts.onWait?.({ pid: s.pid, log: s.log, waitedSeconds });
    await new Promise<void>((resolve, reject) => {
      if (opts.signal?.aborted) return reject(new Error("cancelled while waiting for WAL-G's build"));
      const timer = setTimeout(done, opts.pollMs ?? 2_000);
      function done(): void {
        opts.signal?.removeEventListener('abort', abort);
        resolve();
      }
      function abort(): void {
        clearTimeout(timer);
        reject(new Error("cancelled while waiting for WAL-G's build"));
      }
      opts.signal?.addEventListener('abort', abort, { once: true });
    });
  }
}

/** A log's last lines (of its last 16 KiB), 300 characters a line at most. The tools cache is the operator's. */
function lastLines(file: string, lines = 12): string {
  try {
    const bytes = readOperatorFile(file);
    const text = bytes.subarray(Math.max(0, bytes.length - 16 * 1024)).toString('utf8');
    return text.trim() ? lastLogLines(text, lines) : '(the log is empty)';
  } catch {
    return '(the log could not be read)';
  }
}
