/**
 * The recorded predict-check runs (test/fixtures/results/predict-check-{1,2,3}.json) as the prediction model's test
 * set: every class predicted from the calibration class, beside both baselines (common/model/baselines.ts), and the
 * goal every pair is held to: within PREDICTION_GOAL_PCT, or listed in KNOWN_MISSES with its reason. The model, or its
 * inputs, changed by a mutation is evaluated the same way (test/unit/predict-mutations.test.ts), so a check that a
 * mutation leaves passing is a check that cannot see what the mutation breaks.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { baselines, BASELINE_LABELS, BASELINE_NAMES, compareWithBaselines, type BaselineComparison, type BaselineName } from '../../common/model/baselines';
import { demandsFromClass, medianCluster, targetOfClass } from '../../common/model/demands';
import { errorPct, predict, sourceCheck, type ModelVariant, type PredictTarget, type SourceCheck, type WorkloadDemands } from '../../common/model/predict';
import { matrixGoals, matrixLines, predictionMatrix } from '../../common/model/matrix';
import { MODEL_VERSION } from '../../common/model/predict';
import { PREDICTION_GOAL_PCT } from '../../common/model/run-predictions';
import type { ExperimentResult } from '../../common/results/result';
import { fewerClientsPairs } from '../../common/model/split';
import { PROJECT_ROOT } from '../../lib/lab-paths';

export const PREDICT_CHECK_RUNS = ['predict-check-1', 'predict-check-2', 'predict-check-3'] as const;

export function recordedRun(name: string): ExperimentResult {
  return JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'results', `${name}.json`), 'utf8')) as ExperimentResult;
}

export interface KnownMiss {
  run: string;
  className: string;
  reason: string;
}

/**
 * The pairs that miss the goal, each with its reason: the one place they are listed (docs/prediction-model.md points
 * here). The gate fails when one of them starts meeting the goal (take it off the list) and when a pair not listed
 * misses it. Both of predict-check-1's misses come from figures the model carries from the source unchanged: the
 * emulated volume sits on the source's disk, so the model takes that disk's read and flush latencies, and carries
 * the source's unexplained page-read time per read.
 */
export const KNOWN_MISSES: KnownMiss[] = [
  {
    run: 'predict-check-1',
    className: 'gp3-3000',
    reason:
      'predicted at the read cap (3,000 ÷ 1.51 reads = 1,982 TPS); measured 1,623 with the cap 83 % used: under the throttle this slower disk flushed WAL in 5.5 ms (3.3 at the source) and read in 4.2 ms (0.44), so commits waited 15.1 ms on WAL (9.6 at the source) and waits, not the cap, bound it',
  },
  {
    run: 'predict-check-1',
    className: 'gp3-6000',
    reason:
      'predicted 3,236 TPS (-16.6 %; model 2 gave 2,983, -23.2 %), bound by waits carried from the source (its page reads 1.3 ms each); measured 3,882, close to the cap (6,000 ÷ 1.52 reads): this slower disk\'s reads under the throttle are not the source\'s',
  },
];

/** What a mutation changes: the source's demands, each target, or a part of the model (the test seam). */
export interface Mutation {
  name: string;
  demands?: (d: WorkloadDemands) => WorkloadDemands;
  target?: (t: PredictTarget, d: WorkloadDemands) => PredictTarget;
  variant?: ModelVariant;
}

export interface FixturePair {
  run: string;
  className: string;
  measuredTps: number;
  modelTps: number;
  errorPct: number;
  baselineTps: Record<BaselineName, number | null>;
}

/** The source's demands against the raw counters they come from: cores busy and device reads per second. */
export interface CounterCheck {
  what: string;
  fromDemands: number;
  counted: number;
  errorPct: number;
  ok: boolean;
}

export interface FixtureEvaluation {
  pairs: FixturePair[];
  sources: { run: string; check: SourceCheck; counters: CounterCheck[] }[];
}

/**
 * Demands × the measured TPS must give back the counters they were divided from, within the goal's tolerance: the
 * host's CPU seconds per second (cores busy) and the device's reads per second. They differ only by the TPS pgbench
 * reports against the commits counted in the sampled window (a few per cent), so a demand scaled by a bug fails.
 */
