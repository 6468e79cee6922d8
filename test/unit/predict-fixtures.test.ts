/**
 * The model on the recorded predict-check runs (test/fixtures/results/predict-check-{1,2,3}.json), every one of them
 * held to the preset's goal or listed as a known miss with its reason (test/helpers/predict-fixtures.ts), beside the
 * two baselines it must beat (common/model/baselines.ts). The tables are printed on purpose: they are the figures
 * docs/prediction-model.md quotes.
 */
import { calibrationPredictions, PREDICTION_GOAL_PCT, previousRunPredictions, rowComparison } from '../../common/model/run-predictions';
import { comparisonLine } from '../../common/model/baselines';
import { predictionsMarkdown } from '../../analysis/report/predictions-markdown';
import { evaluateFixtures, fixtureComparison, goalFailures, KNOWN_MISSES, pairsTable, PREDICT_CHECK_RUNS, recordedRun } from '../helpers/predict-fixtures';

describe('the model on the recorded predict-check runs', () => {
  const evaluation = evaluateFixtures();

  it('evaluates the same predictions the report shows (the calibration class\'s, through run-predictions)', () => {
    for (const run of PREDICT_CHECK_RUNS) {
      const set = calibrationPredictions(recordedRun(run))!;
      const mine = evaluation.pairs.filter((p) => p.run === run);
      expect(set.rows.map((r) => r.className)).toEqual(mine.map((p) => p.className));
      set.rows.forEach((r, i) => {
        expect(r.predicted!.tps).toBeCloseTo(mine[i].modelTps, 9);
        expect(r.baselines!.capDivision.tps).toBeCloseTo(mine[i].baselineTps.capDivision!, 9);
        expect(r.baselines!.clientScaling.tps).toBeCloseTo(mine[i].baselineTps.clientScaling!, 9);
      });
    }
    expect(evaluation.pairs).toHaveLength(12);
  });

  it(`holds every pair to the ±${PREDICTION_GOAL_PCT} % goal or to the known-miss list, which it prints`, () => {
    console.log(
      [
        `Known misses (test/helpers/predict-fixtures.ts), the only pairs allowed off the ±${PREDICTION_GOAL_PCT} % goal:`,
        ...KNOWN_MISSES.map((k) => {
          const p = evaluation.pairs.find((x) => x.run === k.run && x.className === k.className);
          return `  ${k.run} ${k.className}${p ? ` (${p.errorPct >= 0 ? '+' : ''}${p.errorPct.toFixed(1)} %)` : ''}: ${k.reason}`;
        }),
      ].join('\n'),
    );
    expect(goalFailures(evaluation)).toEqual([]);
  });

  it('fails the gate when a known miss starts meeting the goal, when a pair not listed misses it, and when a source is inconsistent', () => {
    // A known miss brought within the goal.
    const healed = { ...evaluation, pairs: evaluation.pairs.map((p) => (p.run === 'predict-check-1' && p.className === 'gp3-6000' ? { ...p, errorPct: 1 } : p)) };
    expect(goalFailures(healed)).toEqual([expect.stringMatching(/^known miss now meets the goal: predict-check-1 gp3-6000/)]);
    // A pair that met the goal now off it.
    const broken = { ...evaluation, pairs: evaluation.pairs.map((p) => (p.run === 'predict-check-2' && p.className === 'gp3-1500' ? { ...p, errorPct: -16 } : p)) };
    expect(goalFailures(broken)).toEqual([expect.stringMatching(/^new miss: predict-check-2 gp3-1500 -16\.0 %/)]);
    // The list without predict-check-1's misses: both are new misses.
    expect(goalFailures(evaluation, [])).toHaveLength(KNOWN_MISSES.length);
    // A listed pair that does not exist.
    expect(goalFailures(evaluation, [...KNOWN_MISSES, { run: 'predict-check-9', className: 'gp3-1500', reason: '' }])).toEqual([expect.stringMatching(/names no pair/)]);
    // A source whose check fails, and demands that disagree with their counters.
    const inconsistent = {
      ...evaluation,
      sources: evaluation.sources.map((s, i) => (i === 0 ? { ...s, check: { ...s.check, ok: false }, counters: s.counters.map((c) => ({ ...c, ok: false })) } : s)),
    };
    expect(goalFailures(inconsistent)).toHaveLength(1 + evaluation.sources[0].counters.length);
  });

  it('says, for every source, whether its consistency check can fail (a saturated station) or holds by construction: here it can', () => {
    for (const s of evaluation.sources) {
      console.log(`${s.run} source figures consistent (Little's law): ${s.check.errorPct >= 0 ? '+' : ''}${s.check.errorPct.toFixed(1)} %, saturated at the source: ${s.check.saturated.join(', ') || 'none (holds by construction)'}`);
      for (const c of s.counters) console.log(`  ${c.what}: demands × TPS ${c.fromDemands.toFixed(2)}, counted ${c.counted.toFixed(2)} (${c.errorPct.toFixed(1)} %)`);
      // The three local disks kept their WAL flush busy 93-95 % of the time at 64 clients (pg_stat_wal): the model's
      // WAL flush station is saturated there, so the split of the clients' time is the model's own and the check can
      // fail on a model error (before the WAL flush was a station, it held by construction).
      expect(s.check.saturated).toEqual(['WAL flush']);
      expect(s.check.byConstruction).toBe(false);
      expect(s.check.detail).toMatch(/the source saturated WAL flush, .* a wrong model can fail this/);
      expect(s.counters.map((c) => c.what)).toEqual(['cores busy', 'device reads per second']);
    }
  });

  it('prints the model beside both baselines on the same pairs, and which wins on median error', () => {
    console.log(['Calibration class → every other class (the goal\'s pairs):', ...pairsTable(evaluation.pairs)].join('\n'));
    const c = fixtureComparison(evaluation)!;
    console.log(comparisonLine(c));
    expect(c.pairs).toBe(12);
    // What docs/prediction-model.md states: on these pairs the model ties the cap ÷ I/O baseline on median error
    // (the targets are bound by their read cap, where the model reduces to that division) and beats clients × TPS.
    expect(c.medianAbsErrorPct.model).toBeCloseTo(c.medianAbsErrorPct.capDivision, 6);
    expect(c.modelBeatsBoth).toBe(false);
    expect(c.medianAbsErrorPct.model).toBeLessThan(c.medianAbsErrorPct.clientScaling);
    // The model wins where memory changes (the cache model), the baseline where the model carries a slow source's
    // unexplained time to a target that does not have it.
    for (const run of PREDICT_CHECK_RUNS) {
      const mem = evaluation.pairs.find((p) => p.run === run && p.className === 'gp3-3000-mem1536')!;
      expect(Math.abs(mem.errorPct)).toBeLessThan(Math.abs((100 * (mem.baselineTps.capDivision! - mem.measuredTps)) / mem.measuredTps));
    }
    const slow = evaluation.pairs.find((p) => p.run === 'predict-check-1' && p.className === 'gp3-6000')!;
    expect(Math.abs(slow.errorPct)).toBeGreaterThan(Math.abs((100 * (slow.baselineTps.capDivision! - slow.measuredTps)) / slow.measuredTps));
  });

  it('prints the run-to-run pairs (predict-check-3 predicted from predict-check-2, class by class) beside the baselines', () => {
    const sets = previousRunPredictions(recordedRun('predict-check-2'), recordedRun('predict-check-3'))!.sets;
    const rows = sets.flatMap((s) => s.rows);
    const pairs = rows.map((r) => ({
      run: 'predict-check-2 → 3',
      className: r.className,
      measuredTps: r.measured!.tps,
      modelTps: r.predicted!.tps,
      errorPct: r.errorPct.tps!,
      baselineTps: { capDivision: r.baselines!.capDivision.tps, clientScaling: r.baselines!.clientScaling.tps },
    }));
    console.log(['The same class, run to run (not held to the goal: the local disk itself ran 14 % slower the second time):', ...pairsTable(pairs, [])].join('\n'));
    const c = rowComparison(rows)!;
    console.log(comparisonLine(c));
    // The local disk has no cap to divide: the comparison is on the four emulated classes.
    expect(c.pairs).toBe(4);
    expect(rows.find((r) => r.className === 'local-disk')!.baselines!.capDivision.tps).toBeNull();
  });

  it('shows the baselines and the comparison in the report\'s "Predicted vs measured"', () => {
    const md = predictionsMarkdown({ computedAt: 'now', calibration: calibrationPredictions(recordedRun('predict-check-2'))! }).join('\n');
    expect(md).toContain('| cap ÷ I/O baseline TPS (error) | clients × TPS baseline TPS (error) |');
    expect(md).toMatch(/\| gp3-1500 \| .* \| 984 \(\+0\.3 %\) \| 12,629 \(\+1,187\.6 %\) \|/);
    expect(md).toMatch(/Against the baselines \(docs\/prediction-model.md\): median \|TPS error\| on 4 pairs: model [\d.]+ %, cap ÷ I\/O [\d.]+ %, clients × TPS [\d.]+ %: the model (does not beat|beats) both baselines\./);
    expect(md).toMatch(/^Source figures consistent \(Little's law\): PASS: /m);
    // A result stored before the baselines existed shows none, not a comparison.
    const old = calibrationPredictions(recordedRun('predict-check-2'))!;
    const stripped = { ...old, rows: old.rows.map(({ baselines: _omit, ...r }) => r) };
    const oldMd = predictionsMarkdown({ computedAt: 'now', calibration: stripped }).join('\n');
    expect(oldMd).not.toContain('Against the baselines');
    expect(oldMd).toMatch(/\| gp3-1500 \| [^\n]* \| – \| – \|/);
  });
});
