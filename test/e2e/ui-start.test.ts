/**
 * A person in the Temporal UI: Chromium opens the suite's dev-server UI, starts a `ci` experiment with the Start
 * Workflow form (the `ci` preset's gp3 class with a 20 s TPS window, on this lab's task queue), watches the run's "current
 * details" change on its User Metadata tab, sees the activity summaries in a cluster's event history and the run
 * completed, and leaves a screenshot in test-artifacts/. What it watches is sampled by reloading pages, which on a
 * loaded machine takes seconds: the TPS window is long enough that a cluster is seen in it whatever the load, and
 * what must not depend on sampling (every phase a cluster went through) is read from the cluster's own record.
 */
import { existsSync, statSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { clusterWorkflowId } from '../../workflows/cluster-workflow';
import { artifactPath, launchChromium, type Browser } from '../helpers/browser';
import { startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';

/**
 * The longest the test waits for the UI to show a thing; each wait ends as soon as it shows. With three test files at
 * once on 2 cores the cluster's history page took more than 15 s to list its activities.
 */
const UI_WAIT_MS = 60_000;
const PHASES = ['provision', 'configure', 'load', 'warmup', 'tps', 'vacuum', 'backlog', 'teardown', 'done'];
/**
 * The form's input: the ci preset's gp3 class alone, with a TPS window long enough to be seen by a person reloading
 * the page. One class is what the UI has to show; a second (local-disk) added a cluster and its 20 s of unpaced pgbench,
 * and every page the test reloaded while it ran: Chromium took 92 of the file's 182 machine CPU-seconds.
 */
const INPUT = '{"preset":"ci","storageClasses":{"local-disk":null},"compare":null,"workload":{"durationSeconds":20}}';

describe('start from the Temporal UI (browser, e2e)', () => {
  let lab: TestLab;
  let browser: Browser;
  const ui = process.env.STORAGE_LAB_TEST_UI;

  beforeAll(async () => {
    if (!ui) throw new Error('STORAGE_LAB_TEST_UI is not set: run through jest (global setup starts the UI)');
    lab = await startTestLab('ui');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await lab?.close();
  });

  const workflowPage = (id: string) => `${ui}/namespaces/default/workflows/${encodeURIComponent(id)}`;

  /** A workflow's run page (its latest run), `tab` as the UI's own tab links name it. */
  async function openRunTab(page: Page, id: string, tab: 'user-metadata' | 'history'): Promise<void> {
    const { runId } = await lab.client.workflow.getHandle(id).describe();
    await page.goto(`${workflowPage(id)}/${runId}/${tab}`, { waitUntil: 'domcontentloaded' });
  }

  /** The Markdown the UI shows as the workflow's current details (the iframe it renders them in). */
  /** What UI 2.54 puts in the details frame when its query for them got no answer. */
  const NO_DETAILS = 'No Current Details';

  async function currentDetails(page: Page, id: string): Promise<string> {
    // By its address (what the tab links to) rather than a click: under load the page re-renders while it loads.
    await openRunTab(page, id, 'user-metadata');
    const frame = page.locator('iframe[title="output"]');
    await frame.waitFor({ timeout: UI_WAIT_MS });
    // The frame is empty, then shows the placeholder, until the UI's query for the details is answered (a worker on
    // a loaded machine may take seconds); a query that gets no answer leaves the placeholder.
    const started = Date.now();
    for (;;) {
      const src = (await frame.getAttribute('src')) ?? '';
      const content = new URL(src, ui).searchParams.get('content') ?? '';
      if ((content && content !== NO_DETAILS) || Date.now() - started > 10_000) return content;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it('starts a ci experiment from the Start Workflow form and shows its progress until it completes', async () => {
    const { page } = browser;
    const workflowId = uniqueId('ui-exp');
    await page.goto(`${ui}/namespaces/default/workflows/start-workflow`, { waitUntil: 'networkidle' });
    // Each field is left with Tab: the form copies it into the URL on blur.
    for (const [field, value] of [
      ['workflowId', workflowId],
      ['taskQueue', lab.taskQueue],
      ['workflowType', WORKFLOW_TYPES.experiment],
    ]) {
      await page.getByTestId(field).fill(value);
      await page.getByTestId(field).press('Tab');
    }
    // The form looks the queue up: this lab's control worker polls it.
    await page.getByText('Task Queue is Active').waitFor({ timeout: UI_WAIT_MS });
    await page.locator('.cm-content[data-language="json"]').click();
    await page.keyboard.insertText(INPUT);
    // Leave the editor first: its blur re-renders the button, which would swallow a click that caused it.
    await page.getByTestId('start-workflow').click();
    await page.getByTestId('start-workflow-button').click();
    // The toast, and (UI 2.54) a link of the same words to the new run.
    await page.getByText('Workflow started successfully').first().waitFor({ timeout: UI_WAIT_MS });

    const handle = lab.client.workflow.getHandle(workflowId);
    const started = Date.now();
    for (;;) {
      const d = await handle.describe().catch(() => null);
      if (d) {
        expect(d.type).toBe(WORKFLOW_TYPES.experiment);
        expect(d.taskQueue).toBe(lab.taskQueue);
        break;
      }
      if (Date.now() - started > 20_000) throw new Error('the Start Workflow form did not start the workflow within 20 s');
      await new Promise((r) => setTimeout(r, 250));
    }

    // Watch the current details while it runs, as a person pressing refresh would: the experiment's page lists its
    // clusters (children) and their states; a cluster's page shows its phase and the phases before it, and its
    // pending activity's last heartbeat (percent, figures).
    const gp3 = clusterWorkflowId(workflowId, 'gp3', 0);
    const seen: string[] = [];
    const clusterSeen: string[] = [];
    let progressShot = '';
    let closed = false;
    const done = handle.result().finally(() => (closed = true));
    // The experiment's page every other round, and only until it showed the cluster running: a round reads each page
    // for up to 10 s on a loaded machine (a run beside this one at load average 27 made a round outlast the 20 s TPS
    // window, which no cluster read then saw), and with one cluster the experiment's details change no more until
    // the run closes (read once more below).
    const runningLine = `- **${hostIdFor(workflowId, 'gp3', 0)}** running · \`${gp3}\``;
    for (let round = 0; !closed; round++) {
      const wanted = round % 2 === 0 && !seen.some((d) => d.includes(runningLine));
      const details = wanted ? await currentDetails(page, workflowId).catch(() => '') : '';
      if (details && details !== NO_DETAILS && details !== seen.at(-1)) seen.push(details);
      // The cluster's page only once the cluster exists and runs (a page of no workflow has no details to wait for).
      const running = await lab.client.workflow.getHandle(gp3).describe().then((d) => d.status.name === 'RUNNING', () => false);
      const cluster = running ? await currentDetails(page, gp3).catch(() => '') : '';
      // The UI's placeholder when its query for the details got no answer: the cluster closed between the describe
      // above and the page's query (CI saw it as the last one), or the query timed out on a loaded machine.
      if (cluster && cluster !== NO_DETAILS && cluster !== clusterSeen.at(-1)) {
        clusterSeen.push(cluster);
        // One picture of a cluster mid-run as the UI shows it: its phases, and its running activity's heartbeat.
        if (/^- \*\*\S+\*\* tps/m.test(cluster) && !progressShot)
          await page.screenshot({ path: (progressShot = artifactPath(`ui-progress-${workflowId}.png`)), fullPage: true });
      }
      // A blank page between reads: the UI's page left open keeps rendering and polling, a core's worth of Chromium.
      await page.goto('about:blank');
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const summary = (await done) as { status: string };
    expect(summary.status).toBe('completed');
    // The experiment's page once more, closed: a person reloading it last sees its final details.
    const final = await currentDetails(page, workflowId).catch(() => '');
    if (final && final !== NO_DETAILS && final !== seen.at(-1)) seen.push(final);
    console.log(`UI run ${workflowId}: experiment details seen:\n${seen.join('\n---\n')}`);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen[0]).toMatch(new RegExp(`^\\*\\*Experiment ${workflowId}\\*\\*`));
    expect(seen.some((d) => d.includes(runningLine))).toBe(true);
    expect(seen.some((d) => /^\*\*Experiment \S+\*\*: [^·]+ · \d+(\.\d+)? %/.test(d))).toBe(true);
    const phasesSeen = new Set(
      clusterSeen.flatMap((d) => [...d.matchAll(/^- \*\*\S+\*\* ([\w ]+?)( ·|$)/gm)].map((m) => m[1]).filter((p) => PHASES.includes(p))),
    );
    // Seen while running, as a reload shows it: at least the TPS window.
    expect(phasesSeen.has('tps')).toBe(true);
    // The cluster's own record of its phases: every one it went through, not only those a refresh happened to see.
    expect(clusterSeen.at(-1)).toMatch(/after .*provision/);

    // A cluster's event history lists its activities with their summaries.
    await openRunTab(page, gp3, 'history');
    await page.getByText(/^provision gp3 host \S+-gp3-0: emulated-ebs at 3000 IOPS, 125 MiB\/s, 384 MiB$/).waitFor({ timeout: UI_WAIT_MS });
    await page.getByText(/^load scale 2: 200,000 rows in chunks of 20,000, 2 writers$/).waitFor({ timeout: UI_WAIT_MS });
    await page.getByText(/^tear down \S+-gp3-0$/).waitFor({ timeout: UI_WAIT_MS });

    await page.goto(workflowPage(workflowId), { waitUntil: 'networkidle' });
    await page.getByText('Completed', { exact: true }).first().waitFor({ timeout: UI_WAIT_MS });
    const screenshot = artifactPath(`ui-start-${workflowId}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(existsSync(screenshot) && statSync(screenshot).size > 10_000).toBe(true);
    console.log(`UI run ${workflowId}: ${seen.length} distinct experiment details, ${clusterSeen.length} of the gp3 cluster, phases seen ${[...phasesSeen].join(', ')}; screenshots ${screenshot} ${progressShot}`);

    expect(lab.leftovers([hostIdFor(workflowId, 'gp3', 0)])).toEqual([]);
    // The form's input was taken as typed: one class, so no local-disk cluster was started.
    expect(await lab.client.workflow.getHandle(clusterWorkflowId(workflowId, 'local-disk', 0)).describe().then(() => 'started', () => 'none')).toBe('none');
  });
});
