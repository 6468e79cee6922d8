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
/** The margins when every label fits them; a chart widens a margin (and so itself) for a label that does not. */
const MARGIN = { top: 34, right: 200, bottom: 46, left: 64 };
const FONT_SIZE = 12;
const TITLE_SIZE = 14;
/** Values above grouped bars. */
const VALUE_SIZE = 10;
/** Room above the plot for the values over its tallest bars, so they stay clear of the title. */
const VALUE_ROOM = 12;
const LEGEND_ROW = 18;
/** The legend starts this far right of the plot; its names this far right of their swatch. */
const LEGEND_GAP = 14;
const SWATCH = 18;
/** Category labels wider than their group are drawn at this angle, hanging from their tick. */
const CATEGORY_ANGLE = 35;

/**
 * Advance widths of DejaVu Sans and DejaVu Sans Bold for the printable ASCII characters (32-126), in thousandths
 * of the font size, read from the fonts' hmtx tables. DejaVu Sans is what `system-ui, sans-serif` resolves to on
 * Debian, and it is among the widest of the usual UI fonts: room measured with it holds in narrower ones.
 */
const DEJAVU_SANS = [
  318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838,
  838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390,
  337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
  525, 636, 337, 636, 838,
];
const DEJAVU_SANS_BOLD = [
  348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838,
  838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457,
  365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716, 712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652,
  582, 712, 365, 712, 838,
];
/** The same for the few other characters the reports use; anything else counts as a full em (the widest glyphs). */
const OTHER_WIDTHS: Record<string, number> = { '…': 1000, '÷': 838, '×': 838, '–': 500, '—': 1000, '°': 500, 'µ': 636, '·': 318 };

/** The width of a line of text in pixels, as DejaVu Sans sets it (without kerning, which only narrows it). */
export function textWidth(text: string, fontSize = FONT_SIZE, bold = false): number {
  const table = bold ? DEJAVU_SANS_BOLD : DEJAVU_SANS;
  let units = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    units += code >= 32 && code <= 126 ? table[code - 32] : (OTHER_WIDTHS[ch] ?? 1000);
  }
  return (units * fontSize) / 1000;
}

/** Where a chart's plot sits in its SVG: margins sized from its own labels, so each lies whole inside the box. */
interface Layout {
  width: number;
  height: number;
  top: number;
  right: number;
  bottom: number;
  left: number;
  plotRight: number;
  plotBottom: number;
}

/**
 * The layout of a chart: the plot keeps the size the frame's width and height give it with the default margins;
 * a margin grows where a label needs more (tick labels on the left, legend names on the right, category labels
 * below), and the plot grows taller for a legend longer than it and wider for a title longer than the chart.
 */
function layout(frame: Frame, labels: { yTicks: string[]; legend: string[]; bottom?: number; left?: number; top?: number }): Layout {
  const plotWidth = (frame.width ?? 760) - MARGIN.left - MARGIN.right;
  let plotHeight = (frame.height ?? 300) - MARGIN.top - MARGIN.bottom;
  // The y label (rotated, centred at x = 14) takes the first 20 px; the tick labels end 6 px left of the axis.
  const tickRoom = Math.max(0, ...labels.yTicks.map((t) => textWidth(t))) + 6 + (frame.yLabel ? 24 : 4);
  const left = Math.ceil(Math.max(MARGIN.left, tickRoom, labels.left ?? 0));
  const right = Math.ceil(Math.max(MARGIN.right, LEGEND_GAP + SWATCH + Math.max(0, ...labels.legend.map((t) => textWidth(t))) + 8));
  const bottom = Math.ceil(Math.max(MARGIN.bottom, labels.bottom ?? 0));
  plotHeight = Math.max(plotHeight, labels.legend.length * LEGEND_ROW - 6, frame.yLabel ? textWidth(frame.yLabel) + 8 : 0);
  const width = Math.ceil(Math.max(left + plotWidth + right, left + textWidth(frame.title, TITLE_SIZE, true) + 8));
  const top = MARGIN.top + (labels.top ?? 0);
  const height = Math.ceil(top + plotHeight + bottom);
  return { width, height, top, right, bottom, left, plotRight: width - right, plotBottom: height - bottom };
}

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

function open(frame: Frame, box: Layout): string[] {
  const { width, height } = box;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(frame.title)}" font-family="system-ui, sans-serif" font-size="${FONT_SIZE}">`,
    `<title>${escapeXml(frame.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${box.left}" y="20" font-size="${TITLE_SIZE}" font-weight="600">${escapeXml(frame.title)}</text>`,
  ];
}

