/**
 * The partition drill for real: host agents, PostgreSQL 15 with synchronous_standby_names = ANY 1, a writer on its own
 * host, and nftables rules that cut the primary off its standbys while it runs on. Three partitions in a row (ten
 * with STORAGE_LAB_LONG_TESTS=1): the old primary acknowledges no commit the new one lacks, no acknowledged commit is
 * lost, and each old primary is fenced (a write to it after the heal is not acknowledged), rewound and streaming
 * again. With the async test seam (every host writes synchronous_standby_names = '', which no spec can ask for) the
 * same drill sees the old primary acknowledge commits after the cut, names them, and fails. With the writer cut off too, it still moves to the new
 * primary. A drill cancelled during a cut removes its rules and its hosts; one terminated there leaves them, and
 * `storage-lab sweep` removes both.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import type { PartitionDrillResult } from '../../common/results/drill-result';
import { backupsDirFor } from '../../lib/lab-paths';
import { CUT_TABLE_PREFIX, labCutTag, listCutTables } from '../../lib/network-cut';
import { runFolderName } from '../../lib/results-store';
import { startTestLab, type TestLab } from '../helpers/lab';
import { whereItIs } from '../helpers/faults';
import { serverAddress, uniqueId } from '../helpers/temporal';

const run = promisify(execFile);
const CLI = path.join(__dirname, '..', '..', 'client', 'cli.js');

/**
 * Three partitions in a row prove what ten do (each round cuts off the primary the round before promoted, and the
 * counts are exact per round) at under a third of the time; the ten-partition run is opt-in:
 * STORAGE_LAB_LONG_TESTS=1 (docs/benchmarks.md, "Test suite").
 */
const ROUNDS = process.env.STORAGE_LAB_LONG_TESTS === '1' ? 10 : 3;

const hostsOf = (runId: string) => [hostIdFor(runId, 'client', 0), ...[1, 2, 3].map((i) => hostIdFor(runId, 'node', i))];
/** The cut tables this lab has on the machine. */
const tablesOf = (lab: TestLab) => listCutTables(`${CUT_TABLE_PREFIX}${labCutTag(lab.paths.hostsDir)}_`);

async function drill(lab: TestLab, input: Record<string, unknown>) {
  const workflowId = uniqueId('partition-drill');
  const handle = await lab.client.workflow.start(WORKFLOW_TYPES.partitionDrill, { taskQueue: lab.taskQueue, workflowId, args: [input] });
  const outcome = await handle.result().then(
    (v) => v as unknown,
    (e) => e as unknown,
  );
  const folder = path.join(lab.paths.resultsDir, runFolderName(workflowId));
  const result = JSON.parse(readFileSync(path.join(folder, 'result.json'), 'utf8')) as PartitionDrillResult;
  return { workflowId, outcome, result, report: readFileSync(path.join(folder, 'report.md'), 'utf8') };
}

async function nothingLeft(lab: TestLab, workflowId: string): Promise<void> {
  expect(lab.leftovers(hostsOf(workflowId))).toEqual([]);
  expect(await tablesOf(lab)).toEqual([]);
  expect(existsSync(path.join(backupsDirFor(lab.paths.hostsDir), runFolderName(workflowId)))).toBe(false);
}

