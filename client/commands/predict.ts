/**
 * storage-lab predict --from RUN_ID|FILE --target JSON: TPS and mean / p95 latency of a measured workload on other
 * storage and hosts (common/model/predict.ts). --from takes a run id (its result.json in the results store), a result.json
 * file, or a diagnose capture (storage-lab diagnose --json > capture.json). --reference predicts each class of the
 * published reference from the other's figures and prints them beside the published TPS; with --from RUN, from each
 * class of that run on a modelled device, at the reference's scale (common/model/predict-reference.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { CAPTURE_KIND, type DiagnoseCapture } from '../../common/results/diagnose-capture';
import { demandsFromCapture, demandsFromClass } from '../../common/model/demands';
import { formatSpecProblems } from '../../common/core/errors';
import {
  describeTarget,
  predict,
  predictionLine,
  PredictTargetSchema,
  SOURCE_CHECK_NAME,
  sourceCheck,
  type PredictTarget,
  type Prediction,
  type SourceCheck,
  type WorkloadDemands,
} from '../../common/model/predict';
import { referenceDemands, referenceFromRun, referenceFromRunLines, referenceStandbyRange, type ReferenceCheck } from '../../common/model/predict-reference';
import { baselines, baselinesLine, type BaselineName, type BaselinePrediction } from '../../common/model/baselines';
import type { ExperimentResult } from '../../common/results/result';
import { toProblem } from '../../common/input/spec';
import { UserError } from '../errors';
import { resultsStore } from './report';
import { matrixLines, predictionMatrix } from '../../common/model/matrix';

export interface PredictFlags {
  from?: string;
  class?: string;
  target?: string;
  json?: boolean;
  reference?: boolean;
  matrix?: string;
  resultsDir?: string;
}

export interface PredictOutput {
  demands: WorkloadDemands;
  sourceCheck: SourceCheck;
  predictions: Prediction[];
  /** The baselines the model must beat, one per prediction (the same targets, in order). */
  baselines: Record<BaselineName, BaselinePrediction>[];
}

export async function predictCommand(flags: PredictFlags): Promise<PredictOutput[]> {
  if (flags.reference && flags.from) {
    const parsed = (await loadJson(flags.from, flags, '--from')) as Partial<ExperimentResult>;
    if (!parsed.classes || !parsed.runId || !parsed.spec) throw new UserError(`--reference --from ${flags.from}: not a run's result.json (a diagnose capture has no device model to carry)`);
    const { rows, problems } = referenceFromRun(parsed as ExperimentResult);
    if (flags.json) console.log(JSON.stringify({ rows, problems }, null, 2));
    else {
      console.log(`The published reference (POSETTE 2026) at its own scale, predicted from run ${parsed.runId} on the lab's device models:`);
      for (const line of referenceFromRunLines(rows)) console.log(`  ${line}`);
      for (const p of problems) console.log(`  not a source: ${p}`);
    }
    if (!rows.length) throw new UserError(`--reference --from ${flags.from}: no class of the run can predict the reference: ${problems.join('; ')}`);
    return [];
  }
  if (flags.reference) return referenceCommand(flags);
  if (flags.matrix) {
    const parsed = (await loadJson(flags.matrix, flags)) as Partial<ExperimentResult>;
    if (!parsed.classes || !parsed.runId) throw new UserError(`--matrix ${flags.matrix}: not a run's result.json`);
    const matrix = predictionMatrix(parsed as ExperimentResult);
    if (flags.json) console.log(JSON.stringify(matrix, null, 2));
    else for (const line of matrixLines(matrix)) console.log(line);
    return [];
  }
  if (!flags.from) throw new UserError('--from RUN_ID|FILE is required (or --reference)');
  if (!flags.target) throw new UserError('--target JSON is required, e.g. --target \'{"kind":"ebs","iops":6000,"throughputMiBps":250}\'');
  const targets = parseTargets(flags.target);
  const demands = await loadDemands(flags);
  const output = predictAll(demands, targets);
  if (flags.json) console.log(JSON.stringify(output, null, 2));
  else printOutput(output);
  return [output];
}

