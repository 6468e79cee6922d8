/**
 * The TPS run: the real pgbench with the spec's clients, threads, duration and script, per-second progress (-P 1)
 * and a per-transaction log (--log) from which latency percentiles are computed.
 */
import { Context } from '@temporalio/activity';
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import type { SamplerReadings } from '../../common/results/sampler-readings';
import type { TpsRun } from '../../common/results/result';
import {
  ClientGaps,
  LatencyHistogram,
  parseProgressLine,
  parseSummary,
  parseTransactionLogLine,
} from '../../lib/parsers/pgbench';
import { libpqEnv } from '../../lib/pg';
import { workloadAppName, workloadArgs } from '../../lib/pgbench-workload';
import { runProcess, type RunResult } from '../../lib/process-runner';
import { heartbeatWhile, progressReporter } from '../progress';
import { WORKLOAD_ROLE } from '../../common/core/names';
import { safeSegment } from '../../common/core/ids';
import { scriptProblems } from '../../common/input/workload-script';
import { clientTool } from '../../lib/postgres-binaries';
import { makeLabDir, removeLabTree, writeLabFile } from '../../lib/lab-fs';
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
  const files = (await readdir(runDir)).filter((f) => f.startsWith('tx.'));
  for (const file of files) {
    const lines = readline.createInterface({ input: createReadStream(path.join(runDir, file)), crlfDelay: Infinity });
    for await (const line of lines) {
      const entry = parseTransactionLogLine(line);
      if (!entry) continue;
      histogram.add(entry);
      gaps.add(entry);
    }
  }
  return { histogram, gaps };
}