export function counterChecks(result: ExperimentResult, className: string, d: WorkloadDemands): CounterCheck[] {
  const diag = medianCluster(result.classes[className])!.diagnostics!;
  const io = diag.cgroupIo ?? diag.device;
  const rows: [string, number, number | null][] = [
    ['cores busy', (d.cpu.msPerTx * d.measured.tps) / 1000, diag.cpu ? diag.cpu.seconds / diag.seconds : null],
    ['device reads per second', d.reads.perTx * d.measured.tps, io ? io.readIops : null],
  ];
  return rows
    .filter((r): r is [string, number, number] => r[2] !== null)
    .map(([what, fromDemands, counted]) => {
      const e = errorPct(fromDemands, counted);
      return { what, fromDemands, counted, errorPct: e, ok: Math.abs(e) <= PREDICTION_GOAL_PCT };
    });
}

/** Every class of every recorded run predicted from its calibration class, with a mutation applied if given. */
export function evaluateFixtures(mutation: Mutation = { name: 'none' }): FixtureEvaluation {
  const pairs: FixturePair[] = [];
  const sources: FixtureEvaluation['sources'] = [];
  for (const run of PREDICT_CHECK_RUNS) {
    const result = recordedRun(run);
    const calibration = result.spec.prediction!.calibrationClass;
    const d = (mutation.demands ?? ((x) => x))(demandsFromClass(result, calibration));
    sources.push({ run, check: sourceCheck(d, mutation.variant), counters: counterChecks(result, calibration, d) });
    for (const className of Object.keys(result.classes).filter((c) => c !== calibration)) {
      const target = (mutation.target ?? ((t) => t))(targetOfClass(result, className), d);
      const measuredTps = result.classes[className].medianTps!;
      const modelTps = predict(d, target, mutation.variant).tps;
      const b = baselines(d, target);
      pairs.push({
        run,
        className,
        measuredTps,
        modelTps,
        errorPct: errorPct(modelTps, measuredTps),
        baselineTps: { capDivision: b.capDivision.tps, clientScaling: b.clientScaling.tps },
      });
    }
  }
  return { pairs, sources };
}

