/**
 * Small SVG charts rendered from data in Node: no browser, no canvas, no dependency (vega 6 is ESM-only and the
 * lab runs as CommonJS). Line charts with axes, grouped and stacked bar charts, each with a title and a legend.
 * Pure string builders, unit-tested.
 */

export interface LineSeries {
  name: string;
  points: { x: number; y: number }[];
}

export interface BarSeries {
  name: string;
  /** One value per category; null leaves a gap. */
  values: (number | null)[];
}

interface Frame {
  title: string;
  width?: number;
  height?: number;
  yLabel?: string;
  /** Formats values on the axis and on the bars. */
  format?: (v: number) => string;
}

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
const MARGIN = { top: 34, right: 200, bottom: 46, left: 64 };

/** The colour of the i-th series. */
export function seriesColor(i: number): string {
  return PALETTE[i % PALETTE.length];
}

/** Escapes text for SVG and HTML. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Round tick values covering [min, max]: steps of 1, 2 or 5 × 10^n, about `count` of them. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0];
  if (max <= min) max = min + (min === 0 ? 1 : Math.abs(min));
  const raw = (max - min) / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  // A hair of tolerance, so a sum of shares that lands on 100.00000000001 does not jump to the next step.
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw * (1 - 1e-9))!;
  const ticks: number[] = [];
  for (let v = Math.floor(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1] < max - step * 1e-9) ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)));
  return ticks;
}

/** A compact number: 1,734 / 36.9 / 0.25 / 12k. */
export function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 10_000) return `${Number((v / 1000).toPrecision(3))}k`;
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  if (a >= 10) return (Math.round(v * 10) / 10).toString();
  return Number(v.toPrecision(2)).toString();
}

const n = (v: number) => (Math.round(v * 10) / 10).toString();

function open(frame: Frame, width: number, height: number): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(frame.title)}" font-family="system-ui, sans-serif" font-size="12">`,
    `<title>${escapeXml(frame.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${MARGIN.left}" y="20" font-size="14" font-weight="600">${escapeXml(frame.title)}</text>`,
  ];
}

/** The y axis with grid lines; returns the SVG and the value → y mapping. */
function yAxis(ticks: number[], plotTop: number, plotBottom: number, width: number, frame: Frame): { svg: string[]; y: (v: number) => number } {
  const lo = ticks[0];
  const hi = ticks[ticks.length - 1];
  const y = (v: number) => plotBottom - ((v - lo) / (hi - lo || 1)) * (plotBottom - plotTop);
  const fmt = frame.format ?? compact;
  const svg = ticks.map(
    (t) =>
      `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${n(y(t))}" y2="${n(y(t))}" stroke="#e5e5e5"/>` +
      `<text x="${MARGIN.left - 6}" y="${n(y(t) + 4)}" text-anchor="end" fill="#555">${escapeXml(fmt(t))}</text>`,
  );
  svg.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${plotTop}" y2="${plotBottom}" stroke="#333"/>`);
  if (frame.yLabel)
    svg.push(
      `<text transform="translate(14 ${n((plotTop + plotBottom) / 2)}) rotate(-90)" text-anchor="middle" fill="#333">${escapeXml(frame.yLabel)}</text>`,
    );
  return { svg, y };
}

function legend(names: string[], width: number): string[] {
  const x = width - MARGIN.right + 14;
  return names.map(
    (name, i) =>
      `<rect x="${x}" y="${MARGIN.top + i * 18}" width="12" height="12" fill="${seriesColor(i)}"/>` +
      `<text x="${x + 18}" y="${MARGIN.top + i * 18 + 10}">${escapeXml(truncate(name, 28))}</text>`,
  );
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A line per series over a shared linear x axis (seconds, for example); y starts at 0. */
export function lineChart(frame: Frame & { xLabel: string; series: LineSeries[] }): string {
  const width = frame.width ?? 760;
  const height = frame.height ?? 300;
  const plotBottom = height - MARGIN.bottom;
  const points = frame.series.flatMap((s) => s.points);
  const out = open(frame, width, height);
  if (points.length === 0) return [...out, noData(width, height), '</svg>'].join('\n');
  const xs = points.map((p) => p.x);
  // Whole-number x values (seconds) get whole-number ticks.
  const whole = xs.every(Number.isInteger);
  const xTicks = niceTicks(Math.min(...xs), Math.max(...xs), 8).filter((t) => !whole || Number.isInteger(t));
  const yTicks = niceTicks(0, Math.max(...points.map((p) => p.y)), 5);
  const axis = yAxis(yTicks, MARGIN.top, plotBottom, width, frame);
  const x0 = xTicks[0];
  const x1 = xTicks[xTicks.length - 1];
  const x = (v: number) => MARGIN.left + ((v - x0) / (x1 - x0 || 1)) * (width - MARGIN.left - MARGIN.right);
  out.push(...axis.svg);
  out.push(`<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${plotBottom}" y2="${plotBottom}" stroke="#333"/>`);
  for (const t of xTicks)
    out.push(`<text x="${n(x(t))}" y="${plotBottom + 16}" text-anchor="middle" fill="#555">${escapeXml(compact(t))}</text>`);
  out.push(`<text x="${n((MARGIN.left + width - MARGIN.right) / 2)}" y="${height - 8}" text-anchor="middle" fill="#333">${escapeXml(frame.xLabel)}</text>`);
  frame.series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${n(x(p.x))} ${n(axis.y(p.y))}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${seriesColor(i)}" stroke-width="1.8"><title>${escapeXml(s.name)}</title></path>`);
  });
  out.push(...legend(frame.series.map((s) => s.name), width), '</svg>');
  return out.join('\n');
}

