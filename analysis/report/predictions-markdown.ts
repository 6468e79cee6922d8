/** The report's predictions: each class predicted (from the calibration class, from the previous run) beside what it measured. */
import type { PredictionRow, PredictionSet, RunPredictions } from '../../common/model/run-predictions';
import { PREDICTION_GOAL_PCT, rowComparison } from '../../common/model/run-predictions';
import { BASELINE_LABELS, comparisonLine, type BaselineName } from '../../common/model/baselines';
import { SOURCE_CHECK_NAME } from '../../common/model/predict';
import { matrixLines } from '../../common/model/matrix';
import { fmt } from '../../common/core/format';

const signed = (v: number | null) => (v === null || Number.isNaN(v) ? '–' : `${v >= 0 ? '+' : ''}${fmt(v, 1)} %`);
const ms = (a: number | null | undefined, b: number | null | undefined) => `${fmt(a, 2)} / ${fmt(b, 2)}`;

/** A baseline's TPS and its error, or "–" (none, or a result computed before the baselines existed). */
function baselineCell(r: PredictionRow, name: BaselineName): string {
  const b = r.baselines?.[name];
  return b && b.tps !== null ? `${fmt(b.tps, 0)} (${signed(b.errorPct)})` : '–';
}

function table(rows: PredictionRow[]): string[] {
  return [
    `| class | target | predicted TPS | measured TPS | TPS error | ${BASELINE_LABELS.capDivision} baseline TPS (error) | ${BASELINE_LABELS.clientScaling} baseline TPS (error) | predicted mean / p95 (ms) | measured mean / p95 (ms) | mean / p95 error | predicted bound |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) =>
      r.predicted
        ? `| ${r.className} | ${r.target} | ${fmt(r.predicted.tps, 0)} | ${fmt(r.measured?.tps, 0)} | ${signed(r.errorPct.tps)} | ${baselineCell(r, 'capDivision')} | ${baselineCell(r, 'clientScaling')} | ${ms(r.predicted.meanMs, r.predicted.p95Ms)} | ${ms(r.measured?.meanMs, r.measured?.p95Ms)} | ${signed(r.errorPct.mean)} / ${signed(r.errorPct.p95)} | ${r.predicted.bottleneck} |`
        : `| ${r.className} | ${r.target} | – | ${fmt(r.measured?.tps, 0)} | – | – | – | – | ${ms(r.measured?.meanMs, r.measured?.p95Ms)} | – | not predicted: ${r.problem?.replace(/\|/g, '\\|') ?? ''} |`,
    ),
    '',
  ];
}

function setLines(set: PredictionSet): string[] {
  const lines: string[] = [];
  if (set.from) lines.push(`From ${set.from}.`);
  if (set.sourceCheck) lines.push(`${capitalised(SOURCE_CHECK_NAME)}: ${set.sourceCheck.ok ? 'PASS' : '**FAIL**'}: ${set.sourceCheck.detail}.`);
  lines.push('');
  if (set.rows.length) lines.push(...table(set.rows));
  // Computed from the rows, so a result stored before the baselines existed shows none rather than a stale one.
  const comparison = rowComparison(set.rows);
  if (comparison) lines.push(`Against the baselines (docs/prediction-model.md): ${comparisonLine(comparison)}.`, '');
  if (set.notes.length) lines.push(...set.notes.map((n) => `- ${n}`), '');
  return lines;
}

const capitalised = (s: string) => s[0].toUpperCase() + s.slice(1);

export function predictionsMarkdown(p: RunPredictions): string[] {
  const lines: string[] = [];
  if (p.problem) lines.push('## Predictions', '', `**${p.problem}**`, '');
  if (p.calibration) {
    const rows = p.calibration.rows.filter((r) => r.errorPct.tps !== null);
    const worst = rows.reduce<PredictionRow | null>((w, r) => (w === null || Math.abs(r.errorPct.tps!) > Math.abs(w.errorPct.tps!) ? r : w), null);
    lines.push('## Predicted vs measured', '');
    lines.push(
      `Each class predicted from the calibration class's measured demands alone (common/model/predict.ts: a closed queueing model; docs/prediction-model.md), then measured by this run. Predictions computed ${p.computedAt}.`,
      '',
    );
    lines.push(...setLines(p.calibration));
    if (worst)
      lines.push(
        `Goal: every class's TPS within ±${PREDICTION_GOAL_PCT} %: ${Math.abs(worst.errorPct.tps!) <= PREDICTION_GOAL_PCT ? 'met' : `**missed**`} (largest error ${signed(worst.errorPct.tps)}, ${worst.className}).`,
        '',
      );
  }
  if (p.matrix) {
    lines.push('## Prediction matrix', '');
    lines.push(
      `Every class predicted from every other class's measured demands alone (leave-one-out: a target's own measurement never enters its prediction), beside both baselines, by model ${p.matrix.modelVersion}; computed ${p.computedAt}. docs/prediction-model.md says what each column means.`,
      '',
      '```text',
      ...matrixLines(p.matrix),
      '```',
      '',
    );
  }
  if (p.previousRun) {
    lines.push(`## Predicted from the previous run (\`${p.previousRun.runId}\`)`, '');
    lines.push(`What the lab would have predicted for this run from the previous run of the same preset and environment, class by class (computed ${p.computedAt}).`, '');
    for (const set of p.previousRun.sets) lines.push(...setLines(set));
  }
  return lines;
}
