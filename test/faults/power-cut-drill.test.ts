/**
 * The power-cut drill for real: host agents, PostgreSQL 15 on a modelled gp3 volume, a writer on its own host, and
 * the local provider's power cut (the device drops what it had not made durable, every process of the host dies).
 * With fsync = on: two cuts at seeded moments, PostgreSQL recovers from each crash, no acknowledged commit is missing,
 * pg_amcheck is clean and no page fails its checksum; the device's counters show what it dropped. With a test seam
 * (never a spec: both settings stay refused there) that turns fsync off, and one that turns synchronous_commit off,
 * the same drill sees acknowledged commits lost or a corrupt cluster, names the setting, and fails.
 * The 20 cuts (continuing as new after 10) are opt-in: STORAGE_LAB_LONG_TESTS=1, at moments drawn from a seed
 * of the run's own (printed, and kept in result.json, so a failure can be cut again at the same moments;
 * STORAGE_LAB_POWER_CUT_SEED sets it).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hostIdFor } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import type { DurabilityOff } from '../../common/core/test-seams';
import type { PowerCutDrillResult } from '../../common/results/drill-result';
import { detectCgroups } from '../../lib/cgroups';
import { runFolderName } from '../../lib/results-store';
import { startTestLab, type TestLab } from '../helpers/lab';
import { uniqueId } from '../helpers/temporal';
import { volumeSupport } from '../helpers/volume';

const describeIfVolumes = volumeSupport.ok && detectCgroups().kind ? describe : describe.skip;
const LONG = process.env.STORAGE_LAB_LONG_TESTS === '1';
const ROUNDS = LONG ? 20 : 2;
/** The ci preset's seed in CI (the same two moments every run); the long run's own otherwise. */
const SEED = process.env.STORAGE_LAB_POWER_CUT_SEED ? Number(process.env.STORAGE_LAB_POWER_CUT_SEED) : LONG ? Date.now() % 2 ** 31 : 1;
const hostsOf = (runId: string) => [hostIdFor(runId, 'client', 0), hostIdFor(runId, 'node', 1)];

async function drill(lab: TestLab, input: Record<string, unknown>) {
  const workflowId = uniqueId('power-cut-drill');
  const handle = await lab.client.workflow.start(WORKFLOW_TYPES.powerCutDrill, { taskQueue: lab.taskQueue, workflowId, args: [input] });
  const outcome = await handle.result().then(
    (v) => v as unknown,
    (e) => e as unknown,
  );
  if (outcome instanceof WorkflowFailedError) console.log(`${workflowId} failed: ${outcome.cause?.name}: ${outcome.cause?.message}\n${(outcome.cause?.cause as Error | undefined)?.message ?? ''}`);
  const folder = path.join(lab.paths.resultsDir, runFolderName(workflowId));
  const result = JSON.parse(readFileSync(path.join(folder, 'result.json'), 'utf8')) as PowerCutDrillResult;
  return { workflowId, outcome, result, report: readFileSync(path.join(folder, 'report.md'), 'utf8') };
}