const pairName = (p: { run: string; className: string }) => `${p.run} ${p.className}`;
const signed = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(1)} %`;

/**
 * Everything the goal says about an evaluation, as failures (none: it holds): a pair off the goal that is not a known
 * miss, a known miss that meets the goal or names no pair, a source whose figures the model does not give back, and
 * demands that disagree with their counters.
 */
export function goalFailures(e: FixtureEvaluation, known: KnownMiss[] = KNOWN_MISSES): string[] {
  const failures: string[] = [];
  const isKnown = (p: FixturePair) => known.some((k) => k.run === p.run && k.className === p.className);
  for (const p of e.pairs) {
    const missed = Math.abs(p.errorPct) > PREDICTION_GOAL_PCT;
    if (missed && !isKnown(p)) failures.push(`new miss: ${pairName(p)} ${signed(p.errorPct)} (goal ±${PREDICTION_GOAL_PCT} %)`);
    if (!missed && isKnown(p)) failures.push(`known miss now meets the goal: ${pairName(p)} ${signed(p.errorPct)}: take it off KNOWN_MISSES`);
  }
  for (const k of known) if (!e.pairs.some((p) => p.run === k.run && p.className === k.className)) failures.push(`known miss names no pair: ${pairName(k)}`);
  for (const s of e.sources) {
    if (!s.check.ok) failures.push(`${s.run}: source figures not consistent: ${s.check.detail}`);
    for (const c of s.counters) if (!c.ok) failures.push(`${s.run}: demands × TPS disagree with the counters: ${c.what} ${c.fromDemands.toFixed(2)} vs ${c.counted.toFixed(2)} (${signed(c.errorPct)})`);
  }
  return failures;
}

/** The model against both baselines on the evaluation's pairs. */
export function fixtureComparison(e: FixtureEvaluation): BaselineComparison | null {
  return compareWithBaselines(e.pairs.map((p) => ({ label: pairName(p), measuredTps: p.measuredTps, modelTps: p.modelTps, baselineTps: p.baselineTps })));
}

/** The pairs as a text table: measured, the model and each baseline with their errors, and which pairs are known misses. */
export function pairsTable(pairs: FixturePair[], known: KnownMiss[] = KNOWN_MISSES): string[] {
  const n = (v: number) => Math.round(v).toLocaleString('en-US');
  const cell = (tps: number | null, measured: number) => (tps === null ? '–' : `${n(tps)} (${signed(errorPct(tps, measured))})`);
  const head = ['pair', 'measured TPS', 'model', ...BASELINE_NAMES.map((b) => BASELINE_LABELS[b]), ''];
  const rows = pairs.map((p) => [
    pairName(p),
    n(p.measuredTps),
    cell(p.modelTps, p.measuredTps),
    ...BASELINE_NAMES.map((b) => cell(p.baselineTps[b], p.measuredTps)),
    known.some((k) => k.run === p.run && k.className === p.className) ? 'known miss' : '',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [head, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
}

/** A goal a recorded run does not meet, with its reason (test/unit/predict-matrix and predict-holdout). */
export interface GoalShortfall {
  goal: RegExp;
  reason: string;
}

/**
 * Holds a run's goals against its listed shortfalls: prints each shortfall, and returns the goals that failed without
 * being listed and the listed shortfalls whose goal is met (both must be empty).
 */
export function unlistedGoalChanges(goals: { goal: string; met: boolean }[], shortfalls: GoalShortfall[]): { unlisted: string[]; nowMet: string[] } {
  for (const s of shortfalls) console.log(`shortfall: ${s.goal.source}: ${s.reason}`);
  const failed = goals.filter((g) => !g.met).map((g) => g.goal);
  return {
    unlisted: failed.filter((g) => !shortfalls.some((s) => s.goal.test(g))),
    nowMet: shortfalls.filter((s) => !failed.some((g) => s.goal.test(g))).map((s) => s.goal.source),
  };
}

/**
 * The tests of a recorded eight-point matrix run (test/unit/predict-matrix and predict-holdout): its table printed
 * whole under the current model, every ordered pair predicted without a problem, and its goals (every one, or those
 * matching `held`) met or listed in `shortfalls`. Called inside a describe block.
 */
export function recordedMatrixTests(name: string, shortfalls: GoalShortfall[], held?: RegExp[]): void {
  const matrix = predictionMatrix(recordedRun(name));

  test('prints its table: every ordered pair of the eight points', () => {
    console.log(matrixLines(matrix).join('\n'));
    expect(matrix.modelVersion).toBe(MODEL_VERSION);
    expect(matrix.classes).toHaveLength(8);
    expect(matrix.pairs).toHaveLength(56);
    expect(matrix.problems).toEqual([]);
  });

  test('meets its goals, or the goal is a listed shortfall', () => {
    const goals = matrixGoals(matrix.summary!).filter((g) => !held || held.some((h) => h.test(g.goal)));
    if (held) expect(goals).toHaveLength(held.length);
    for (const g of goals) console.log(`${g.met ? 'met' : 'NOT MET'}: ${g.goal}`);
    const { unlisted, nowMet } = unlistedGoalChanges(goals, shortfalls);
    expect(unlisted).toEqual([]);
    expect(nowMet).toEqual([]);
  });
}

/**
 * A local-quick-clients run's 16- and 8-client classes predicted from its 64-client ones, against the goal
 * (within 15 % and inside the interval): a line for each, and the pairs that miss it.
 */
export function fewerClients(run: ExperimentResult, variant: ModelVariant = {}): { lines: string[]; missed: string[] } {
  const pairs = fewerClientsPairs(run, variant);
  return {
    lines: pairs.map(({ source, target, measuredTps, prediction: p, errorPct: err, held }) => `${target} from ${source}: ${Math.round(p.tps)} (${Math.round(p.interval.low)}-${Math.round(p.interval.high)}) against ${Math.round(measuredTps)}: ${err.toFixed(1)} %${held ? '' : ', outside the interval'}`),
    missed: pairs.filter((p) => Math.abs(p.errorPct) > CLIENTS_GOAL_PCT || !p.held).map((p) => `${p.target} from ${p.source}`),
  };
}

/** Issue 29's goal for fewer clients predicted from the demo's 64. */
export const CLIENTS_GOAL_PCT = 15;
