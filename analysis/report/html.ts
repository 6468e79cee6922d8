/**
 * report.html: one self-contained file (inline CSS and SVG, no scripts, nothing fetched) with the charts
 * (speedup by job vs the reference, TPS per second per cluster, latency percentiles per class, the latency breakdown
 * vs the reference, wait-event shares, device IOPS) and every table of report.md, converted, so both show the same.
 */
import { BREAKDOWN_KEYS, BREAKDOWN_LABELS } from '../../common/results/breakdown';
import { REFERENCE } from '../../common/results/reference';
import { comparedPhases } from '../../common/phases/registry';
import type { ExperimentResult } from '../../common/results/result';
import type { RunPredictions } from '../../common/model/run-predictions';
import { topEvents } from './sampler-markdown';
import { renderMarkdown } from './markdown';
import { referenceBreakdown } from './summary';
import { barChart, escapeXml, lineChart, type BarSeries } from './svg-charts';

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; line-height: 1.45; padding: 0 1rem; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
code { background: #f3f3f3; padding: 0 0.2rem; }
.charts { display: grid; grid-template-columns: 1fr; gap: 1rem; }
.charts figure { margin: 0; border: 1px solid #eee; padding: 0.5rem; }
.charts svg { max-width: 100%; height: auto; }
.charts figcaption { font-size: 0.85rem; color: #555; }
li.FAIL { color: #b00020; } li.WARN { color: #8a5a00; }
`;

/** A chart with its caption, as the reports' chart grid holds it. */
export function chartFigure(svg: string, caption: string): string {
  return `<figure>${svg}<figcaption>${escapeXml(caption)}</figcaption></figure>`;
}

/** The charts, each with a caption that says where its figures come from. */
export function renderCharts(result: ExperimentResult): string[] {
  const figures: string[] = [];
  const figure = (svg: string, caption: string) => figures.push(chartFigure(svg, caption));
  const classes = Object.entries(result.classes);
  const compare = result.compare;

  if (compare) {
    const jobs: [string, string, number | null][] = [
      ['throughput', 'tps', REFERENCE.ratios.tps],
      ['latency', 'latency', REFERENCE.ratios.latency],
      ...comparedPhases().map((p): [string, string, number | null] => [p.label, p.ratioKey, p.reference?.ratio ?? null]),
    ];
    figure(
      barChart({
        title: `Speedup of ${compare.candidate} over ${compare.baseline} by job`,
        yLabel: 'speedup (x)',
        categories: jobs.map(([label]) => label),
        series: [
          { name: 'this run', values: jobs.map(([, key]) => result.ratios[key] ?? null) },
          { name: 'reference (NVMe over gp3)', values: jobs.map(([, , ref]) => ref) },
        ],
        format: (v) => `${Number(v.toPrecision(3))}x`,
      }),
      'Candidate over baseline: TPS ratio; latency and each phase as baseline time over candidate time. Reference: POSETTE 2026.',
    );
  }

  const clusters = classes.flatMap(([, c]) => c.clusters);
  // Host ids start with the run's tag; class and index tell the clusters apart on a chart.
  const label = (c: (typeof clusters)[number]) => `${c.className}-${c.index}`;
  figure(
    lineChart({
      title: 'Throughput per second of the TPS run',
      xLabel: 'second',
      yLabel: 'TPS',
      series: clusters.map((c) => ({ name: label(c), points: (c.tpsRun?.tpsSeries ?? []).map((y, i) => ({ x: i + 1, y })) })),
    }),
    'pgbench -P 1 progress lines, one line per cluster.',
  );

  const percentiles = ['mean', 'p50', 'p95', 'p99'] as const;
  figure(
    barChart({
      title: 'Transaction latency per class (ms)',
      yLabel: 'ms',
      categories: [...percentiles],
      series: classes.map(([name, c]) => ({ name, values: percentiles.map((p) => c.latencyMs?.[p] ?? null) })),
    }),
    'From pgbench per-transaction logs; medians across the clusters of each class.',
  );

  if (compare) {
    const bars = [
      { label: `${compare.baseline} (this run)`, b: result.classes[compare.baseline]?.breakdownMs },
      { label: `${compare.candidate} (this run)`, b: result.classes[compare.candidate]?.breakdownMs },
      { label: 'gp3 (reference)', b: referenceBreakdown('baseline') },
      { label: 'NVMe (reference)', b: referenceBreakdown('candidate') },
    ];
    figure(
      barChart({
        title: 'Latency per transaction, broken down (ms)',
        yLabel: 'ms per transaction',
        categories: bars.map((x) => x.label),
        series: BREAKDOWN_KEYS.map((k) => ({ name: BREAKDOWN_LABELS[k], values: bars.map((x) => x.b?.[k] ?? null) })),
        stacked: true,
      }),
      'Mean latency apportioned by sampled wait-event shares of active pgbench backends; the reference has no "other" part.',
    );
  }

  const sampled = classes.filter(([, c]) => c.waitEventShares);
  const events = [...new Set(sampled.flatMap(([, c]) => topEvents(c.waitEventShares, 6).map(([e]) => e)))];
  const eventSeries: BarSeries[] = events.map((e) => ({ name: e, values: sampled.map(([, c]) => 100 * (c.waitEventShares?.[e] ?? 0)) }));
  eventSeries.push({
    name: 'other events',
    values: sampled.map(([, c]) => 100 * Object.entries(c.waitEventShares ?? {}).reduce((s, [e, v]) => s + (events.includes(e) ? 0 : v), 0)),
  });
  figure(
    barChart({
      title: 'Wait events of active backends (% of samples)',
      yLabel: '% of active samples',
      categories: sampled.map(([name]) => name),
      series: eventSeries,
      stacked: true,
      format: (v) => `${Math.round(v)} %`,
    }),
    'Active-session-history samples of the pgbench backends during the TPS run ("CPU": active with no wait event).',
  );

  const predicted = (result.predictions as RunPredictions | undefined)?.calibration?.rows.filter((r) => r.predicted);
  if (predicted?.length)
    figure(
      barChart({
        title: 'Predicted vs measured TPS per class',
        yLabel: 'TPS',
        categories: predicted.map((r) => r.className),
        series: [
          { name: 'predicted', values: predicted.map((r) => r.predicted!.tps) },
          { name: 'measured', values: predicted.map((r) => r.measured?.tps ?? null) },
          // The baselines the model must beat, where the result has them (docs/prediction-model.md).
          ...(predicted.some((r) => r.baselines)
            ? [{ name: 'cap ÷ I/O baseline', values: predicted.map((r) => r.baselines?.capDivision.tps ?? null) }]
            : []),
        ],
      }),
      'Each class predicted from the calibration class\'s measured demands alone, then measured by this run (see "Predicted vs measured"); beside it the cap ÷ I/O baseline (the tightest cap ÷ the calibration class\'s I/O per transaction). The clients × TPS baseline is in the table: on these classes it is the calibration class\'s own TPS.',
    );

  figure(
    lineChart({
      title: 'Device IOPS per second during the TPS run',
      xLabel: 'second',
      yLabel: 'IOPS',
      series: clusters.flatMap((c) =>
        (['readIops', 'writeIops'] as const).map((key) => ({
          name: `${label(c)} ${key === 'readIops' ? 'reads' : 'writes'}`,
          points: (c.diagnostics?.series ?? []).flatMap((s) => (s[key] === null ? [] : [{ x: s.second, y: s[key]! }])),
        })),
      ),
    }),
    '/proc/diskstats of each host\'s data device; an emulated gp3 volume whose reads reach the device should sit at its IOPS cap.',
  );
  return figures;
}

/** Converts the Markdown the lab writes (headings, pipe tables, lists, paragraphs, `code`, **bold**) to HTML. */
export function markdownToHtml(markdown: string): string {
  const inline = (text: string) =>
    escapeXml(text)
      .replace(/`([^`]+)`/g, '<code>$1</code>')
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  const cells = (row: string) =>
    row
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  const out: string[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const heading = /^(#{1,4}) (.*)$/.exec(line);
    if (heading) {
      out.push(`<h${heading[1].length}>${inline(heading[2])}</h${heading[1].length}>`);
    } else if (line.startsWith('|')) {
      const rows: string[] = [];
      while (i < lines.length && lines[i].startsWith('|')) rows.push(lines[i++]);
      i--;
      const [head, , ...body] = rows;
      out.push(
        '<table>',
        `<tr>${cells(head).map((c) => `<th>${inline(c)}</th>`).join('')}</tr>`,
        ...body.map((r) => `<tr>${cells(r).map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`),
        '</table>',
      );
    } else if (line.startsWith('- ')) {
      const items: string[] = [];
      while (i < lines.length && lines[i].startsWith('- ')) items.push(lines[i++].slice(2));
      i--;
      const verdict = (item: string) => /^\*\*(FAIL|WARN)\*\*/.exec(item)?.[1] ?? 'PASS';
      out.push('<ul>', ...items.map((it) => `<li class="${verdict(it)}">${inline(it)}</li>`), '</ul>');
    } else if (line.trim()) {
      out.push(`<p>${inline(line)}</p>`);
    }
  }
  return out.join('\n');
}

export function renderHtml(result: ExperimentResult): string {
  const markdown = renderMarkdown(result);
  // The charts go right after the summary table, before the per-class and per-cluster tables.
  return htmlPage(`Storage Lab report: ${result.name} (${result.runId})`, markdown, '\n## Storage classes', renderCharts(result));
}

/**
 * One self-contained page in the reports' style: the Markdown converted, with the charts (SVG figures) placed
 * before the heading `chartsBefore` (at the end when it is absent).
 */
export function htmlPage(title: string, markdown: string, chartsBefore: string, charts: string[]): string {
  const split = markdown.indexOf(chartsBefore);
  const head = split >= 0 ? markdown.slice(0, split) : markdown;
  const rest = split >= 0 ? markdown.slice(split) : '';
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<title>${escapeXml(title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    markdownToHtml(head),
    '<h2>Charts</h2>',
    '<div class="charts">',
    ...charts,
    '</div>',
    markdownToHtml(rest),
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
