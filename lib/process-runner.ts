/**
 * The one way the lab runs external tools (pgbench, psql, pg_ctl, losetup, pgbackrest, ...): a timeout, a cancel
 * signal, streamed lines, a typed result, and a typed error that keeps the exit code and the end of stderr.
 * A tool gets an allow-listed environment (toolEnv), never the worker's: no AWS keys, PGPASSWORD or Temporal
 * settings reach a tool unless its caller adds them.
 */
import { spawn } from 'node:child_process';
import { readOperatorFile } from './lab-fs';

/** Variables every tool inherits from the worker: where programs are, and the locale and time zone. */
const INHERITED = /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ)$/;

/** The environment a tool starts from: the allow-listed variables of `parent` and nothing else; callers add what a tool needs. */
export function toolEnv(parent: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(parent).filter(([name]) => INHERITED.test(name)));
}

/** The home folder of a user by uid (/etc/passwd), or undefined when it has none there. */
function homeOf(uid: number): string | undefined {
  for (const line of readOperatorFile('/etc/passwd').toString('utf8').split('\n')) {
    const fields = line.split(':');
    if (fields.length >= 6 && Number(fields[2]) === uid) return fields[5];
  }
  return undefined;
}

/**
 * The default environment of a tool: toolEnv() and HOME of the user it runs as, so a tool run as postgres or
 * storage-lab never reads the worker's dotfiles (~/.pgpass, ~/.aws). A caller that passes env decides HOME itself.
 */
function defaultEnv(uid: number | undefined): NodeJS.ProcessEnv {
  const runAs = uid ?? process.getuid?.();
  const home = runAs === undefined ? undefined : homeOf(runAs);
  return home === undefined ? toolEnv() : { ...toolEnv(), HOME: home };
}

export interface RunOptions {
  cwd?: string;
  /** The tool's whole environment (default: toolEnv() and the user's HOME); build it from toolEnv(), never from process.env. */
  env?: NodeJS.ProcessEnv;
  /** Kill the process (SIGTERM, then SIGKILL) after this long. */
  timeoutMs?: number;
  /** Cancels the process: an activity passes its cancellation signal. */
  signal?: AbortSignal;
  /** Run as this user (root only): Postgres refuses to run as root. */
  uid?: number;
  gid?: number;
  input?: string;
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** Exit codes that count as success (default: 0). */
  okExitCodes?: number[];
  /** Keep at most this many bytes of each stream in the result (default 1 MiB). */
  maxCaptureBytes?: number;
}

export interface RunResult {
  command: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** A tool that failed: its exit code (or signal), the command line and the end of what it said. */
export class ProcessError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly exitSignal: string | null,
    readonly stdout: string,
    readonly stderr: string,
    readonly reason: 'exit' | 'timeout' | 'cancelled' | 'spawn',
  ) {
    const tail = (stderr || stdout).trim().split('\n').slice(-8).join('\n');
    const how =
      reason === 'timeout'
        ? 'timed out'
        : reason === 'cancelled'
          ? 'was cancelled'
          : reason === 'spawn'
            ? 'could not start'
            : exitSignal
              ? `was killed by ${exitSignal}`
              : `exited with code ${exitCode}`;
    super(`${command} ${how}${tail ? `:\n${tail}` : ''}`);
    this.name = 'ProcessError';
  }
}

const DEFAULT_CAPTURE = 1 << 20;

/** Runs a command to completion; throws ProcessError unless it exits with an accepted code. */
export function runProcess(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const command = [cmd, ...args].map(quoteArg).join(' ');
  const started = Date.now();
  const max = opts.maxCaptureBytes ?? DEFAULT_CAPTURE;
  return new Promise<RunResult>((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(new ProcessError(command, null, null, '', '', 'cancelled'));
      return;
    }
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? defaultEnv(opts.uid),
      uid: opts.uid,
      gid: opts.gid,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out = new StreamCapture(max, opts.onStdoutLine);
    const err = new StreamCapture(max, opts.onStderrLine);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let reason: ProcessError['reason'] = 'exit';
    let killTimer: NodeJS.Timeout | undefined;
    const stop = (why: ProcessError['reason']) => {
      if (reason !== 'exit') return;
      reason = why;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    };
    const timer = opts.timeoutMs ? setTimeout(() => stop('timeout'), opts.timeoutMs) : undefined;
    const onAbort = () => stop('cancelled');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      cleanup();
      reject(new ProcessError(command, null, null, '', String(e.message), 'spawn'));
    });
    child.on('close', (code, sig) => {
      cleanup();
      out.flush();
      err.flush();
      const okCodes = opts.okExitCodes ?? [0];
      if (reason === 'exit' && code !== null && okCodes.includes(code)) {
        resolve({ command, exitCode: code, stdout: out.text(), stderr: err.text(), durationMs: Date.now() - started });
      } else {
        reject(new ProcessError(command, code, sig, out.text(), err.text(), reason));
      }
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
    function cleanup() {
      if (timer) clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  });
}

/** Keeps the first `max` bytes of a stream and calls back once per complete line. */
class StreamCapture {
  private chunks: Buffer[] = [];
  private size = 0;
  private partial = '';
  constructor(
    private readonly max: number,
    private readonly onLine?: (line: string) => void,
  ) {}
  push(b: Buffer): void {
    if (this.size < this.max) {
      this.chunks.push(b.subarray(0, this.max - this.size));
      this.size += Math.min(b.length, this.max - this.size);
    }
    if (!this.onLine) return;
    const lines = (this.partial + b.toString('utf8')).split(/\r?\n|\r/);
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.onLine(line);
  }
  flush(): void {
    if (this.onLine && this.partial) this.onLine(this.partial);
    this.partial = '';
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function quoteArg(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}
