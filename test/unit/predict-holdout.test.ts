/**
 * The prediction model on points it was not revised on (issue 29; docs/prediction-model.md, "Held out"): the
 * predict-holdout preset, fixed before any of its points was measured, on the modelled devices. predict-holdout-1 was
 * measured under model 4 and showed it wrong (demands per server commit, where that preset's script commits twice a
 * transaction); model 5 was revised on it, so it is now in the revision set, and predict-holdout-2, measured after
 * model 5 was frozen, was held to the goals: median |TPS error| ≤ 10 %, largest ≤ 25 %, interval coverage ≥ 80 %.
 * Its hosts were restored without the WAL segments a loaded host keeps; predict-holdout-3 (2026-12-05), measured on
 * today's hosts (WAL segments, every preparation ending cold) under model 6, is held to the same goals. Model 6 was
 * not revised on either. Model 7 was frozen after both had been seen, so both are in the revision set now, and
 * predict-holdout-4 (2026-12-06), measured after model 7 was frozen, is the held-out run. A goal a run misses is
 * listed in its shortfalls with the reason (its figures under model 7); the test fails when a listed one starts
 * meeting its goal or one not listed fails.
 */
import { matrixLines, predictionMatrix } from '../../common/model/matrix';
import { demandsFromClass, windowTransactions } from '../../common/model/demands';
import { recordedMatrixTests, recordedRun, type GoalShortfall } from '../helpers/predict-fixtures';

/** The held-out run's goals it does not meet, each with its reason (docs/prediction-model.md gives the detail). */
export const HOLDOUT_SHORTFALLS: GoalShortfall[] = [
  {
    goal: /^median \|TPS error\|/,
    reason:
      '10.5 % over 56 pairs (model 6: 11.3 %), pulled up by the NVMe targets predicted from a capped source (below); the other 41 pairs 7.3 %',
  },
  {
    goal: /^largest \|TPS error\|/,
    reason:
      "50.3 % (model 6: 52.8 %): nvme-c64-mem1280 from gp3-2000-c64. The 15 NVMe targets predicted from a gp3 or io2 source are under, by 8.2-50.3 %, bound by the cores: the capped source's machine CPU per transaction (1.17 ms at gp3-3000's 567 TPS, against 0.76 ms on NVMe at 2,422) holds the machine's work that does not follow its TPS (the lab's own services, the modelled volume's server holding I/Os for its budget), which the model carries as per-transaction work to a target running four times as many. Without them the largest is 24.1 %",
  },
  {
    goal: /^the interval holds the measured TPS/,
    reason:
      '55 % (31 of 56; model 6: 32). 14 of the 25 misses are those NVMe targets from capped sources; of the other 11, 7 are targets at 768 MiB predicted from 1,280 MiB, 14.3-24.1 % over (the uniform cache model, as on predict-matrix: the index stays cached at either size), 2 are gp3-2000 from gp3-3000 at both client counts (+13.5, +14.3 %), and 2 nvme-c16 from the 64-client NVMe points (-22.6, -13.5 %: the waits for a core carried from 64 clients)',
  },
];

/** predict-holdout-3's shortfalls (docs/prediction-model.md, "Held out", step 4), under model 7. */
export const HOLDOUT_3_SHORTFALLS: GoalShortfall[] = [
  {
    goal: /^median \|TPS error\|/,
    reason: '10.0 % over 56 pairs (model 6: 10.1 %); without the 15 NVMe targets predicted from a capped source, 7.1 % over the other 41',
  },
  {
    goal: /^largest \|TPS error\|/,
    reason:
      "60.3 % (model 6: 62.1 %): nvme-c64 from gp3-2000-c64. All 15 NVMe targets predicted from a gp3 or io2 source are under, by 19.4-60.3 %, bound by the cores: the capped sources spent 1.05-1.57 ms of the machine's CPU a transaction (the host's 0.67-1.01, the volume server's 0.33-0.52) where the NVMe points spent 0.58-0.72 (0.38-0.42 and 0.14-0.22), and the model carries it per transaction to a target running 3 to 9 times as many. Without those 15 pairs the largest is 16.6 % (nvme-c64 from nvme-c16)",
  },
  {
    goal: /^the interval holds the measured TPS/,
    reason:
      '62.5 % (35 of 56). The 15 NVMe targets from capped sources all miss (35 of the other 41 held: 85 %); the other 6 are 11.2-16.6 % off: gp3-2000 from nvme-c64, nvme-c16 and io2-6000 (+12.5 to +13.4 %), gp3-3000-c24 and io2-6000 from gp3-4500 at 1,280 MiB (-11.6, -11.2 %), and nvme-c64 from nvme-c16 (-16.6 %)',
  },
];

