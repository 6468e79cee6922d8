/**
 * report.html's charts as a reader's browser draws them: Debian's Chromium renders the report of every recorded
 * result (test/fixtures/results) and of one of them with each storage class renamed to the longest name a spec
 * allows (20 characters), and every text element of every chart must lie inside its SVG's box, in full (no label
 * cut short with an ellipsis), no two level labels of a chart may overlap, and the console must stay free of errors.
 * The demo's report had 3 legend labels past its charts' right edge. No server: the page is a file.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { renderHtml } from '../../analysis/report/html';
import { BREAKDOWN_LABELS } from '../../common/results/breakdown';
import type { ExperimentResult } from '../../common/results/result';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { artifactPath, launchChromium, type Browser } from '../helpers/browser';

const RESULTS = path.join(PROJECT_ROOT, 'test', 'fixtures', 'results');

/** A text element of a chart, where the browser drew it, and its SVG's box (CSS pixels). */
interface DrawnText {
  chart: string;
  text: string;
  /** Drawn at an angle (the y axis's label, category labels too wide to lie level): its box is not its outline. */
  turned: boolean;
  box: { left: number; right: number; top: number; bottom: number };
  svg: { left: number; right: number; top: number; bottom: number };
}

/**
 * Run in the page (a string: the suite compiles without the DOM's types): each chart's SVG and text elements as
 * the browser laid them out.
 */
const MEASURE_CHARTS = `(() => {
  const rect = (r) => ({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
  const svgs = [...document.querySelectorAll('.charts svg')];
  return {
    charts: svgs.length,
    texts: svgs.flatMap((svg) => [...svg.querySelectorAll('text')].map((t) => ({
      chart: svg.getAttribute('aria-label') || '',
      text: t.textContent || '',
      turned: Boolean(t.getAttribute('transform')),
      box: rect(t.getBoundingClientRect()),
      svg: rect(svg.getBoundingClientRect()),
    }))),
  };
})()`;

/** A result with each storage class renamed to a 20-character name (the spec's longest), everywhere it appears. */
function withLongestClassNames(result: ExperimentResult): ExperimentResult {
  let text = JSON.stringify(result);
  Object.keys(result.classes).forEach((name, i) => {
    const long = `${name}-${'x'.repeat(20)}`.slice(0, 18) + String(i).padStart(2, '0');
    text = text.split(`"${name}"`).join(`"${long}"`);
  });
  return JSON.parse(text) as ExperimentResult;
}

/** The texts that lie outside their SVG's box, beyond half a pixel of rounding. */
function outsideTheirChart(texts: DrawnText[]): string[] {
  const px = (v: number) => Math.round(v);
  return texts
    .filter(({ box, svg }) => box.left < svg.left - 0.5 || box.right > svg.right + 0.5 || box.top < svg.top - 0.5 || box.bottom > svg.bottom + 0.5)
    .map(
      ({ chart, text, box, svg }) =>
        `"${chart}": "${text}" spans x ${px(box.left - svg.left)}..${px(box.right - svg.left)}, y ${px(box.top - svg.top)}..${px(box.bottom - svg.top)} of ${px(svg.right - svg.left)} x ${px(svg.bottom - svg.top)}`,
    );
}

/** Pairs of level texts of one chart that overlap by more than a pixel each way (one would hide the other). */
function overlapping(texts: DrawnText[]): string[] {
  const level = texts.filter((t) => !t.turned);
  const out: string[] = [];
  level.forEach((a, i) =>
    level.slice(i + 1).forEach((b) => {
      const across = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
      const down = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
      if (a.chart === b.chart && across > 1 && down > 1) out.push(`"${a.chart}": "${a.text}" and "${b.text}"`);
    }),
  );
  return out;
}