describe('partition drill under ANY 1 (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('partition');
  });
  afterAll(async () => {
    await lab?.close();
  });

  it(`${ROUNDS} partitions in a row: 0 split-brain commits, 0 acknowledged commits lost, each old primary fenced, rewound and streaming`, async () => {
    const { workflowId, outcome, result, report } = await drill(lab, { preset: 'ci', rounds: ROUNDS, backup: { enabled: false } });
    expect(result.verdict).toMatch(new RegExp(`^passed: ${ROUNDS} partitions, 0 split-brain commits acknowledged, 0 acknowledged commits lost`));
    expect(outcome).toMatchObject({ status: 'passed', kind: 'partition-drill', figures: { rounds: ROUNDS, splitBrainCommits: 0, lostCommits: 0 } });
    expect(result.synchronousStandbyNames).toBe('ANY 1 (n2, n3)');
    expect(result.rounds).toHaveLength(ROUNDS);
    let acknowledged = 0;
    result.rounds.forEach((r, i) => {
      expect(r.ok).toBe(true);
      expect(r.splitBrainCommits).toBe(0);
      expect(r.lostCommits).toBe(0);
      // Each round cuts off the primary the previous one promoted, and the writer followed the promoted standby.
      if (i > 0) expect(r.isolatedNode).toBe(result.rounds[i - 1].promotedNode);
      expect(r.promotedNode).not.toBe(r.isolatedNode);
      expect(r.writer.newPrimaryNode).toBe(r.promotedNode);
      expect(r.promotedHeldLastAck).toBe(true);
      // The rules were there and did something: both sides' packets were dropped.
      expect(r.cut.rules).toBe(8);
      expect(r.heal!.removed).toBe(true);
      expect(r.heal!.droppedPackets).toBeGreaterThan(0);
      expect(r.rtoSeconds).toBeGreaterThanOrEqual(result.spec.partition.detectionSeconds);
      // The old primary ran on under ANY 1 and took no write: its commits wait for a standby that has moved on.
      expect(r.oldPrimary).toMatchObject({ stillPrimary: true, action: 'rewound', streaming: true });
      expect(r.oldPrimary.synchronousStandbyNames).toMatch(/^ANY 1 \(n\d, n\d\)$/);
      expect(r.oldPrimary.fence.outcome).toBe('hung');
      expect(r.oldPrimary.detail).toMatch(/^stopped \(fast\) in [\d.]+ s; servers diverged at WAL location/);
      // Once the rules were in place no standby confirmed a commit: at most one per connection was confirmed just
      // before and acknowledged after (the ones acknowledged while the rules loaded are looked up like them).
      expect(r.acknowledgedAfterCut).toBeLessThanOrEqual(result.spec.writer.connections);
      expect(r.acknowledgedTotal).toBeGreaterThan(acknowledged);
      acknowledged = r.acknowledgedTotal;
    });
    expect(result.summary).toMatchObject({ rounds: ROUNDS, splitBrainCommits: 0, lostCommits: 0, oldPrimaries: { 'rewound, streaming': ROUNDS } });
    expect(report).toContain('## Partitions');
    expect(report).toMatch(new RegExp(`${ROUNDS} partitions: 0 split-brain commits acknowledged`));
    await nothingLeft(lab, workflowId);
  });

  it('the writer cut off with the standbys: it moves to the new primary all the same, nothing acknowledged alone', async () => {
    const { workflowId, result } = await drill(lab, { preset: 'ci', backup: { enabled: false }, partition: { cutWriter: true } });
    expect(result.status).toBe('passed');
    const [r] = result.rounds;
    // Twelve rules: the writer's host is a client of the old primary too.
    expect(r.cut).toMatchObject({ cutWriter: true, rules: 12 });
    expect(r).toMatchObject({ ok: true, splitBrainCommits: 0, lostCommits: 0, oldPrimary: { fence: { outcome: 'hung' }, action: 'rewound', streaming: true } });
    // As in the rounds above: at most one commit per connection confirmed before the rules landed and acknowledged
    // (by the writer's clock) after; a loaded machine's CI run saw 2 here, none of them split-brain.
    expect(r.acknowledgedAfterCut).toBeLessThanOrEqual(result.spec.writer.connections);
    expect(r.writer.newPrimaryNode).toBe(r.promotedNode);
    await nothingLeft(lab, workflowId);
  });

  it('cancelled during a cut: the rules and the hosts are removed, the result saved', async () => {
    const workflowId = uniqueId('partition-cancel');
    const handle = await lab.client.workflow.start(WORKFLOW_TYPES.partitionDrill, {
      taskQueue: lab.taskQueue,
      workflowId,
      args: [{ preset: 'ci', backup: { enabled: false }, partition: { detectionSeconds: 120 } }],
    });
    await untilCut(lab, workflowId);
    await handle.cancel();
    await handle.result().catch(() => undefined);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const result = JSON.parse(readFileSync(path.join(lab.paths.resultsDir, runFolderName(workflowId), 'result.json'), 'utf8')) as PartitionDrillResult;
    expect(result.status).toBe('cancelled');
    await nothingLeft(lab, workflowId);
  });

  it('terminated during a cut: `storage-lab sweep` removes the rules and the hosts', async () => {
    const workflowId = uniqueId('partition-terminate');
    const handle = await lab.client.workflow.start(WORKFLOW_TYPES.partitionDrill, {
      taskQueue: lab.taskQueue,
      workflowId,
      args: [{ preset: 'ci', backup: { enabled: false }, partition: { detectionSeconds: 120 } }],
    });
    await untilCut(lab, workflowId);
    await handle.terminate('fault test: no compensation runs');
    const [table] = await tablesOf(lab);
    expect(table).toBe(`${CUT_TABLE_PREFIX}${labCutTag(lab.paths.hostsDir)}_${hostIdFor(workflowId, 'node', 1)}`);
    const { stdout } = await run(process.execPath, [CLI, 'sweep'], {
      env: { ...process.env, TEMPORAL_ADDRESS: serverAddress(), STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue },
      timeout: 120_000,
    });
    expect(stdout).toMatch(/Removed 4 hosts:/);
    expect(stdout).toContain(`nftables:inet ${table}`);
    await nothingLeft(lab, workflowId);
  });
});

