/**
 * storage-lab diagnose --dsn URL: samples any PostgreSQL 12+ read-only for a window and prints the verdict
 * (storage-bound | cpu-bound | lock-bound | client-bound | idle) with its evidence; --json prints the capture
 * (predict --from takes it), --html writes the report. Runs here, not through Temporal (diagnoseWorkflow does that);
 * `storage-lab captures` lists the captures diagnoseWorkflow kept. The DSN follows the CLI's rules (parseDsn): it
 * may hold a password and name a socket directory, and what it leaves out comes from the user's libpq environment.
 */
import { writeFile } from 'node:fs/promises';
import { formatSpecProblems } from '../../common/core/errors';
import { verdictLine, type DiagnoseCapture } from '../../common/results/diagnose-capture';
import { parseDiagnoseInput } from '../../common/input/diagnose';
import { captureDiagnosis } from '../../lib/diagnose/capture';
import { ConnectError, NotReadOnlyError } from '../../lib/diagnose/connect';
import { captureHtml, captureText } from '../../analysis/report/diagnose';
import { captureHistory, type CaptureIndexEntry } from '../../analysis/diagnose-captures';
import { HISTORY_RUN } from '../../analysis/history';
import { UserError } from '../errors';
import { printTable } from '../table';
import { resultsStore } from './report';

export interface DiagnoseFlags {
  dsn?: string;
  seconds?: string;
  intervalMs?: string;
  json?: boolean;
  html?: string;
  /** Commander's --no-fsync-probe. */
  fsyncProbe?: boolean;
  passwordEnv?: string;
}

export async function diagnoseCommand(flags: DiagnoseFlags): Promise<DiagnoseCapture> {
  const number = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const { input, problems } = parseDiagnoseInput(
    { dsn: flags.dsn, seconds: number(flags.seconds), intervalMs: number(flags.intervalMs), fsyncProbe: flags.fsyncProbe ?? true, passwordEnv: flags.passwordEnv },
    { origin: 'cli' },
  );
  if (!input) throw new UserError(formatSpecProblems(problems, 'diagnose input'));
  const progress = flags.json ? undefined : (what: string) => process.stderr.isTTY && process.stderr.write(`\r  ${what}   `);
  let capture: DiagnoseCapture;
  try {
    capture = await captureDiagnosis({ ...input, origin: 'cli', onProgress: progress });
  } catch (err) {
    if (err instanceof ConnectError || err instanceof NotReadOnlyError) throw new UserError(err.message);
    throw err;
  } finally {
    if (progress && process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  }
  if (flags.json) {
    console.log(JSON.stringify(capture, null, 2));
    console.error(verdictLine(capture.verdict, capture.evidence));
  } else for (const line of captureText(capture)) console.log(line);
  if (flags.html) {
    await writeFile(flags.html, captureHtml(capture));
    if (!flags.json) console.log(`report: ${flags.html}`);
  }
  return capture;
}

/** storage-lab captures: the captures diagnoseWorkflow kept in the results store, oldest first (of one target, or all). */
export async function capturesCommand(flags: { target?: string; json?: boolean; resultsDir?: string }): Promise<CaptureIndexEntry[]> {
  const store = await resultsStore({ resultsDir: flags.resultsDir });
  const entries = await captureHistory(store, flags.target);
  if (flags.json) console.log(JSON.stringify(entries, null, 2));
  else if (entries.length === 0) console.log(`no diagnose captures${flags.target ? ` of ${flags.target}` : ''} in ${store.location(HISTORY_RUN)}`);
  else
    printTable(
      ['captured', 'target', 'verdict', 'TPS', 'storage', 'CPU', 'locks', 'client', 'ms/read', 'fsync ms', 'run'],
      entries.map((e) => [
        e.capturedAt.replace(/\.\d+Z$/, 'Z'),
        e.target,
        e.verdict,
        e.tps.toFixed(1),
        pct(e.shares.storage),
        pct(e.shares.cpu),
        pct(e.shares.lock),
        pct(e.shares.client),
        e.msPerBlockRead === null ? '–' : e.msPerBlockRead.toFixed(3),
        e.fsyncMs === null ? '–' : e.fsyncMs.toFixed(2),
        e.runId,
      ]),
    );
  return entries;
}

const pct = (v: number) => `${Math.round(v * 100)} %`;
