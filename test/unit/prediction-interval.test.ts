/**
 * The prediction interval (common/model/predict.ts predictWithInterval) and the matrix's summary
 * (common/model/matrix.ts): the run-to-run spread is the one the recorded repeated runs show, every interval holds
 * its point, an input the model does not know widens it, and each of the matrix's goals fails on pairs made to break it.
 */
import { demandsFromClass, targetOfClass } from '../../common/model/demands';
import { matrixGoals, matrixSummary, type MatrixPair } from '../../common/model/matrix';
import { INTERVAL_Z, predict, predictionLine, RUN_TO_RUN_LOG_SPREAD } from '../../common/model/predict';
import { referenceDemands } from '../../common/model/predict-reference';
import { recordedRun } from '../helpers/predict-fixtures';

describe('the prediction interval', () => {
  test('the run-to-run spread is the root mean square of ln(TPS ratio) over the classes predict-check-2 and -3 both ran', () => {
    const a = recordedRun('predict-check-2');
    const b = recordedRun('predict-check-3');
    const logs = Object.keys(a.classes)
      .filter((name) => b.classes[name])
      .map((name) => Math.log(b.classes[name].medianTps! / a.classes[name].medianTps!));
    expect(logs.length).toBe(5);
    const rms = Math.sqrt(logs.reduce((s, v) => s + v * v, 0) / logs.length);
    expect(RUN_TO_RUN_LOG_SPREAD).toBeCloseTo(rms, 4);
  });

  test('every interval holds its prediction, and is as wide as the spread where the model knows every input', () => {
    const run = recordedRun('predict-check-2');
    const demands = demandsFromClass(run, 'local-disk');
    const p = predict(demands, targetOfClass(run, 'gp3-3000'));
    const spread = Math.exp(INTERVAL_Z * RUN_TO_RUN_LOG_SPREAD);
    expect(p.interval.low).toBeLessThan(p.tps);
    expect(p.interval.high).toBeGreaterThan(p.tps);
    expect(p.interval.high / p.tps).toBeCloseTo(spread, 6);
    expect(p.interval.from).toHaveLength(1);
    expect(predictionLine(p)).toMatch(/^predicted: [\d,]+ TPS \([\d,]+-[\d,]+\), mean latency/);
  });

  test('a published device latency and a default standby round trip widen it', () => {
    const fromGp3 = referenceDemands('gp3');
    const nvme = predict(fromGp3, { kind: 'instance-store', clients: 64 });
    const spread = Math.exp(INTERVAL_Z * RUN_TO_RUN_LOG_SPREAD);
    expect(nvme.interval.from.some((f) => /device latency 0.05-0.2 ms/.test(f))).toBe(true);
    expect(nvme.interval.from.some((f) => /standby round trip 0.5-2 ms/.test(f))).toBe(true);
    expect(nvme.interval.high / nvme.interval.low).toBeGreaterThan(spread * spread * 1.2);
    // Given, they are no longer unknown.
    const given = predict(fromGp3, { kind: 'instance-store', clients: 64, readLatencyMs: 0.1, flushLatencyMs: 0.1, syncStandbyRttMs: 1 });
    expect(given.interval.high / given.interval.low).toBeCloseTo(spread * spread, 6);
  });
});

describe('the matrix summary and its goals', () => {
  const pair = (over: Partial<MatrixPair>): MatrixPair => ({
    source: 's',
    target: 't',
    measuredTps: 1000,
    predicted: { tps: 1050, low: 900, high: 1200, bottleneck: 'WAL flush' },
    errorPct: 5,
    held: true,
    baselines: { capDivision: { tps: null, errorPct: null }, clientScaling: { tps: 2000, errorPct: 100 } },
    capBound: false,
    capUse: null,
    ...over,
  });
  const good = () => Array.from({ length: 24 }, (_, i) => pair({ errorPct: i % 2 ? 4 : -6, capBound: i < 10, baselines: { capDivision: { tps: 1, errorPct: i < 10 ? 20 : null }, clientScaling: { tps: 1, errorPct: 50 } } }));
  const failing = (pairs: MatrixPair[]) => matrixGoals(matrixSummary(pairs)!).filter((g) => !g.met).map((g) => g.goal);

  test('pairs that meet every goal meet them', () => {
    expect(failing(good())).toEqual([]);
  });
  test.each([
    ['too few pairs', (p: MatrixPair[]) => p.slice(0, 19), /at least 20 pairs/],
    ['too few pairs no cap binds', (p: MatrixPair[]) => p.map((x) => ({ ...x, capBound: true })), /not bound by a single cap/],
    ['a median error over 10 %', (p: MatrixPair[]) => p.map((x) => ({ ...x, errorPct: 12 })), /median \|TPS error\|/],
    ['one error over 25 %', (p: MatrixPair[]) => [...p.slice(1), { ...p[0], errorPct: -26 }], /largest \|TPS error\|/],
    ['a baseline as good as the model', (p: MatrixPair[]) => p.map((x) => ({ ...x, baselines: { ...x.baselines, clientScaling: { tps: 1, errorPct: 5 } } })), /ahead of clients × TPS/],
    ['intervals that miss', (p: MatrixPair[]) => p.map((x, i) => ({ ...x, held: i % 3 === 0 })), /interval holds/],
  ])('%s fails its goal', (_, breakIt, goal) => {
    const failed = failing(breakIt(good()));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(goal);
  });
});