describeIfVolumes('power-cut drill with fsync = on (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('power-cut');
  });
  afterAll(async () => {
    await lab?.close();
  });

  it(`${ROUNDS} cuts at seeded moments: crash recovery each time, 0 acknowledged commits lost, pg_amcheck clean, no checksum failure`, async () => {
    const { workflowId, outcome, result, report } = await drill(lab, { preset: 'ci', rounds: ROUNDS, powerCut: { seed: SEED } });
    console.log(
      [
        `power-cut drill, ${ROUNDS} cuts, seed ${SEED}: ${result.verdict}`,
        'round  cut after s  acknowledged  dropped pages  recovery s  redo s  lost  pg_amcheck  checksum failures',
        ...result.rounds.map((r) =>
          [r.round, r.cutAfterSeconds, r.writer.acknowledged, r.cut.droppedPages, r.recovery.seconds.toFixed(2), r.recovery.redoSeconds?.toFixed(3) ?? '-', r.lostCommits ?? '-', r.check?.amcheck.ok ? 'clean' : 'NOT clean', r.check?.checksumFailures ?? '-'].join('  '),
        ),
      ].join('\n'),
    );
    if (result.errors.length) console.log(JSON.stringify(result.rounds, null, 1));
    expect(result.errors).toEqual([]);
    expect(outcome).toMatchObject({ status: 'passed', kind: 'power-cut-drill', figures: { rounds: ROUNDS, lostCommits: 0, notRecovered: 0, amcheckFailedRounds: 0, checksumFailures: 0 } });
    expect(result.baseline).toMatchObject({
      amcheck: { ok: true, problems: 0 },
      dataChecksums: true,
      checksumFailures: 0,
      settings: { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', wal_sync_method: 'fdatasync', data_checksums: 'on' },
    });
    expect(result.rounds).toHaveLength(ROUNDS);
    expect(result.rounds.map((r) => r.round)).toEqual(Array.from({ length: ROUNDS }, (_, i) => i + 1));
    let acknowledged = 0;
    for (const r of result.rounds) {
      expect(r.ok).toBe(true);
      // The seeded moment, inside the window.
      expect(r.cutAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(r.cutAfterSeconds).toBeLessThanOrEqual(3);
      expect(r.writer.acknowledged).toBeGreaterThan(0);
      expect(r.recovery).toMatchObject({ started: true, crashRecovery: true, fatal: null });
      expect(r.lostCommits).toBe(0);
      expect(r.lostSample).toEqual([]);
      expect(r.countError).toBeNull();
      expect(r.check).toMatchObject({ amcheck: { ok: true, problems: 0, exitCode: 0 }, dataChecksums: true, checksumFailures: 0 });
      // The device's own counters: what it dropped is what its cut counter moved by; it had served writes and flushes.
      expect(r.cut.after.cutPages - r.cut.before.cutPages).toBe(r.cut.droppedPages);
      expect(r.cut.droppedBytes).toBe(r.cut.droppedPages * 4096);
      expect(r.cut.before.writes).toBeGreaterThan(0);
      expect(r.cut.before.flushes).toBeGreaterThan(0);
      expect(r.acknowledgedTotal).toBe(acknowledged + r.writer.acknowledged);
      acknowledged = r.acknowledgedTotal;
    }
    expect(result.summary).toMatchObject({ rounds: ROUNDS, lostCommits: 0, roundsWithLoss: 0, notRecovered: 0, amcheckProblems: 0, amcheckFailedRounds: 0, checksumFailures: 0, acknowledgedTotal: acknowledged });
    expect(result.verdict).toMatch(new RegExp(`^passed: ${ROUNDS} power cuts \\(fsync = on, synchronous_commit = on, wal_sync_method = fdatasync\\): 0 acknowledged commits lost, 0 not recovered, pg_amcheck not clean in 0, 0 checksum failures`));
    expect(report).toContain('## Power cuts');
    expect(report).toMatch(new RegExp(`${ROUNDS} power cuts: 0 acknowledged commits lost`));
    expect(lab.leftovers(hostsOf(workflowId))).toEqual([]);
  });
});

/** The drill under a seam that turns one durability setting off; it must fail, naming what was lost and the setting. */
function seamTest(off: DurabilityOff) {
  describeIfVolumes(`power-cut drill with ${off} = off (test seam, faults)`, () => {
    let lab: TestLab;
    beforeAll(async () => {
      // Short: a host's socket path (below the suite's temporary folder) must stay within 107 bytes.
      lab = await startTestLab(`pc-${off === 'fsync' ? 'fsync' : 'sync-commit'}`, { testSeams: { durabilityOff: off } });
    });
    afterAll(async () => {
      await lab?.close();
    });

    it('sees acknowledged commits lost or a corrupt cluster, names them and the setting, and fails', async () => {
      const { workflowId, outcome, result, report } = await drill(lab, { preset: 'ci', rounds: 1 });
      expect(outcome).toBeInstanceOf(WorkflowFailedError);
      expect(((outcome as WorkflowFailedError).cause as { type?: string }).type).toBe('VerificationError');
      expect(result.status).toBe('failed');
      // What the primary really ran with, read from it before the cut.
      expect(result.baseline?.settings?.[off]).toBe('off');
      expect(result.rounds).toHaveLength(1);
      const [r] = result.rounds;
      expect(r.ok).toBe(false);
      const lost = r.lostCommits ?? 0;
      const corrupt = !r.recovery.started || r.countError !== null || (r.check !== null && (!r.check.amcheck.ok || (r.check.checksumFailures ?? 0) > 0));
      expect(lost > 0 || corrupt).toBe(true);
      if (lost > 0) {
        expect(r.lostSample).toHaveLength(Math.min(10, lost));
        expect(r.error).toContain(`${lost} acknowledged commits lost by the power cut (fsync = ${off === 'fsync' ? 'off' : 'on'}, synchronous_commit = ${off === 'synchronous_commit' ? 'off' : 'on'})`);
        expect(result.summary).toMatchObject({ lostCommits: lost, roundsWithLoss: 1 });
        expect(report).toContain(`**${lost.toLocaleString('en-US')}**`);
      }
      expect(result.verdict).toMatch(/^failed: round 1: /);
      expect(result.verdict).toContain(`${off} = off`);
      expect(lab.leftovers(hostsOf(workflowId))).toEqual([]);
      console.log(`${off} = off: ${result.verdict}`);
    });
  });
}

seamTest('fsync');
seamTest('synchronous_commit');