/** The demands to predict from: a capture file, a result.json file, or a run id in the results store. */
async function loadDemands(flags: PredictFlags): Promise<WorkloadDemands> {
  const from = flags.from!;
  const parsed = await loadJson(from, flags, '--from');
  const obj = parsed as Partial<DiagnoseCapture & ExperimentResult>;
  try {
    if (obj.kind === CAPTURE_KIND) return demandsFromCapture(parsed as DiagnoseCapture);
    if (obj.classes && obj.runId) {
      const result = parsed as ExperimentResult;
      const className = flags.class ?? Object.keys(result.classes)[0];
      return demandsFromClass(result, className);
    }
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  throw new UserError(`--from ${from}: neither a run's result.json nor a diagnose capture`);
}

/** A JSON file, or a run's result.json in the results store by its id. */
async function loadJson(from: string, flags: PredictFlags, option = '--matrix'): Promise<unknown> {
  if (existsSync(from)) {
    try {
      return JSON.parse(readFileSync(from, 'utf8'));
    } catch (err) {
      throw new UserError(`${from} is not JSON: ${(err as Error).message}`);
    }
  }
  const store = await resultsStore({ resultsDir: flags.resultsDir });
  const text = await store.get(from, 'result.json');
  if (text === null) throw new UserError(`${option} ${from}: no such file, and no result.json for a run of that id in ${store.location(from)}`);
  return JSON.parse(text);
}

/** --target: one JSON object or an array of them (inline, or @file). */
function parseTargets(text: string): PredictTarget[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text.startsWith('@') ? readFileSync(text.slice(1), 'utf8') : text);
  } catch (err) {
    throw new UserError(`--target is not JSON: ${(err as Error).message}`);
  }
  return (Array.isArray(raw) ? raw : [raw]).map((t, i) => {
    const parsed = PredictTargetSchema.safeParse(t);
    if (!parsed.success) throw new UserError(formatSpecProblems(parsed.error.issues.map(toProblem), `prediction target${Array.isArray(raw) ? ` ${i + 1}` : ''}`));
    return parsed.data;
  });
}

/** The source's consistency check (the model on the source's own storage vs what it measured), then every target with both baselines. */
export function predictAll(demands: WorkloadDemands, targets: PredictTarget[]): PredictOutput {
  const attempt = (t: PredictTarget) => {
    try {
      return predict(demands, t);
    } catch (err) {
      throw new UserError(`${describeTarget(t)}: ${(err as Error).message}`);
    }
  };
  let check: SourceCheck;
  try {
    check = sourceCheck(demands);
  } catch (err) {
    throw new UserError(`the source's own storage: ${(err as Error).message}`);
  }
  return { demands, sourceCheck: check, predictions: targets.map(attempt), baselines: targets.map((t) => baselines(demands, t)) };
}

