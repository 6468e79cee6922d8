/** The regression verdict as a report section: the verdict, then per class the numbers it rests on. */
import type { Verdict } from '../../common/results/verdict';

const pct = (v: number | null | undefined): string => (v == null ? '–' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)} %`);
const share = (v: number | null | undefined): string => (v == null ? '–' : `${(v * 100).toFixed(1)} %`);
const tps = (v: number | null | undefined): string => (v == null ? '–' : v.toLocaleString('en-US', { maximumFractionDigits: 0 }));
const pValue = (p: number | null | undefined): string => (p == null ? '–' : p < 0.0001 ? p.toExponential(1) : p.toFixed(4));

export function verdictMarkdown(verdict: Verdict): string[] {
  const o = verdict.options;
  const level = `${Math.round((1 - o.alpha) * 100)} %`;
  // Verdicts written before the run was the unit (no `method`) lack the per-run fields: their cells show "–".
  const method = verdict.method
    ? `Method: the unit is the run: per cluster of a class, the median of its per-second TPS; a side's TPS is the geometric mean of those. ` +
      `A one-sided prediction t test over runs (on logs and on TPS; the larger p decides; df = baseline runs - 1) must give p < ${o.alpha}, ` +
      `the ${level} interval (hierarchical bootstrap: ${o.resamples} resamples of runs, then of blocks of seconds within each) must exclude no change, ` +
      `and the change must reach the minimum effect of ${Math.round(o.minEffect * 1000) / 10} %. ` +
      `Rank p is the exact Mann-Whitney p over runs, for reference: with one run it cannot go below 1/(baseline runs + 1). ` +
      `Baseline runs far outside the others are set aside (family-wise level ${o.outlierAlpha ?? '–'}).`
    : `Method (a verdict from before the run was the unit): two-level median of per-second TPS; ${level} bootstrap interval (${o.resamples} resamples of blocks of seconds within each run); Mann-Whitney U on the per-second samples; minimum effect ${Math.round(o.minEffect * 1000) / 10} %.`;
  const lines = [
    `## Regression verdict: **${verdict.verdict}**`,
    '',
    `Compared with ${verdict.baselineRunIds.length} ${verdict.pinned ? 'pinned ' : ''}baseline run${verdict.baselineRunIds.length === 1 ? '' : 's'} of the same preset and environment${verdict.baselineRunIds.length ? ` (${verdict.baselineRunIds.map((r) => `\`${r}\``).join(', ')})` : ''}.`,
    method,
    '',
    `| class | verdict | TPS (this run) | TPS (baseline) | effect | ${level} interval | p (t test) | rank p | drop that counts | n (runs / seconds) | baseline run-to-run CV | baseline range | baseline run medians |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of verdict.classes) {
    const spread = c.baseline.spread;
    lines.push(
      `| ${c.className} | ${c.verdict} | ${tps(c.candidate.geometricMeanTps ?? c.candidate.medianTps)} | ${tps(c.baseline.geometricMeanTps ?? c.baseline.medianTps)} | ${pct(c.effect)} | ${c.ci ? `[${pct(c.ci[0])}, ${pct(c.ci[1])}]` : '–'} | ${pValue(c.pValue)} | ${pValue(c.rankP)} | ${share(c.detectableDrop)} | ${c.candidate.runs} / ${c.candidate.samples} vs ${c.baseline.runs} / ${c.baseline.samples} | ${share(spread?.cv)} | ${spread ? `${tps(spread.min)}-${tps(spread.max)}` : '–'} | ${c.baseline.runMedians.map(tps).join(', ') || '–'} |`,
    );
  }
  lines.push('');
  for (const c of verdict.classes) lines.push(`- ${c.className}: ${c.reason}`);
  lines.push('');
  return lines;
}