/** predict-holdout-4's shortfalls, held out from model 7 (docs/prediction-model.md, "Held out", step 5). */
export const HOLDOUT_4_SHORTFALLS: GoalShortfall[] = [
  {
    goal: /^median \|TPS error\|/,
    reason: '10.1 % over 56 pairs; without the 15 NVMe targets predicted from a capped source, 7.7 % over the other 41',
  },
  {
    goal: /^largest \|TPS error\|/,
    reason:
      "61.4 %: nvme-c64 from gp3-3000-c24. The 15 NVMe targets predicted from a gp3 or io2 source are under by 7.3-61.4 % (14 outside their intervals), the term of predict-holdout-3: the capped sources' CPU a transaction, which holds work that does not follow the TPS, carried per transaction to a target running 3 to 10 times as many. Without them the largest is 21.1 % (nvme-c64 from nvme-c16)",
  },
  {
    goal: /^the interval holds the measured TPS/,
    reason:
      '61 % (34 of 56). 14 of the 22 misses are those NVMe targets; 33 of the other 41 held (80.5 %). The other 8: between the NVMe points (nvme-c64 from nvme-c16 -21.1 % and from 1,280 MiB -15.1 %, nvme-c64-mem1280 from nvme-c64 +17.7 %), gp3-4500 at 1,280 MiB from nvme-c64, nvme-c16 and io2-6000 (+12.2 to +14.0 %), and gp3-3000-c24 and io2-6000 from gp3-4500 at 1,280 MiB (-11.0 % each)',
  },
];

/** The goals of issue 29 among the matrix's (the pair counts and the baselines are reported, not held here). */
const HELD = [/^median \|TPS error\|/, /^largest \|TPS error\|/, /^the interval holds the measured TPS/];

describe('predict-holdout-2: held out from model 5 (revision since model 7)', () => {
  recordedMatrixTests('predict-holdout-2', HOLDOUT_SHORTFALLS, HELD);
});

describe('predict-holdout-3: held out from model 6 on today\'s hosts (revision since model 7)', () => {
  recordedMatrixTests('predict-holdout-3', HOLDOUT_3_SHORTFALLS, HELD);

  test('its restored hosts had the WAL segments a loaded host keeps', () => {
    // What makes it a different test from predict-holdout-2 (whose hosts made each new segment while commits waited).
    const run = recordedRun('predict-holdout-3');
    const restored = Object.values(run.classes).flatMap((c) => Object.values(c.clusters ?? {})).filter((c) => c.dataSet?.restore);
    expect(restored.length).toBeGreaterThanOrEqual(7);
    for (const c of restored) expect(c.dataSet!.restore!.checkParts!.walSegments).toBeGreaterThan(0);
  });
});

describe('predict-holdout-4: the run held out from model 7', () => {
  recordedMatrixTests('predict-holdout-4', HOLDOUT_4_SHORTFALLS, HELD);
});

describe('predict-holdout-1: the run model 5 was revised on', () => {
  const run = recordedRun('predict-holdout-1');

  test('prints its table under the current model', () => {
    const matrix = predictionMatrix(run);
    console.log(matrixLines(matrix).join('\n'));
    expect(matrix.pairs).toHaveLength(56);
  });

  test("its script commits twice a transaction: demands per client transaction, the unit of the measured TPS", () => {
    const d = demandsFromClass(run, 'gp3-3000-c64');
    expect(d.notes).toContain('2 server commits per client transaction (the script\'s statements outside a transaction block): demands are per client transaction');
    // The volume served 1,931 reads a second at 565 TPS: 3.4 a client transaction (1.7 a server commit).
    expect(d.reads.perTx).toBeGreaterThan(3);
  });
});

describe('windowTransactions', () => {
  const readings = (commits: number) => ({ database: { xactCommit: commits, xactRollback: 0 }, ownTransactions: 10, samples: 10 }) as Parameters<typeof windowTransactions>[0];

  test('one commit a client transaction: the server count; two: half of it; none counted: the client count', () => {
    expect(windowTransactions(readings(1010), 1000)).toEqual({ tx: 1000, commitsPerTx: 1 });
    expect(windowTransactions(readings(1060), 1000)).toEqual({ tx: 1050, commitsPerTx: 1 });
    expect(windowTransactions(readings(2010), 1000)).toEqual({ tx: 1000, commitsPerTx: 2 });
    expect(windowTransactions(readings(2110), 1000)).toEqual({ tx: 1050, commitsPerTx: 2 });
    expect(windowTransactions(readings(10), 1000)).toEqual({ tx: 1000, commitsPerTx: 1 });
    // A window slower than the run's mean does not round below one commit a transaction.
    expect(windowTransactions(readings(410), 1000)).toEqual({ tx: 400, commitsPerTx: 1 });
  });
});