/**
 * Bars per category: side by side per series (grouped), or one bar per category with the series stacked in it.
 * Each bar carries a tooltip; grouped bars and stack totals are labelled with their value.
 */
export function barChart(frame: Frame & { categories: string[]; series: BarSeries[]; stacked?: boolean }): string {
  const width = frame.width ?? 760;
  const height = frame.height ?? 300;
  const plotBottom = height - MARGIN.bottom;
  const fmt = frame.format ?? compact;
  const out = open(frame, width, height);
  const value = (s: BarSeries, c: number) => Math.max(0, s.values[c] ?? 0);
  const tops = frame.categories.map((_, c) =>
    frame.stacked ? frame.series.reduce((sum, s) => sum + value(s, c), 0) : Math.max(0, ...frame.series.map((s) => value(s, c))),
  );
  const hasData = frame.series.some((s) => s.values.some((v) => v !== null));
  if (!hasData || frame.categories.length === 0) return [...out, noData(width, height), '</svg>'].join('\n');
  const axis = yAxis(niceTicks(0, Math.max(...tops), 5), MARGIN.top, plotBottom, width, frame);
  out.push(...axis.svg);
  out.push(`<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${plotBottom}" y2="${plotBottom}" stroke="#333"/>`);
  const group = (width - MARGIN.left - MARGIN.right) / frame.categories.length;
  frame.categories.forEach((category, c) => {
    const left = MARGIN.left + c * group;
    out.push(`<text x="${n(left + group / 2)}" y="${plotBottom + 16}" text-anchor="middle" fill="#333">${escapeXml(truncate(category, Math.max(8, Math.floor(group / 6))))}</text>`);
    if (frame.stacked) {
      const barWidth = group * 0.6;
      let base = 0;
      frame.series.forEach((s, i) => {
        const v = value(s, c);
        if (v <= 0) return;
        const yTop = axis.y(base + v);
        out.push(
          `<rect x="${n(left + (group - barWidth) / 2)}" y="${n(yTop)}" width="${n(barWidth)}" height="${n(axis.y(base) - yTop)}" fill="${seriesColor(i)}"><title>${escapeXml(`${category}, ${s.name}: ${fmt(v)}`)}</title></rect>`,
        );
        base += v;
      });
      if (base > 0) out.push(`<text x="${n(left + group / 2)}" y="${n(axis.y(base) - 4)}" text-anchor="middle" fill="#333">${escapeXml(fmt(base))}</text>`);
    } else {
      const barWidth = (group * 0.8) / frame.series.length;
      frame.series.forEach((s, i) => {
        const raw = s.values[c];
        if (raw === null || raw === undefined) return;
        const v = value(s, c);
        const bx = left + group * 0.1 + i * barWidth;
        out.push(
          `<rect x="${n(bx)}" y="${n(axis.y(v))}" width="${n(barWidth * 0.92)}" height="${n(plotBottom - axis.y(v))}" fill="${seriesColor(i)}"><title>${escapeXml(`${category}, ${s.name}: ${fmt(raw)}`)}</title></rect>`,
          `<text x="${n(bx + barWidth / 2)}" y="${n(axis.y(v) - 4)}" text-anchor="middle" font-size="10" fill="#333">${escapeXml(fmt(raw))}</text>`,
        );
      });
    }
  });
  out.push(...legend(frame.series.map((s) => s.name), width), '</svg>');
  return out.join('\n');
}

function noData(width: number, height: number): string {
  return `<text x="${width / 2}" y="${height / 2}" text-anchor="middle" fill="#888">no data measured</text>`;
}
