/**
 * The published reference at its own scale, predicted from a local-quick run on the lab's device models
 * (common/model/predict-reference.ts: `storage-lab predict --reference --from RUN` and the report's fidelity section).
 * The rules were made on local-quick-1 and (model 6) local-quick-clients-2; local-quick-2, measured after model 6 was
 * frozen, was held out from it, and is in the revision set since model 7. local-quick-clients-2
 * (bench/specs/local-quick-clients.json: its 64-client gp3 and nvme classes are the demo's, beside 16- and 8-client
 * ones), measured after model 5, holds the demo's other question: 16 and 8 clients predicted from its 64. Model 7 was
 * revised on that question (on the demos of 2026-12-05); local-quick-clients-3, measured after it was frozen, is held
 * out for both questions. Every check here fails on a run made to break it: another script, a class off the models, a
 * published figure that would have to enter a prediction.
 */
import { otherModelledDevice, readsAtMemory, type WorkloadDemands } from '../../common/model/predict';
import { demandsFromClass } from '../../common/model/demands';
import {
  demandsAtReferenceScale,
  referenceDataBytes,
  referenceFromRun,
  referenceFromRunLines,
  referenceFromRunProblem,
  referenceModelledTarget,
  REFERENCE_FROM_RUN_GOAL_PCT,
} from '../../common/model/predict-reference';
import { referenceScaleMarkdown } from '../../analysis/report/fidelity';
import { REFERENCE } from '../../common/results/reference';
import type { ExperimentResult } from '../../common/results/result';
import { fewerClients, recordedRun } from '../helpers/predict-fixtures';

const GIB = 2 ** 30;

