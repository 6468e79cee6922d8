/**
 * The TPS run: the real pgbench with the spec's clients, threads, duration and script, per-second progress (-P 1)
 * and a per-transaction log (--log) from which latency percentiles are computed. And the same workload in the
 * background until a phase stops it (startWorkload): a phase writes with it, or measures beside it.
 */
import { Context } from '@temporalio/activity';
import path from 'node:path';
import readline from 'node:readline';
import type { SamplerReadings } from '../../common/results/sampler-readings';
import type { TpsRun } from '../../common/results/result';
import type { Client } from 'pg';
import {
  ClientGaps,
  LatencyHistogram,
  parseProgressLine,
  parseSummary,
  parseTransactionLogLine,
  type ProgressSample,
} from '../../lib/parsers/pgbench';
import { libpqEnv } from '../../lib/pg';
import { workloadAppName, workloadArgs, type WorkloadSize } from '../../lib/pgbench-workload';
import { ProcessError, runProcess, type RunResult } from '../../lib/process-runner';
import { heartbeatWhile, progressReporter } from '../progress';
import { WORKLOAD_ROLE } from '../../common/core/names';
import { safeSegment } from '../../common/core/ids';
import { scriptProblems } from '../../common/input/workload-script';
import { clientTool } from '../../lib/postgres-binaries';
import { labReadStream, listLabDir, makeLabDir, removeLabTree, writeLabFile } from '../../lib/lab-fs';
import { asClientUser, assertHost, ownByClient, refuseInput, type HostDeps, type HostInput } from './deps';
import { stopLeftovers } from './leftovers';
import { startSampler } from '../../lib/sampler';

export interface PgbenchInput extends HostInput {
  /** What the run is for; names its folder and its progress phase ("warmup", "tps", ...). */
  label: string;
  scale: number;
  clients: number;
  threads: number;
  durationSeconds: number;
  script: string;
  /** Run the sampler next to pgbench, on its own connection. */
  sampler?: { intervalMs: number };
}

/** A TPS run and, when the sampler ran, what it saw. */
export type PgbenchRun = TpsRun & { diagnostics?: SamplerReadings };

/** Seconds pgbench may overrun its -T before we call it hung (connection set-up, log flush). */
const OVERRUN_SECONDS = 120;

/**
 * Refuses a spec's script the host must not run, before it is written anywhere: pgbench's \shell and \setshell
 * would run a program as the client user; common/input/workload-script.ts says what a script may hold.
 */
export function refuseScript(deps: HostDeps, script: unknown): void {
  const problems = typeof script === 'string' ? scriptProblems(script) : ['must be a pgbench script (a string)'];
  refuseInput(deps, problems.map((message) => ({ path: 'workload.script', message })));
}

export async function runPgbench(deps: HostDeps, input: PgbenchInput): Promise<PgbenchRun> {
  assertHost(deps, input);
  refuseScript(deps, input.script);
  const ctx = Context.current();
  const report = progressReporter(input.hostId, input.label);
  // An earlier attempt whose agent died may still be running its pgbench (and its backends): stop them first.
  const cleanup = await stopLeftovers(deps);
  const runDir = path.join(deps.config.hostDir, 'pgbench', safeSegment(input.label, 'label'));
  await removeLabTree(runDir);
  makeLabDir(runDir, { marker: true });
  ownByClient(deps, runDir);
  const scriptFile = path.join(runDir, 'script.sql');
  writeLabFile(scriptFile, input.script, { mode: 0o644 });

  const tpsSeries: number[] = [];
  const appName = workloadAppName(input.label);
  const sampler = input.sampler
    ? await startSampler(deps.config, { intervalMs: input.sampler.intervalMs, applicationName: appName })
    : null;
  const run = runProcess(
    clientTool(deps.config, 'pgbench'),
    [
      ...workloadArgs(input, scriptFile),
      '--time', String(input.durationSeconds),
      '--progress', '1',
      '--log', `--log-prefix=${path.join(runDir, 'tx')}`,
    ],
    {
      ...asClientUser(deps),
      env: workloadEnv(deps, appName),
      cwd: runDir,
      timeoutMs: (input.durationSeconds + OVERRUN_SECONDS) * 1000,
      signal: ctx.cancellationSignal,
      onStderrLine: (line) => {
        const sample = parseProgressLine(line);
        if (!sample) return;
        tpsSeries.push(sample.tps);
        report({
          percent: Math.min(99, Math.round((100 * sample.second) / input.durationSeconds)),
          etaSeconds: Math.max(0, Math.round(input.durationSeconds - sample.second)),
          detail: { second: sample.second, tps: sample.tps, latencyMs: sample.latencyMs, failed: sample.failed },
        });
      },
    },
  );
  let result: RunResult;
  try {
    result = await run;
  } catch (err) {
    await sampler?.stop().catch(() => undefined); // Closes its connection; pgbench's failure is the one to report.
    throw err;
  }
  const diagnostics = await sampler?.stop();
  const summary = parseSummary(result.stdout);
  // Millions of log lines at seed scale: the step heartbeats, so a live agent is not taken for a dead one.
  const { histogram, gaps } = await heartbeatWhile(`${input.label}: reading the transaction logs`, () => readTransactionLogs(runDir), 2_000);
  return {
    tps: summary.tps,
    transactions: summary.transactions,
    failedTransactions: summary.failedTransactions,
    durationSeconds: summary.durationSeconds,
    clients: summary.clients,
    threads: summary.threads,
    latencyMs: histogram.summary(),
    clientGapMs: gaps.meanMs(),
    tpsSeries,
    pgbenchVersion: summary.version,
    ...(cleanup ? { cleanup } : {}),
    ...(diagnostics ? { diagnostics } : {}),
  };
}

