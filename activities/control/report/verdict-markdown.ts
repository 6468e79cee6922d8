/** The regression verdict as a report section: the verdict, then per class the numbers it rests on. */
import type { Verdict } from '../verdict';

const pct = (v: number | null): string => (v === null ? '–' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)} %`);
const tps = (v: number | null): string => (v === null ? '–' : v.toLocaleString('en-US', { maximumFractionDigits: 0 }));

export function verdictMarkdown(verdict: Verdict): string[] {
  const o = verdict.options;
  const lines = [
    `## Regression verdict: **${verdict.verdict}**`,
    '',
    `Compared with ${verdict.baselineRunIds.length} ${verdict.pinned ? 'pinned ' : ''}baseline run${verdict.baselineRunIds.length === 1 ? '' : 's'} of the same preset and environment${verdict.baselineRunIds.length ? ` (${verdict.baselineRunIds.map((r) => `\`${r}\``).join(', ')})` : ''}.`,
    `Method: two-level median of per-second TPS (median over runs of each run's median); ${Math.round((1 - o.alpha) * 100)} % bootstrap interval (${o.resamples} resamples of blocks of seconds within each run); Mann-Whitney U on the per-second samples; minimum effect ${Math.round(o.minEffect * 1000) / 10} %.`,
    '',
    '| class | verdict | median TPS (this run) | median TPS (baseline) | effect | interval | p (Mann-Whitney) | n (runs / seconds) | baseline run medians |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of verdict.classes)
    lines.push(
      `| ${c.className} | ${c.verdict} | ${tps(c.candidate.medianTps)} | ${tps(c.baseline.medianTps)} | ${pct(c.effect)} | ${c.ci ? `[${pct(c.ci[0])}, ${pct(c.ci[1])}]` : '–'} | ${c.pValue === null ? '–' : c.pValue < 0.0001 ? c.pValue.toExponential(1) : c.pValue.toFixed(4)} | ${c.candidate.runs} / ${c.candidate.samples} vs ${c.baseline.runs} / ${c.baseline.samples} | ${c.baseline.runMedians.map(tps).join(', ') || '–'} |`,
    );
  lines.push('');
  for (const c of verdict.classes) lines.push(`- ${c.className}: ${c.reason}`);
  lines.push('');
  return lines;
}