describe('partition drill with the async test seam (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('partition-async', { testSeams: { asyncQuorum: true } });
  });
  afterAll(async () => {
    await lab?.close();
  });

  it("sees the old primary acknowledge commits after the cut that the new primary lacks, names them, and fails", async () => {
    const { workflowId, outcome, result, report } = await drill(lab, { preset: 'ci', backup: { enabled: false } });
    expect(outcome).toBeInstanceOf(WorkflowFailedError);
    expect(((outcome as WorkflowFailedError).cause as { type?: string }).type).toBe('VerificationError');
    expect(result.status).toBe('failed');
    const [r] = result.rounds;
    // What the old primary really ran with, read from it after the heal: no synchronous standby.
    expect(r.oldPrimary.synchronousStandbyNames).toBe('');
    expect(r.splitBrainCommits).toBeGreaterThan(0);
    expect(r.acknowledgedAfterCut + r.acknowledgedWhileCutting).toBeGreaterThanOrEqual(r.splitBrainCommits);
    // Far more than one per connection: the old primary went on confirming commits on its own.
    expect(r.acknowledgedAfterCut).toBeGreaterThan(result.spec.writer.connections);
    expect(r.lostCommits).toBeGreaterThanOrEqual(r.splitBrainCommits);
    expect(r.splitBrainSample.length).toBe(Math.min(10, r.splitBrainCommits));
    // Nothing fenced it: the probe's write was acknowledged after the heal.
    expect(r.oldPrimary.fence.outcome).toBe('acknowledged');
    expect(r.ok).toBe(false);
    expect(r.error).toContain(`${r.splitBrainCommits} split-brain commits: the old primary n1 acknowledged them after the cut`);
    expect(result.verdict).toMatch(new RegExp(`^failed: round 1: ${r.splitBrainCommits} split-brain commits`));
    expect(result.summary.splitBrainCommits).toBe(r.splitBrainCommits);
    // It was still brought back as a standby, so the drill ends with a cluster in one piece.
    expect(r.oldPrimary).toMatchObject({ action: 'rewound', streaming: true });
    expect(report).toContain(`| **${r.splitBrainCommits.toLocaleString('en-US')}** |`);
    await nothingLeft(lab, workflowId);
  });
});

/**
 * Waits for the drill's cut. A drill that ends first, or a wait that runs out, fails with where the drill is (its status,
 * pending activities with their last heartbeat and failure, why it ended): a CI run once waited out the 180 s here
 * with nothing to go on.
 */
async function untilCut(lab: TestLab, workflowId: string, ms = 180_000): Promise<void> {
  const end = Date.now() + ms;
  for (let polls = 0; (await tablesOf(lab)).length !== 1; polls++) {
    const ended = polls % 10 === 9 && (await lab.client.workflow.getHandle(workflowId).describe()).status.name !== 'RUNNING';
    if (ended || Date.now() > end) {
      throw new Error(`the cut is in place: ${ended ? 'the drill ended first' : `not within ${ms / 1000} s`}; ${await whereItIs(lab.client, workflowId)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