/** The y axis with grid lines; returns the SVG and the value → y mapping. */
function yAxis(ticks: number[], box: Layout, frame: Frame): { svg: string[]; y: (v: number) => number } {
  const lo = ticks[0];
  const hi = ticks[ticks.length - 1];
  const y = (v: number) => box.plotBottom - ((v - lo) / (hi - lo || 1)) * (box.plotBottom - box.top);
  const fmt = frame.format ?? compact;
  const svg = ticks.map(
    (t) =>
      `<line x1="${box.left}" x2="${box.plotRight}" y1="${n(y(t))}" y2="${n(y(t))}" stroke="#e5e5e5"/>` +
      `<text x="${box.left - 6}" y="${n(y(t) + 4)}" text-anchor="end" fill="#555">${escapeXml(fmt(t))}</text>`,
  );
  svg.push(`<line x1="${box.left}" x2="${box.left}" y1="${box.top}" y2="${box.plotBottom}" stroke="#333"/>`);
  if (frame.yLabel)
    svg.push(
      `<text transform="translate(14 ${n((box.top + box.plotBottom) / 2)}) rotate(-90)" text-anchor="middle" fill="#333">${escapeXml(frame.yLabel)}</text>`,
    );
  return { svg, y };
}

/** The y axis's tick labels, as yAxis writes them (the layout measures them first). */
function tickLabels(ticks: number[], frame: Frame): string[] {
  return ticks.map(frame.format ?? compact);
}

/** One row per series, right of the plot, each name whole (the layout made the margin wide enough). */
function legend(names: string[], box: Layout): string[] {
  const x = box.plotRight + LEGEND_GAP;
  return names.map(
    (name, i) =>
      `<rect x="${x}" y="${box.top + i * LEGEND_ROW}" width="12" height="12" fill="${seriesColor(i)}"/>` +
      `<text x="${x + SWATCH}" y="${box.top + i * LEGEND_ROW + 10}">${escapeXml(name)}</text>`,
  );
}

/** A line per series over a shared linear x axis (seconds, for example); y starts at 0. */
export function lineChart(frame: Frame & { xLabel: string; series: LineSeries[] }): string {
  const points = frame.series.flatMap((s) => s.points);
  const legendNames = frame.series.map((s) => s.name);
  if (points.length === 0) {
    const box = layout(frame, { yTicks: [], legend: legendNames });
    return [...open(frame, box), noData(box), '</svg>'].join('\n');
  }
  const xs = points.map((p) => p.x);
  // Whole-number x values (seconds) get whole-number ticks.
  const whole = xs.every(Number.isInteger);
  const xTicks = niceTicks(Math.min(...xs), Math.max(...xs), 8).filter((t) => !whole || Number.isInteger(t));
  const yTicks = niceTicks(0, Math.max(...points.map((p) => p.y)), 5);
  const box = layout(frame, { yTicks: tickLabels(yTicks, frame), legend: legendNames });
  const { plotBottom } = box;
  const out = open(frame, box);
  const axis = yAxis(yTicks, box, frame);
  const x0 = xTicks[0];
  const x1 = xTicks[xTicks.length - 1];
  const x = (v: number) => box.left + ((v - x0) / (x1 - x0 || 1)) * (box.plotRight - box.left);
  out.push(...axis.svg);
  out.push(`<line x1="${box.left}" x2="${box.plotRight}" y1="${plotBottom}" y2="${plotBottom}" stroke="#333"/>`);
  for (const t of xTicks)
    out.push(`<text x="${n(x(t))}" y="${plotBottom + 16}" text-anchor="middle" fill="#555">${escapeXml(compact(t))}</text>`);
  out.push(`<text x="${n((box.left + box.plotRight) / 2)}" y="${box.height - 8}" text-anchor="middle" fill="#333">${escapeXml(frame.xLabel)}</text>`);
  frame.series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${n(x(p.x))} ${n(axis.y(p.y))}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${seriesColor(i)}" stroke-width="1.8"><title>${escapeXml(s.name)}</title></path>`);
  });
  out.push(...legend(legendNames, box), '</svg>');
  return out.join('\n');
}

/**
 * Bars per category: side by side per series (grouped), or one bar per category with the series stacked in it.
 * Each bar carries a tooltip; grouped bars and stack totals are labelled with their value.
 */