describe("report.html's charts in a browser (integration)", () => {
  let browser: Browser;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-report-charts-'));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Opens a result's report.html; returns every chart text as drawn and the console's errors. */
  async function draw(name: string, result: ExperimentResult): Promise<{ charts: number; texts: DrawnText[]; errors: string[] }> {
    const file = path.join(dir, `${name}.html`);
    writeFileSync(file, renderHtml(result));
    const { page } = browser;
    const errors: string[] = [];
    const onConsole = (m: { type(): string; text(): string }) => void (m.type() === 'error' && errors.push(m.text()));
    const onError = (e: Error) => void errors.push(e.message);
    page.on('console', onConsole);
    page.on('pageerror', onError);
    try {
      await page.goto(`file://${file}`, { waitUntil: 'load' });
      const drawn = (await page.evaluate(MEASURE_CHARTS)) as { charts: number; texts: DrawnText[] };
      return { ...drawn, errors };
    } finally {
      page.off('console', onConsole);
      page.off('pageerror', onError);
    }
  }

  const fixtures = readdirSync(RESULTS).filter((f) => f.endsWith('.json'));
  const read = (file: string) => JSON.parse(readFileSync(path.join(RESULTS, file), 'utf8')) as ExperimentResult;

  it('finds the recorded results', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(5);
  });

  it.each(fixtures)('%s: every chart text inside its SVG, in full, and no console error', async (file) => {
    const { charts, texts, errors } = await draw(path.basename(file, '.json'), read(file));
    expect(charts).toBeGreaterThanOrEqual(6);
    expect(texts.length).toBeGreaterThan(100);
    expect(outsideTheirChart(texts)).toEqual([]);
    expect(overlapping(texts)).toEqual([]);
    expect(texts.filter((t) => t.text.includes('…')).map((t) => `"${t.chart}": "${t.text}"`)).toEqual([]);
    // The latency breakdown's legend names its parts in full.
    for (const label of Object.values(BREAKDOWN_LABELS)) expect(texts.map((t) => t.text)).toContain(label);
    expect(errors).toEqual([]);
  });

  it('the same with every storage class named as long as a spec allows', async () => {
    const result = withLongestClassNames(read('predict-matrix-1.json'));
    const names = Object.keys(result.classes);
    expect(names.every((n) => n.length === 20)).toBe(true);
    const { texts, errors } = await draw('longest-names', result);
    await browser.page.locator('.charts').screenshot({ path: artifactPath('report-charts-longest-names.png') });
    expect(outsideTheirChart(texts)).toEqual([]);
    expect(overlapping(texts)).toEqual([]);
    expect(texts.filter((t) => t.text.includes('…')).map((t) => `"${t.chart}": "${t.text}"`)).toEqual([]);
    const drawnTexts = new Set(texts.map((t) => t.text));
    for (const name of names) expect(drawnTexts.has(name) || drawnTexts.has(`${name}-0 reads`)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('these checks catch a label past the edge of its chart, and two labels on top of each other', () => {
    const svg = { left: 0, right: 760, top: 0, bottom: 300 };
    const text = (t: string, box: DrawnText['box'], turned = false): DrawnText => ({ chart: 'c', text: t, turned, box, svg });
    // As the demo's report drew them: two of the legend labels it had past the right edge, and one of the IOPS chart's.
    const inside = text('in', { left: 600, right: 760.4, top: 30, bottom: 44 });
    const past = text('page reads (IO:DataFileRead)', { left: 592, right: 768, top: 33, bottom: 47 });
    const below = text('gp3-30000-0 writes', { left: 592, right: 710, top: 303, bottom: 317 });
    expect(outsideTheirChart([inside])).toEqual([]);
    expect(outsideTheirChart([inside, past, below])).toEqual([
      '"c": "page reads (IO:DataFileRead)" spans x 592..768, y 33..47 of 760 x 300',
      '"c": "gp3-30000-0 writes" spans x 592..710, y 303..317 of 760 x 300',
    ]);
    // As the old latency chart drew two values over neighbouring bars; turned labels are not compared by their boxes.
    const value = text('15.7', { left: 100, right: 117, top: 200, bottom: 212 });
    const next = text('21.6', { left: 114.6, right: 131.6, top: 205, bottom: 217 });
    expect(overlapping([value, text('1.9', { left: 118, right: 130, top: 200, bottom: 212 })])).toEqual([]);
    expect(overlapping([value, next])).toEqual(['"c": "15.7" and "21.6"']);
    expect(overlapping([value, { ...next, turned: true }])).toEqual([]);
  });
});