/**
 * libpq environment of a workload run: the host's socket, the workload role (no superuser: a script cannot run a
 * program, touch server files or change settings) and the run's application_name, which the sampler filters on.
 */
export function workloadEnv(deps: HostDeps, appName: string): NodeJS.ProcessEnv {
  return { ...libpqEnv(deps.config), PGUSER: WORKLOAD_ROLE, PGAPPNAME: appName };
}

/** Streams every per-thread transaction log of a run into one latency histogram and the clients' gaps. */
export async function readTransactionLogs(runDir: string): Promise<{ histogram: LatencyHistogram; gaps: ClientGaps }> {
  const histogram = new LatencyHistogram();
  const gaps = new ClientGaps();
  // The client user's folder: a link it planted there is refused, never followed (lib/lab-fs.ts).
  const files = (listLabDir(runDir) ?? []).filter((f) => f.startsWith('tx.'));
  for (const file of files) {
    const input = labReadStream(path.join(runDir, file));
    if (!input) continue;
    const lines = readline.createInterface({ input, crlfDelay: Infinity });
    for await (const line of lines) {
      const entry = parseTransactionLogLine(line);
      if (!entry) continue;
      histogram.add(entry);
      gaps.add(entry);
    }
  }
  return { histogram, gaps };
}

/** A run of the spec's workload on a host, until it is stopped (a phase writes with it, or measures beside it). */
export interface BackgroundWorkload {
  /** Why it ended by itself, if it did (pgbench exited or failed): a promise of the reason; null while it runs. */
  ended(): Promise<string> | null;
  /** Stops it and waits for its backends to go; throws what it failed with, when it failed by itself. */
  stop(): Promise<void>;
}

/** pgbench's -T of a background run: far longer than any phase; the phase stops it. */
const BACKGROUND_LIMIT_SECONDS = 86_400;

/**
 * Starts the spec's workload in the background (pgbench as the client user, its application_name `label`'s), with
 * per-second progress stamped with the epoch when `onProgress` wants it. `db` is the phase's own connection, on which
 * stop() waits for the workload's backends to go.
 */
export function startWorkload(
  deps: HostDeps,
  db: Client,
  run: WorkloadSize & { label: string; script: string; onProgress?: (sample: ProgressSample) => void },
): BackgroundWorkload {
  const ctx = Context.current();
  const dir = path.join(deps.config.hostDir, safeSegment(run.label, 'label'));
  makeLabDir(dir);
  ownByClient(deps, dir);
  const scriptFile = path.join(dir, 'script.sql');
  writeLabFile(scriptFile, run.script, { mode: 0o644 });
  const appName = workloadAppName(run.label);
  const halt = new AbortController();
  const { onProgress } = run;
  const pgbench = runProcess(
    clientTool(deps.config, 'pgbench'),
    [...workloadArgs(run, scriptFile), '--time', String(BACKGROUND_LIMIT_SECONDS), ...(onProgress ? ['--progress', '1', '--progress-timestamp'] : [])],
    {
      ...asClientUser(deps),
      env: workloadEnv(deps, appName),
      cwd: dir,
      signal: AbortSignal.any([halt.signal, ctx.cancellationSignal]),
      ...(onProgress
        ? {
            onStderrLine: (line: string) => {
              const sample = parseProgressLine(line);
              if (sample) onProgress(sample);
            },
          }
        : {}),
    },
  );
  let ended = false;
  const outcome = pgbench
    .then(
      () => null,
      (err: unknown) => err,
    )
    .finally(() => (ended = true));
  return {
    ended: () => (ended ? outcome.then((err) => (err ? (err as Error).message : 'it exited')) : null),
    async stop() {
      halt.abort();
      const err = await outcome;
      // The workload was stopped on purpose; any other failure of it is real.
      if (err && !(err instanceof ProcessError && err.reason === 'cancelled') && !ctx.cancellationSignal.aborted) throw err;
      await waitForBackendsGone(db, appName);
    },
  };
}

/** pgbench's backends end once they notice their client is gone; stragglers are terminated after `graceTicks`. */
async function waitForBackendsGone(db: Client, appName: string, graceTicks = 25): Promise<void> {
  for (let i = 0; ; i++) {
    const r = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [appName]);
    if (r.rows[0].n === 0) return;
    if (i === graceTicks) await db.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [appName]);
    if (i > 100) throw new Error(`backends of ${appName} did not go away`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
