/**
 * The prediction model's intervals on the points it was revised on against the points held out from it (issue 29,
 * item 5: coverage is reported on the held-out points, not on the fitted ones), side by side in one run: for each
 * recorded run of the split (test/fixtures/results), every ordered pair of its classes, as `predict --matrix` makes
 * them, and the runs of `bench/specs/local-quick-clients.json`, their 16- and 8-client classes from their 64. Prints
 * per run and per set the pairs, the median and largest |TPS error|, the share of measured TPS inside the interval,
 * and the held-out set's figures over the revision set's. No machine time is measured: the model on recorded runs.
 *   node dist/bench/prediction-coverage.js
 */
import { printTable } from '../client/table';
import { predictionMatrix } from '../common/model/matrix';
import { MODEL_VERSION } from '../common/model/predict';
import { fewerClientsPairs, PREDICTION_SPLIT, type SplitRun } from '../common/model/split';
import type { ExperimentResult } from '../common/results/result';
// The tests' reader of the recorded runs: this bench scores the same fixtures they hold.
import { recordedRun } from '../test/helpers/predict-fixtures';

/** One prediction against its measurement. */
export interface ScoredPair {
  errorPct: number;
  held: boolean;
}

/** A run's scored pairs: every ordered pair of a matrix, or a clients run's 16 and 8 clients from its 64. */
export function scoredPairs(run: SplitRun, result: ExperimentResult): ScoredPair[] {
  if (run.kind === 'matrix')
    return predictionMatrix(result)
      .pairs.filter((p) => p.errorPct !== null && p.held !== null)
      .map((p) => ({ errorPct: p.errorPct!, held: p.held! }));
  return fewerClientsPairs(result).map((p) => ({ errorPct: p.errorPct, held: p.held }));
}

/** Pairs, median and largest |error| (per cent) and coverage (share held) of a set of scored pairs. */
export function scoreOf(pairs: ScoredPair[]): { pairs: number; medianAbsPct: number; largestAbsPct: number; coverage: number } {
  const abs = pairs.map((p) => Math.abs(p.errorPct)).sort((a, b) => a - b);
  const mid = abs.length / 2;
  const median = abs.length === 0 ? NaN : abs.length % 2 ? abs[Math.floor(mid)] : (abs[mid - 1] + abs[mid]) / 2;
  return {
    pairs: pairs.length,
    medianAbsPct: median,
    largestAbsPct: abs.length ? abs[abs.length - 1] : NaN,
    coverage: pairs.length ? pairs.filter((p) => p.held).length / pairs.length : NaN,
  };
}

function main(): void {
  if (PREDICTION_SPLIT.model !== MODEL_VERSION) throw new Error(`the split is model ${PREDICTION_SPLIT.model}'s, the model is ${MODEL_VERSION}: fix the split first (docs/prediction-model.md, "Held out")`);
  const row = (label: string, s: ReturnType<typeof scoreOf>) => [label, String(s.pairs), `${s.medianAbsPct.toFixed(1)} %`, `${s.largestAbsPct.toFixed(1)} %`, `${(100 * s.coverage).toFixed(1)} %`];
  const sets = { revision: [] as ScoredPair[], heldOut: [] as ScoredPair[] };
  const rows: string[][] = [];
  for (const set of ['revision', 'heldOut'] as const)
    for (const run of PREDICTION_SPLIT[set]) {
      const pairs = scoredPairs(run, recordedRun(run.name));
      sets[set].push(...pairs);
      rows.push(row(`${set === 'heldOut' ? 'held out' : 'revision'}: ${run.name}`, scoreOf(pairs)));
    }
  console.log(`model ${MODEL_VERSION}: every recorded run of the split, each pair predicted from the other's measured demands`);
  printTable(['run', 'pairs', 'median |error|', 'largest', 'interval held'], rows, '  ');
  const revision = scoreOf(sets.revision);
  const heldOut = scoreOf(sets.heldOut);
  console.log('');
  printTable(['set', 'pairs', 'median |error|', 'largest', 'interval held'], [row('revision', revision), row('held out', heldOut)], '  ');
  console.log(
    `\n  held out over revision: median error x${(heldOut.medianAbsPct / revision.medianAbsPct).toFixed(2)}, coverage x${(heldOut.coverage / revision.coverage).toFixed(2)}` +
      ` (issue 29's goals on the held-out points: median <= 10 %, largest <= 25 %, coverage >= 80 %)`,
  );
}

if (require.main === module) main();