describe("the reference predicted from local-quick-1 (the run the rules were made on)", () => {
  const run = recordedRun('local-quick-1');

  test('each published class from each modelled class, with its interval and its terms', () => {
    const { rows, problems } = referenceFromRun(run);
    console.log(referenceFromRunLines(rows).join('\n'));
    expect(problems).toEqual([]);
    expect(rows.map((r) => `${r.target} from ${r.source}`)).toEqual(['gp3 from gp3', 'nvme from gp3', 'gp3 from nvme', 'nvme from nvme']);
    for (const r of rows) {
      expect(r.published.tps).toBe(REFERENCE.results[r.target].medianTps);
      expect(r.prediction.interval.low).toBeLessThan(r.prediction.tps);
      expect(r.prediction.interval.high).toBeGreaterThan(r.prediction.tps);
      expect(r.withinGoal).toBe(Math.abs(r.tpsErrorPct) <= REFERENCE_FROM_RUN_GOAL_PCT);
      expect(r.terms).toMatch(/^bound by .+; .+ ms/);
      // The target is the reference's host and data set on the lab's model of its device.
      expect(r.prediction.target).toMatchObject({ vcpus: 16, memoryMiB: 64 * 1024, clients: 64, dataGiB: referenceDataBytes() / GIB });
      expect(r.prediction.assumptions.join(' ')).toContain(`the ${r.target} model's budgets and latencies`);
    }
  });

  test('no published result enters a prediction: changing them moves only the error', () => {
    const before = referenceFromRun(run).rows.map((r) => r.prediction.tps);
    const saved = { gp3: REFERENCE.results.gp3.medianTps, nvme: REFERENCE.results.nvme.medianTps };
    try {
      REFERENCE.results.gp3.medianTps = 1;
      REFERENCE.results.nvme.medianTps = 1;
      const after = referenceFromRun(run).rows;
      expect(after.map((r) => r.prediction.tps)).toEqual(before);
      expect(after.every((r) => r.tpsErrorPct > 1000)).toBe(true);
    } finally {
      REFERENCE.results.gp3.medianTps = saved.gp3;
      REFERENCE.results.nvme.medianTps = saved.nvme;
    }
  });

  test('a run of another script, or a class off the models, is named and not predicted', () => {
    const otherScript = { ...run, spec: { ...run.spec, workload: { ...run.spec.workload, script: 'SELECT 1;\n' } } } as ExperimentResult;
    expect(referenceFromRunProblem(otherScript)).toMatch(/not the reference's random single-row UPDATE/);
    expect(referenceFromRun(otherScript).rows).toEqual([]);
    const mixed = { ...run, classes: { ...run.classes, gp3: { ...run.classes.gp3, device: undefined } } } as ExperimentResult;
    const { rows, problems } = referenceFromRun(mixed);
    expect(rows.map((r) => r.source)).toEqual(['nvme', 'nvme']);
    expect(problems).toEqual(["gp3: not on a modelled device (its device's figures are this machine's)"]);
  });

  test("the report's fidelity section prints the table", () => {
    const md = referenceScaleMarkdown(run).join('\n');
    expect(md).toContain("### Predicted at the reference's scale");
    expect(md).toMatch(/^\| gp3 \| gp3 \| [\d,]+ \([\d,]+-[\d,]+\) \| 1,734 \| [+-][\d.]+ % \| (yes|no) \| bound by /m);
    expect(md).toMatch(/^\| NVMe \| nvme \| [\d,]+ \([\d,]+-[\d,]+\) \| 16,030 \|/m);
  });
});

describe('what changes with the scale', () => {
  const run = recordedRun('local-quick-1');

  test("the background writes are the reference's window, not the source's count; the rest is the source's", () => {
    const measured = demandsFromClass(run, 'gp3');
    expect(measured.writes).toMatchObject({ kind: 'measured' });
    const scaled = demandsAtReferenceScale(measured);
    expect(scaled.writes).toEqual({ kind: 'window', dirtiedPagesPerTx: 2, absorbPages: (16 * GIB) / 8192, windowSeconds: 300, kib: 8 });
    expect({ ...scaled, writes: measured.writes, notes: measured.notes, cpu: measured.cpu }).toEqual(measured);
    // The modelled volume's server's CPU is the emulation's: left out of the machine's at the reference's scale.
    expect(measured.cpu.deviceMsPerTx).toBeGreaterThan(0);
    expect(scaled.cpu.machineMsPerTx).toBeCloseTo(measured.cpu.machineMsPerTx! - measured.cpu.deviceMsPerTx!, 12);
    // The source's own wait for a core is still taken on all it measured.
    expect(scaled.cpu.machineMsPerTx! + scaled.cpu.leftOutMsPerTx!).toBeCloseTo(measured.cpu.machineMsPerTx!, 12);
    expect(scaled.cpu.msPerTx).toBe(measured.cpu.msPerTx);
  });

  test('a larger data set under more memory: the share of reads that miss, uniform access', () => {
    const d: Pick<WorkloadDemands, 'reads' | 'cache'> = { reads: { perTx: 1.7, kib: 8 }, cache: { dataBytes: 4 * GIB, cacheBytes: 1 * GIB, memoryMiB: 2048 } };
    // Same memory, data 4 -> 8 GiB: the miss share goes 0.75 -> 0.875.
    expect(readsAtMemory(d, undefined, 8 * GIB).perTx).toBeCloseTo((1.7 * 0.875) / 0.75, 12);
    // Memory +3 GiB over 16 GiB of data: 0.75 -> 0.75.
    expect(readsAtMemory(d, 2048 + 3 * 1024, 16 * GIB).perTx).toBeCloseTo(1.7, 12);
    expect(readsAtMemory(d, undefined, 4 * GIB).note).toBeNull();
  });

  test("a source's WAL write() time stays with its own modelled device", () => {
    const gp3 = demandsFromClass(run, 'gp3');
    const nvme = demandsFromClass(run, 'nvme');
    expect(otherModelledDevice(gp3, referenceModelledTarget('nvme'))).toBe(true);
    expect(otherModelledDevice(nvme, referenceModelledTarget('gp3'))).toBe(true);
    // The same model and budget: carried.
    expect(otherModelledDevice(gp3, referenceModelledTarget('gp3'))).toBe(false);
    expect(otherModelledDevice(gp3, { kind: 'emulated-ebs', iops: 3000, throughputMiBps: 125 })).toBe(false);
    expect(otherModelledDevice(gp3, { kind: 'emulated-ebs', iops: 2000, throughputMiBps: 125 })).toBe(true);
    // Not modelled at either end: the rule does not apply.
    expect(otherModelledDevice(gp3, { kind: 'ebs', iops: 3000 })).toBe(false);
    expect(otherModelledDevice({ ...gp3, storage: { kind: 'local-disk' } }, referenceModelledTarget('nvme'))).toBe(false);
  });
});

/** A pair that misses its goal, with the term that misses and its measured size (the unit test prints them). */
interface Shortfall {
  pair: string;
  reason: string;
}

/**
 * Why NVMe from a gp3 source misses under model 7, the same on every run: the model's time a transaction at the
 * target falls 0.95-1.15 ms short of the reference's 4.0 ms.
 */
const NVME_FROM_GP3_REASON = (error: string) =>
  `${error} TPS: the model's parts at the target (WAL and the standby's round trip 1.6 ms, CPU 0.3, page reads 0.2, clients 0.3-0.4) leave 0.95-1.15 ms of the reference's 4.0 ms a transaction unexplained (64 clients ÷ the predicted TPS is 2.85-3.05 ms), and it is bound by m6id's write MiB/s or by the WAL flush instead. Under model 6 the gp3 source's clients' time (1.1-1.5 ms: groups of 24 commits released together and handled one after another by pgbench's 2 threads) was carried unchanged and filled that gap (+4.0 to +15.5 %); model 7 scales it to the target's groups, (G + 1) / 2, which measured 0.07-0.11 ms a handling at 8, 16 and 64 clients here. The reference's pgbench ran 16 threads, so its clients' time is if anything less`;

/**
 * The reference's classes from local-quick-clients-2's 64-client classes (the demo's) that miss the 20 % goal, under
 * model 7 (that run is in its revision set).
 */
export const REFERENCE_SHORTFALLS: Shortfall[] = [
  {
    pair: 'nvme from gp3',
    reason: NVME_FROM_GP3_REASON('+35.7 %, 21,758'),
  },
  {
    pair: 'nvme from nvme',
    reason:
      "-32.5 %, bound by \"unexplained at the source\", 3.62 ms a transaction at the target (the reference's whole mean latency is 4.0 ms): the NVMe source's samples hold waits beyond the model's stations on its two saturated cores (page reads and WAL waits that are waits for a core), carried as waits that shrink with the target's load on 16 vCPUs (Erlang C), not to nothing. From local-quick-1's NVMe the same term was 2.61 ms (-18.5 %); under model 5 it was 8.52 ms (-65.6 %)",
  },
];

/** The demo's 16- and 8-client points predicted from its 64 that miss the goal (within 15 %, inside the interval). */
export const CLIENT_SHORTFALLS: Shortfall[] = [
  { pair: 'gp3-c16 from gp3', reason: '+15.2 % (965 against 837 measured), above its interval (860-1,081): the 64-client source is bound by the budget, and 16 clients still keep it 75 % busy' },
  {
    pair: 'nvme-c8 from nvme',
    reason:
      "-34.9 %: measured 2,460 TPS at 8 clients against 2,325 at 16, so the run's own 8- and 16-client points are not in order; the 64-client source's residuals (waits for a core on saturated cores) carried as waits dominate the prediction",
  },
];

describe('local-quick-clients-2: measured after model 5 (held out for the client counts; revision for the reference since model 6)', () => {
  const run = recordedRun('local-quick-clients-2');
  const sources = new Set(['gp3', 'nvme']);

  test("the reference from the demo's 64-client classes: within 20 %, or a listed shortfall naming its term", () => {
    const rows = referenceFromRun(run).rows.filter((r) => sources.has(r.source));
    console.log(referenceFromRunLines(rows).join('\n'));
    expect(rows).toHaveLength(4);
    for (const s of REFERENCE_SHORTFALLS) console.log(`shortfall: ${s.pair}: ${s.reason}`);
    const missed = rows.filter((r) => !r.withinGoal).map((r) => `${r.target} from ${r.source}`);
    expect(missed).toEqual(REFERENCE_SHORTFALLS.map((s) => s.pair));
    const nvme = rows.find((r) => r.target === 'nvme' && r.source === 'nvme')!;
    expect(nvme.prediction.bottleneck).toBe('unexplained at the source');
  });

  test('16 and 8 clients from 64: within 15 % and inside the interval, or a listed shortfall', () => {
    const { lines, missed } = fewerClients(run);
    console.log(lines.join('\n'));
    for (const s of CLIENT_SHORTFALLS) console.log(`shortfall: ${s.pair}: ${s.reason}`);
    expect(missed).toEqual(CLIENT_SHORTFALLS.map((s) => s.pair));
  });
});

/** The reference's classes from local-quick-2 (held out from model 6, revision since model 7) that miss the 20 % goal, with the term. */
export const HELD_OUT_REFERENCE_SHORTFALLS: Shortfall[] = [
  { pair: 'nvme from gp3', reason: NVME_FROM_GP3_REASON('+40.0 %, 22,443') },
  {
    pair: 'nvme from nvme',
    reason:
      '-23.5 % (12,261 against 16,030), bound by "unexplained at the source", 2.95 ms a transaction at the target: the NVMe source\'s waits for a core on its two saturated cores, carried as waits that shrink with the load on 16 vCPUs but not to nothing',
  },
];

describe('local-quick-2: held out from model 6 for the reference (revision since model 7)', () => {
  const run = recordedRun('local-quick-2');

  test('each published class within 20 %, or a listed shortfall naming its term and its size', () => {
    const { rows, problems } = referenceFromRun(run);
    console.log(referenceFromRunLines(rows).join('\n'));
    for (const s of HELD_OUT_REFERENCE_SHORTFALLS) console.log(`shortfall: ${s.pair}: ${s.reason}`);
    expect(problems).toEqual([]);
    expect(rows).toHaveLength(4);
    expect(rows.filter((r) => !r.withinGoal).map((r) => `${r.target} from ${r.source}`)).toEqual(HELD_OUT_REFERENCE_SHORTFALLS.map((s) => s.pair));
    const missed = rows.find((r) => r.target === 'nvme' && r.source === 'nvme')!;
    expect(missed.prediction.bottleneck).toBe('unexplained at the source');
    expect(missed.prediction.breakdownMs.unexplained).toBeGreaterThan(2);
  });
});

/**
 * local-quick-clients-3 (bench/specs/local-quick-clients.json), measured after model 7 was frozen (d1b6791): held out
 * for both questions. What misses, with its term and its size.
 */
export const HELD_OUT_7_REFERENCE_SHORTFALLS: Shortfall[] = [{ pair: 'nvme from gp3', reason: NVME_FROM_GP3_REASON('+30.8 %, 20,964') }];

export const HELD_OUT_7_CLIENT_SHORTFALLS: Shortfall[] = [
  {
    pair: 'nvme-c16 from nvme',
    reason:
      "-20.2 % (4,241 against 5,312), below the interval (1,365-4,755): the 64-client NVMe source ran its two cores 94 % busy, and its samples held 9.67 ms a transaction beyond the stations (waits for a core). Carried as waits for a core, scaled by Erlang C's (1 + wait) ratio, 2.36 ms of it stays at 16 clients, where the run measured 2.7 ms of server time in all",
  },
  {
    pair: 'nvme-c8 from nvme',
    reason: '-35.7 % (3,042 against 4,730), below the interval (688-3,410): the same term, 1.42 ms a transaction at 8 clients, where the run measured 1.57 ms of server time in all (page reads 0.54, WAL 0.89, CPU 0.11)',
  },
];

describe('local-quick-clients-3: held out from model 7 for the reference and the client counts', () => {
  const run = recordedRun('local-quick-clients-3');

  test('the reference from the 64-client classes: within 20 %, or a listed shortfall naming its term', () => {
    const rows = referenceFromRun(run).rows.filter((r) => r.source === 'gp3' || r.source === 'nvme');
    console.log(referenceFromRunLines(rows).join('\n'));
    for (const s of HELD_OUT_7_REFERENCE_SHORTFALLS) console.log(`shortfall: ${s.pair}: ${s.reason}`);
    expect(rows).toHaveLength(4);
    expect(rows.filter((r) => !r.withinGoal).map((r) => `${r.target} from ${r.source}`)).toEqual(HELD_OUT_7_REFERENCE_SHORTFALLS.map((s) => s.pair));
  });

  test('16 and 8 clients from 64: within 15 % and inside the interval, or a listed shortfall', () => {
    const { lines, missed } = fewerClients(run);
    console.log(lines.join('\n'));
    for (const s of HELD_OUT_7_CLIENT_SHORTFALLS) console.log(`shortfall: ${s.pair}: ${s.reason}`);
    expect(missed).toEqual(HELD_OUT_7_CLIENT_SHORTFALLS.map((s) => s.pair));
  });
});