export function barChart(frame: Frame & { categories: string[]; series: BarSeries[]; stacked?: boolean }): string {
  const fmt = frame.format ?? compact;
  const legendNames = frame.series.map((s) => s.name);
  const value = (s: BarSeries, c: number) => Math.max(0, s.values[c] ?? 0);
  const tops = frame.categories.map((_, c) =>
    frame.stacked ? frame.series.reduce((sum, s) => sum + value(s, c), 0) : Math.max(0, ...frame.series.map((s) => value(s, c))),
  );
  const hasData = frame.series.some((s) => s.values.some((v) => v !== null));
  if (!hasData || frame.categories.length === 0) {
    const box = layout(frame, { yTicks: [], legend: legendNames });
    return [...open(frame, box), noData(box), '</svg>'].join('\n');
  }
  const yTicks = niceTicks(0, Math.max(...tops), 5);
  const categories = categoryLabels(frame.categories, ((frame.width ?? 760) - MARGIN.left - MARGIN.right) / frame.categories.length);
  const box = layout(frame, { yTicks: tickLabels(yTicks, frame), legend: legendNames, bottom: categories.bottom, left: categories.left, top: VALUE_ROOM });
  const { plotBottom } = box;
  const out = open(frame, box);
  const axis = yAxis(yTicks, box, frame);
  out.push(...axis.svg);
  out.push(`<line x1="${box.left}" x2="${box.plotRight}" y1="${plotBottom}" y2="${plotBottom}" stroke="#333"/>`);
  const group = (box.plotRight - box.left) / frame.categories.length;
  frame.categories.forEach((category, c) => {
    const left = box.left + c * group;
    out.push(categories.draw(category, left + group / 2, plotBottom));
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
      if (base > 0 && textWidth(fmt(base)) <= group)
        out.push(`<text x="${n(left + group / 2)}" y="${n(axis.y(base) - 4)}" text-anchor="middle" fill="#333">${escapeXml(fmt(base))}</text>`);
    } else {
      const barWidth = (group * 0.8) / frame.series.length;
      frame.series.forEach((s, i) => {
        const raw = s.values[c];
        if (raw === null || raw === undefined) return;
        const v = value(s, c);
        const bx = left + group * 0.1 + i * barWidth;
        out.push(
          `<rect x="${n(bx)}" y="${n(axis.y(v))}" width="${n(barWidth * 0.92)}" height="${n(plotBottom - axis.y(v))}" fill="${seriesColor(i)}"><title>${escapeXml(`${category}, ${s.name}: ${fmt(raw)}`)}</title></rect>`,
        );
        // A value wider than its bar's slot would run into the next one's: the bar's tooltip carries it instead.
        if (textWidth(fmt(raw), VALUE_SIZE) <= barWidth)
          out.push(`<text x="${n(bx + barWidth / 2)}" y="${n(axis.y(v) - 4)}" text-anchor="middle" font-size="${VALUE_SIZE}" fill="#333">${escapeXml(fmt(raw))}</text>`);
      });
    }
  });
  out.push(...legend(legendNames, box), '</svg>');
  return out.join('\n');
}

/**
 * How the category labels of a bar chart are set: level and centred under their group when the widest fits it,
 * else all at CATEGORY_ANGLE, ending at their group's centre; then the room they need below the plot and left of
 * it (the first one hangs towards the left edge).
 */
function categoryLabels(categories: string[], group: number): { bottom: number; left: number; draw: (text: string, x: number, plotBottom: number) => string } {
  const widest = Math.max(...categories.map((c) => textWidth(c)));
  if (widest <= group - 6)
    return {
      bottom: 0,
      left: 0,
      draw: (text, x, plotBottom) => `<text x="${n(x)}" y="${plotBottom + 16}" text-anchor="middle" fill="#333">${escapeXml(text)}</text>`,
    };
  const angle = (CATEGORY_ANGLE * Math.PI) / 180;
  // A line of 12 px text is about 14 px high; rotated, its height adds to both extents.
  const down = 10 + widest * Math.sin(angle) + 14 * Math.cos(angle);
  const across = widest * Math.cos(angle) + 14 * Math.sin(angle);
  return {
    bottom: down + 6,
    left: across - group / 2 + 4,
    draw: (text, x, plotBottom) => {
      const y = plotBottom + 12;
      return `<text x="${n(x + 4)}" y="${y}" text-anchor="end" transform="rotate(-${CATEGORY_ANGLE} ${n(x + 4)} ${y})" fill="#333">${escapeXml(text)}</text>`;
    },
  };
}

function noData(box: Layout): string {
  return `<text x="${box.width / 2}" y="${box.height / 2}" text-anchor="middle" fill="#888">no data measured</text>`;
}
