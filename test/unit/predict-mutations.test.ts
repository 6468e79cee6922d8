/**
 * Tests that can fail: each mutation below breaks one part of the prediction model, through its inputs or the model's
 * test seam (ModelVariant), never by editing its code, and the fixtures' checks (test/helpers/predict-fixtures.ts:
 * every pair within the goal or a known miss, each source's figures consistent, the demands against their counters)
 * must catch it. Each mutation's effect is printed: how far it moves the fixtures' predictions and which checks fail.
 */
import { errorPct, predict, type WorkloadDemands } from '../../common/model/predict';
import { referenceChecks, referenceDemands } from '../../common/model/predict-reference';
import { PREDICTION_GOAL_PCT } from '../../common/model/run-predictions';
import { evaluateFixtures, goalFailures, type FixtureEvaluation, type Mutation } from '../helpers/predict-fixtures';

const doubled = (v: number | null) => (v === null ? null : 2 * v);

const MUTATIONS: Mutation[] = [
  // Both device latencies the model takes for each target, doubled (the emulated targets take the source's measured ones).
  {
    name: 'device latency doubled (read and flush, as the model takes them for each target)',
    target: (t, d) => ({ ...t, readLatencyMs: 2 * d.device.readLatencyMs!, flushLatencyMs: 2 * d.device.flushLatencyMs! }),
  },
  { name: 'group commit dropped (each commit flushes alone, one flush at a time)', variant: { groupCommit: false } },
  { name: 'residuals dropped (nothing carried from the source beyond the stations)', variant: { residuals: false } },
  { name: 'CPU per transaction halved', demands: (d: WorkloadDemands) => ({ ...d, cpu: { ...d.cpu, msPerTx: d.cpu.msPerTx / 2 } }) },
];

/** The largest change a mutation makes to any fixture pair's predicted TPS, in per cent of the pair's measured TPS. */
function largestMove(base: FixtureEvaluation, mutated: FixtureEvaluation): { pair: string; points: number } {
  return base.pairs
    .map((p, i) => ({ pair: `${p.run} ${p.className}`, points: (100 * Math.abs(mutated.pairs[i].modelTps - p.modelTps)) / p.measuredTps }))
    .sort((a, b) => b.points - a.points)[0];
}

describe('mutations of the model are caught by the fixtures\' checks', () => {
  const base = evaluateFixtures();
  // Each mutation evaluated once (the fixtures take a second or two each on a busy machine).
  const evaluated = new Map<Mutation, FixtureEvaluation>();
  const evaluate = (m: Mutation) => evaluated.get(m) ?? evaluated.set(m, evaluateFixtures(m)).get(m)!;

  it('the unmutated model passes them (the baseline for every case below)', () => {
    expect(goalFailures(base)).toEqual([]);
  });

  it.each(MUTATIONS.map((m) => [m.name, m] as const))('%s: some check fails', (_name, mutation) => {
    const mutated = evaluate(mutation);
    const failures = goalFailures(mutated);
    const move = largestMove(base, mutated);
    console.log([`${mutation.name}: largest move ${move.points.toFixed(1)} points (${move.pair}); caught by ${failures.length} check(s):`, ...failures.map((f) => `  ${f}`)].join('\n'));
    expect(failures.length).toBeGreaterThan(0);
  });

  it.each(MUTATIONS.slice(0, 3).map((m) => [m.name, m] as const))('%s: moves some fixture prediction by more than the goal\'s tolerance', (_name, mutation) => {
    expect(largestMove(base, evaluate(mutation)).points).toBeGreaterThan(PREDICTION_GOAL_PCT);
  });

  it('CPU per transaction halved moves no fixture prediction by more than the tolerance: no pair is CPU-bound, so only the counters check sees it', () => {
    // A blind spot of these fixtures, asserted so that it is known: every target is bound by its read cap or by
    // waits, the sources' cores were 56-82 % busy, and the residuals absorb the CPU time the model no longer
    // explains at the source. A measured CPU-bound pair (issue 22's validation matrix) would make this fail: then
    // assert the move instead.
    const halved = evaluate(MUTATIONS[3]);
    expect(largestMove(base, halved).points).toBeLessThan(PREDICTION_GOAL_PCT);
    expect(goalFailures(halved).every((f) => /disagree with the counters: cores busy/.test(f))).toBe(true);
  });

  it('device latency doubled on the source\'s side instead (a mis-measured source) is absorbed by the residuals: the reason the mutation above doubles the target\'s', () => {
    const sourceSide = evaluateFixtures({
      name: 'source latencies doubled',
      demands: (d) => ({ ...d, device: { readLatencyMs: doubled(d.device.readLatencyMs), flushLatencyMs: doubled(d.device.flushLatencyMs) } }),
    });
    const move = largestMove(base, sourceSide);
    console.log(`source's measured device latencies doubled: largest move ${move.points.toFixed(1)} points (${move.pair}); checks failing: ${goalFailures(sourceSide).length}`);
    expect(move.points).toBeLessThan(PREDICTION_GOAL_PCT);
  });

  it('the published reference catches the residuals dropped and group commit dropped too (NVMe off by more than 20 %)', () => {
    const nvme = referenceChecks().find((c) => c.target === 'nvme')!;
    expect(Math.abs(nvme.tpsErrorPct)).toBeLessThanOrEqual(20);
    for (const variant of [{ residuals: false }, { groupCommit: false }]) {
      const other = predict(referenceDemands('gp3'), nvme.prediction.target, variant);
      expect(Math.abs(errorPct(other.tps, nvme.published.tps))).toBeGreaterThan(20);
    }
  });
});