function printOutput(o: PredictOutput): void {
  const d = o.demands;
  const f = (v: number, digits = 2) => v.toLocaleString('en-US', { maximumFractionDigits: digits });
  console.log(`from: ${d.source}`);
  console.log(`  measured: ${f(d.measured.tps, 0)} TPS, mean latency ${f(d.measured.latencyMs.mean)} ms${d.measured.latencyMs.p95 === null ? '' : `, p95 ${f(d.measured.latencyMs.p95)} ms`}, ${d.clients} clients`);
  console.log(
    `  per transaction: CPU ${f(d.cpu.msPerTx, 3)} ms (${d.cpu.vcpus || '?'} vCPUs), ${f(d.reads.perTx, 3)} device reads of ${f(d.reads.kib, 1)} KiB, ${d.writes.kind === 'measured' ? `${f(d.writes.perTx, 3)} background page writes` : `${d.writes.dirtiedPagesPerTx} pages dirtied`}, WAL ${f(d.wal.bytesPerTx / 1024, 1)} KiB`,
  );
  if (d.serverMs)
    console.log(`  server time per transaction: CPU ${f(d.serverMs.cpu)} ms, page reads ${f(d.serverMs.pageReads)}, WAL ${f(d.serverMs.walFsync)}, locks ${f(d.serverMs.lock)}, other ${f(d.serverMs.other)}`);
  for (const n of d.notes) console.log(`  note: ${n}`);
  console.log(`  ${SOURCE_CHECK_NAME}: ${o.sourceCheck.ok ? 'PASS' : 'FAIL'}: ${o.sourceCheck.detail}`);
  o.predictions.forEach((p, i) => {
    console.log(`target: ${describeTarget(p.target)}`);
    console.log(predictionLine(p));
    const b = p.breakdownMs;
    console.log(
      `  per transaction: CPU ${f(b.cpu)} ms, page reads ${f(b.pageReads)}, WAL ${f(b.walFsync)}, locks ${f(b.lock)}, other ${f(b.other)}, unexplained at the source ${f(b.unexplained)}, client ${f(b.client)}; ${f(p.readsPerTx, 3)} reads, ${f(p.walOpsPerTx, 3)} WAL writes`,
    );
    console.log(`  ${baselinesLine(o.baselines[i])}`);
    for (const a of p.assumptions) console.log(`  assumption: ${a}`);
  });
}

/** --reference: gp3 from the NVMe class's published figures and NVMe from gp3's, beside the published figures. */
function referenceCommand(flags: PredictFlags): PredictOutput[] {
  const range = referenceStandbyRange();
  const used = range.find((r) => r.used)!;
  const checks = used.checks;
  if (flags.json) console.log(JSON.stringify({ checks, standbyRoundTrip: range }, null, 2));
  else {
    console.log('The published reference (POSETTE 2026), each class predicted from the other class\'s published figures:');
    for (const c of checks) {
      console.log(`${c.target} from ${c.from}: ${predictionLine(c.prediction)}`);
      console.log(`  published ${c.published.tps.toLocaleString('en-US')} TPS, ${c.published.latencyMs} ms: TPS error ${signed(c.tpsErrorPct)}, latency error ${signed(c.latencyErrorPct)}`);
      console.log(`  ${baselinesLine(c.baselines, c.published.tps)}`);
      for (const n of referenceDemands(c.from).notes) console.log(`  note: ${n}`);
      for (const a of c.prediction.assumptions) console.log(`  assumption: ${a}`);
    }
    for (const line of standbyTable(range)) console.log(line);
  }
  return checks.map((c) => predictAll(referenceDemands(c.from), [c.prediction.target]));
}

/**
 * The reference's predictions without the synchronous standby's round trip and with the one the model takes, side by
 * side: the reference publishes none, and the value taken entered the model after the miss without it was seen.
 */
function standbyTable(range: { rttMs: number; used: boolean; checks: ReferenceCheck[] }[]): string[] {
  const cell = (c: ReferenceCheck | undefined) => (c ? `${Math.round(c.prediction.tps).toLocaleString('en-US')} TPS (${signed(c.tpsErrorPct)})` : '–');
  const of = (checks: ReferenceCheck[], target: string) => checks.find((c) => c.target === target);
  const rows = range.map((r) => [`${r.rttMs} ms${r.used ? ' (used)' : ''}`, cell(of(r.checks, 'nvme')), cell(of(r.checks, 'gp3'))]);
  const head = ['standby round trip', 'nvme from gp3', 'gp3 from nvme'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => c.padEnd(widths[i])).join('   ')}`.trimEnd();
  return [
    'The synchronous standby\'s round trip (not published; the model takes 1 ms between Availability Zones, chosen after NVMe was over-predicted without it), at both classes:',
    line(head),
    ...rows.map(line),
  ];
}

const signed = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(1)} %`;
