/**
 * The published reference at its own scale, predicted from a local-quick run on the lab's device models
 * (common/model/predict-reference.ts: `storage-lab predict --reference --from RUN` and the report's fidelity section).
 * The rules were made on local-quick-1 (the revision run); the goals are held on local-quick-2, run after model 4
 * was frozen. Every check here fails on a run made to break it: another script, a class off the models, a published
 * figure that would have to enter a prediction.
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
import { recordedRun } from '../helpers/predict-fixtures';

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
