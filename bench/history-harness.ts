/**
 * The real workflows (bundled from workflows/) on a real Temporal dev server, against fake control and host
 * activities: each fake host step reports its progress through the real reporter as often as the real activity
 * would over the step's duration (a 5-hour load: one report every 2 s, 9,000 of them), then returns a plausible
 * result at once. Measures every workflow execution's history: events and bytes. The history-budget bench runs
 * seed-full with both drills; a unit-sized run of the same harness is a test.
 *
 * Why not Temporal's time-skipping test server: moving its clock (UnlockTimeSkippingWithSleep) while a workflow task
 * or an activity runs in real time expires them, and the retries it causes inflate the very histories measured here.
 * The workflows' own timers are seconds long (the failover drill's writes before the kill), so real time is fine;
 * what a long activity could add to a history is what it reports, and that the fakes reproduce.
 */
import { fakeDataSetControl, fakeDataSetHost } from './fake-data-sets';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { Context } from '@temporalio/activity';
import { TimeoutFailure } from '@temporalio/common';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ControlActivities } from '../activities/control';
import type { HostActivities } from '../activities/host';
import { runFolderName } from '../common/core/ids';
import { progressReporter } from '../activities/progress';
import { keepAlive } from '../activities/heartbeat';
import type { HostRecord } from '../common/core/hosts';
import { PHASES, type PhaseActivities } from '../common/phases/registry';
import { startThrowawayServer, type DevServer } from '../infra/temporal/dev-server';
import { fakeHostRecord } from '../test/helpers/fake-host';

/** How long each fake host step stands for, in seconds: it reports as often as a real one would in that time. */
export interface StepDurations {
  load: number;
  backup: number;
  warmup: number;
  tps: number;
  /** Each phase after the TPS run (common/phases/): as long as the longest of them. */
  phase: number;
  restore: number;
  /** A drill's writes before or after its target, and a failover round's writer. */
  writes: number;
}

export interface HistoryFigures {
  workflowType: string;
  workflowId: string;
  /** 1 for the first execution, 2 after one continue-as-new, ... */
  execution: number;
  events: number;
  /**
   * Events other than workflow tasks' (scheduled, started, completed, timed out, failed): what the workflow's code
   * and its activities made. How the server batches completions into workflow tasks varies with the machine's load
   * (12 events apart in two runs of one failover drill), this does not.
   */
  decidedEvents: number;
  /** The decided events by type (ACTIVITY_TASK_SCHEDULED: 40, ...): what a change in decidedEvents is made of. */
  decidedByType: Record<string, number>;
  bytes: number;
  /** Signals it received: progress must not arrive this way (each costs events, however long the run). */
  signals: number;
}

/** Seconds between two progress reports of a real host activity (load: 2 s; pgbench: 1 s; the rest 2-5 s). */
const REPORT_EVERY_SECONDS = 2;

/** A Temporal server with the lab's workflows bundled once; close() stops what it started. */
export class HistoryHarness {
  private constructor(
    readonly connection: NativeConnection,
    readonly client: Client,
    private readonly bundle: WorkflowBundleWithSourceMap,
    private readonly owned: { server: DevServer; dir: string } | null,
  ) {}

  /** On the server at `address` (the test suite's), or on a throwaway dev server of its own. */
  static async start(address?: string): Promise<HistoryHarness> {
    let owned: { server: DevServer; dir: string } | null = null;
    if (!address) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-history-'));
      owned = { server: (await startThrowawayServer(dir)).server, dir };
      address = owned.server.address;
    }
    const connection = await NativeConnection.connect({ address });
    const client = new Client({ connection: await Connection.connect({ address }) });
    const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, trace: () => undefined, log: () => undefined };
    const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: quiet });
    return new HistoryHarness(connection, client, bundle, owned);
  }

  async close(): Promise<void> {
    await this.connection.close();
    await this.client.connection.close();
    if (this.owned) {
      this.owned.server.process.kill('SIGTERM');
      await new Promise((r) => this.owned!.server.process.once('exit', r));
      rmSync(this.owned.dir, { recursive: true, force: true });
    }
  }

  /**
   * Runs one workflow to its end (a failure is a result too) with fake activities standing for `durations`; returns
   * the histories of every execution it and its children made.
   *
   * A fake returns within milliseconds, so a fake activity's timeout says the test process or the server was starved
   * (three suite files at a time on 2 cores), not what the workflow does: the history-budget test failed so 3 times in
   * 9 clean clones (archiveCurrentSegment's 60 s heartbeat timeout, once describeHost's start-to-close), each fake
   * having nothing to wait for. Such a run is run once more under a new id, saying so with what the fake did and how
   * late the event loop ran; any other failure, and a second timeout, is the result.
   */
  async run(workflowType: string, input: unknown, durations: StepDurations, workflowId: string): Promise<HistoryFigures[]> {
    const first = await this.attempt(workflowType, input, durations, workflowId);
    if (!first.starved) return first.figures;
    console.warn(`${workflowType} ${workflowId}: run again as ${workflowId}-again, ${first.starved}`);
    return (await this.attempt(workflowType, input, durations, `${workflowId}-again`)).figures;
  }

  private async attempt(workflowType: string, input: unknown, durations: StepDurations, workflowId: string): Promise<{ figures: HistoryFigures[]; starved: string | null }> {
    const taskQueue = `budget-${workflowId}`;
    const fakes = new FakeTimeline();
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    // Each host's worker, claimed before it is created: a provisionHost retried while the first attempt's
    // Worker.create still runs must not start a second worker on the host's queue.
    const hosts = new Map<string, Promise<{ worker: Worker; running: Promise<void> }>>();
    const control = await Worker.create({
      connection: this.connection,
      taskQueue,
      workflowBundle: this.bundle,
      // Wrapped as the control worker wraps its activities (worker/control-worker.ts): they heartbeat while they run,
      // so a provisionHost waiting for its host's worker on a starved process is not taken for a dead worker.
      activities: keepAlive(
        fakeControl(async (record) => {
          if (!hosts.has(record.hostId))
            hosts.set(
              record.hostId,
              Worker.create({ connection: this.connection, taskQueue: record.taskQueue, activities: fakes.record(fakeHost(record.hostId, durations)) }).then((worker) => ({
                worker,
                running: worker.run(),
              })),
            );
          await hosts.get(record.hostId);
        }),
      ),
    });
    const running = control.run();
    try {
      const handle = await this.client.workflow.start(workflowType, { taskQueue, workflowId, args: [input] });
      // A failure is a result too, but its reason is what a short history means: say it.
      let starved: string | null = null;
      await handle.result().catch((e: unknown) => {
        console.warn(`${workflowType} ${workflowId} ended in failure: ${failureChain(e)}`);
        starved = fakeTimedOut(e, fakes, loop.max / 1e6);
      });
      return { figures: await histories(this.client, workflowId, handle.firstExecutionRunId), starved };
    } finally {
      loop.disable();
      const started = (await Promise.allSettled(hosts.values())).flatMap((h) => (h.status === 'fulfilled' ? [h.value] : []));
      for (const w of [control, ...started.map((h) => h.worker)]) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all([running, ...started.map((h) => h.running)]);
    }
  }
}

/** One fake host activity's attempt: when it started, and when it returned or threw (null: still running). */
interface FakeCall {
  type: string;
  id: string;
  startedAt: number;
  returnedAt: number | null;
}

/** When each fake host activity started and returned, by activity type and id (ids repeat across executions). */
export class FakeTimeline {
  readonly entries: FakeCall[] = [];

  /** The activities, each recording its start and its return (or throw) here. */
  record<T extends object>(activities: T): T {
    return Object.fromEntries(
      Object.entries(activities).map(([type, fn]) => [
        type,
        async (...args: unknown[]) => {
          const entry: FakeCall = { type, id: Context.current().info.activityId, startedAt: Date.now(), returnedAt: null };
          this.entries.push(entry);
          try {
            return await (fn as (...a: unknown[]) => unknown)(...args);
          } finally {
            entry.returnedAt = Date.now();
          }
        },
      ]),
    ) as T;
  }

  of(type: string, id: string): FakeCall[] {
    return this.entries.filter((e) => e.type === type && e.id === id);
  }
}

/**
 * Why a failed run was starved rather than wrong, or null: its failure is a fake host activity's timeout, and that
 * fake had returned, or never started (the server's task did not reach it). A fake still running (none should be) is
 * not starvation, nor is any other failure.
 */
export function fakeTimedOut(e: unknown, fakes: FakeTimeline, loopDelayMaxMs: number): string | null {
  const chain = causes(e);
  const activity = [...chain].reverse().find((f) => f.activityType); // the innermost, nearest the timeout
  const timeout = chain.find((f): f is TimeoutFailure => f instanceof TimeoutFailure);
  if (!activity?.activityType || !activity.activityId || !timeout) return null;
  const seen = fakes.of(activity.activityType, activity.activityId);
  if (seen.some((x) => x.returnedAt === null)) return null;
  const what = seen.length
    ? seen.map((x) => `returned ${x.returnedAt! - x.startedAt} ms after it started`).join(', ')
    : 'never reached by its task';
  return `starved: the fake ${activity.activityType} (id ${activity.activityId}) timed out (${timeout.message}), ${what}; the event loop ran up to ${Math.round(loopDelayMaxMs)} ms late`;
}

/**
 * A workflow failure's causes down to the first, each with the activity it came from where there is one:
 * "activity Heartbeat timeout" alone does not say which of a drill's activities went silent.
 */
export function failureChain(e: unknown): string {
  return causes(e)
    .map((f) => `${f.message ?? String(f)}${f.activityType ? ` [activity ${f.activityType}, id ${f.activityId ?? '?'}]` : ''}`)
    .join(' <- ');
}

type Cause = { message?: string; cause?: unknown; activityType?: string; activityId?: string };

/** A failure and its causes, the outermost first, at most six deep. */
function causes(e: unknown): Cause[] {
  const out: Cause[] = [];
  for (let f = e as Cause | undefined; f && out.length < 6; f = f.cause as Cause | undefined) out.push(f);
  return out;
}

/** Every execution of the workflow and of its children: each continue-as-new chain from its first run. */
async function histories(client: Client, workflowId: string, firstRunId: string, depth = 0): Promise<HistoryFigures[]> {
  const { EventType } = temporal.api.enums.v1;
  const figures: HistoryFigures[] = [];
  for (let runId: string | null | undefined = firstRunId, execution = 1; runId; execution++) {
    const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
    const type = events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '?';
    const signals = events.filter((x) => x.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length;
    const taskEvents = new Set([
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
      EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    ]);
    const decided = events.filter((x) => !taskEvents.has(x.eventType as temporal.api.enums.v1.EventType));
    const decidedByType: Record<string, number> = {};
    for (const x of decided) {
      const name = String(EventType[x.eventType as number] ?? x.eventType).replace(/^EVENT_TYPE_/, '');
      decidedByType[name] = (decidedByType[name] ?? 0) + 1;
    }
    figures.push({ workflowType: type, workflowId, execution, events: events.length, decidedEvents: decided.length, decidedByType, bytes: Buffer.byteLength(JSON.stringify(history)), signals });
    if (depth < 3)
      for (const e of events.filter((x) => x.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED)) {
        const child = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
        if (child?.workflowId && child.runId) figures.push(...(await histories(client, child.workflowId, child.runId, depth + 1)));
      }
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return figures;
}

/**
 * A fake host step standing for `seconds`: as many progress reports as the real activity makes in that time. It yields
 * to the event loop every 10 reports, as a real step does between its own: the test's four runs share one process,
 * and with a CPU hog on both cores one that yielded every 500 kept the others' heartbeats from going out for longer
 * than their timeout ("activity Heartbeat timeout" in the partition drill's fakes).
 */
async function take(seconds: number, hostId: string, step: string): Promise<void> {
  const report = progressReporter(hostId, step);
  for (let done = 0; done < seconds; done += REPORT_EVERY_SECONDS) {
    report({ percent: Math.round((100 * done) / seconds), etaSeconds: Math.round(seconds - done), detail: { second: done } });
    if (done % (10 * REPORT_EVERY_SECONDS) === 0) await new Promise((r) => setImmediate(r));
  }
}

/**
 * An activity the runs measured here never schedule: it fails, saying so. The fakes are typed as the whole activity
 * sets, so a new activity does not compile until it is faked here or declared absent like this.
 */
function notInBudget(name: string): () => Promise<never> {
  return async () => {
    throw new Error(`${name} is not faked: the history budget runs no workflow that schedules it`);
  };
}

/** The control plane, faked: hosts are host workers started in this process; results go nowhere. */
function fakeControl(startHost: (record: HostRecord) => Promise<void>): ControlActivities {
  return {
    ...fakeDataSetControl(),
    async preflight() {
      return { warnings: [] };
    },
    async preflightDrill() {
      return { warnings: [] };
    },
    async saveSpec() {
      return 'budget://spec';
    },
    async provisionHost({ request }) {
      const record = fakeHostRecord(request);
      await startHost(record);
      return record;
    },
    async teardownHost() {},
    async killHost() {},
    async cutNetwork({ cut }) {
      const at = new Date().toISOString();
      return { table: `storage_lab_budget_${cut.hostId}`, mechanism: 'fake', rules: 8, requestedAt: at, appliedAt: at, applySeconds: 0.01 };
    },
    async healNetwork() {
      return { removed: true, droppedPackets: 30, healedAt: new Date().toISOString(), removeSeconds: 0.01 };
    },
    async inspectHost() {
      return { oomKills: 0, text: 'fake host', lastPollAt: null };
    },
    async saveClusterResult() {},
    async writeResults({ runId }) {
      return { location: `budget://${runId}`, status: 'completed', medianTps: {}, ratios: {}, failedChecks: [] };
    },
    async prepareBackupStore({ runId }) {
      // As the real one: the run's own folder below the backups folder (a continued drill carries it, checked).
      return { kind: 'folder', path: `/budget/backups/${runFolderName(runId)}` };
    },
    async removeBackupStore() {
      return 'removed';
    },
    async saveDrillResult({ runId }) {
      return `budget://${runId}`;
    },
    async saveToolComparison({ runId }) {
      return `budget://${runId}`;
    },
    async claimRunResults({ runId }) {
      return `budget://${runId}`;
    },
    cutPower: notInBudget('cutPower'),
    diagnoseDatabase: notInBudget('diagnoseDatabase'),
    compareWithHistory: notInBudget('compareWithHistory'),
    listManagedHosts: notInBudget('listManagedHosts'),
    removeBackupFolder: notInBudget('removeBackupFolder'),
    describeRuns: notInBudget('describeRuns'),
    listDataSets: notInBudget('listDataSets'),
    removeExpiredDataSets: notInBudget('removeExpiredDataSets'),
  };
}

const WAL = { start: '000000010000000000000003', stop: '000000010000000000000004' };
const REPOSITORY_OK = { ok: true, status: 'ok', detail: 'fake: ok', walChecked: 2, walInvalid: 0, backupFilesChecked: null, backupFilesInvalid: null, missingWal: [], seconds: 0.1 };

/** One host's agent, faked: every step reports as long as its duration and returns a plausible result. */
function fakeHost(hostId: string, d: StepDurations): HostActivities {
  const node = /-node-(\d)$/.exec(hostId)?.[1];
  // Each phase's activity stands for d.phase and returns the plausible result its module declares (its self-test's).
  const phases = Object.fromEntries(
    PHASES.map((p) => [
      p.activity,
      async () => {
        await take(d.phase, hostId, p.name);
        return p.selfTest.healthy;
      },
    ]),
  ) as unknown as PhaseActivities;
  const host: HostActivities = {
    ...phases,
    ...fakeDataSetHost(),
    async describeHost() {
      return { hostId, pid: 1, postgresRunning: true };
    },
    async configurePostgres() {
      return { postgresVersion: '15.18', serverVersionNum: 150018, restarted: false };
    },
    async stopPostgres() {},
    async loadData(input) {
      await take(d.load, hostId, 'load');
      const rows = input.scale * 100_000;
      return { rows, chunks: Math.ceil(rows / input.chunkRows), chunksResumed: 0, loadSeconds: d.load, indexSeconds: 0, vacuumSeconds: 0, heapBytes: rows * 146, rowsPerSecond: rows / d.load };
    },
    async verifyAccounts() {
      return { rows: 200_000, distinctAids: 200_000, minAid: 1, maxAid: 200_000 };
    },
    async runPgbench(input) {
      await take(input.durationSeconds, hostId, input.label);
      const tpsSeries = Array(Math.min(input.durationSeconds, 600)).fill(1734);
      return { tps: 1734, transactions: 1734 * input.durationSeconds, failedTransactions: 0, durationSeconds: input.durationSeconds, clients: input.clients, threads: input.threads, latencyMs: { mean: 36.9, p50: 30, p95: 80, p99: 120 }, tpsSeries, pgbenchVersion: '15.18' };
    },
    async configureBackups() {
      return { tool: 'fake', version: '0', settings: { archive_mode: 'on' } };
    },
    async initBackupRepository() {},
    async takeBackup() {
      await take(d.backup, hostId, 'base backup');
      return { tool: 'fake', toolVersion: '0', label: 'b1', type: 'full', startedAt: 't', stoppedAt: 't', seconds: d.backup, databaseBytes: 1, repositoryBytes: 1, startLsn: '0/3000028', stopLsn: '0/4000050', walStart: WAL.start, walStop: WAL.stop };
    },
    async writeHistory(input) {
      await take(d.writes, hostId, input.label);
      const failurePoint = { at: 't', currentLsn: '0/7000100', lastArchivedWal: '000000010000000000000006', lastArchivedAt: 't', archivedThroughLsn: '0/7000000', archiveLagBytes: 256, archiveLagSeconds: 0.5, lastMarkerId: 20, lastArchivedMarkerId: 19, archiveFailures: 0 };
      return { firstId: 1, lastId: 10, markers: 10, pgbenchTransactions: 5, failurePoint: input.failurePoint ? failurePoint : null };
    },
    async markTarget() {
      return { target: { type: 'time', time: '2026-11-30 07:38:55+00', lsn: null, lastIdBefore: 10, checksums: null }, walLsn: '0/6000308' };
    },
    async waitForArchive() {
      return { seconds: 1 };
    },
    async archiveCurrentSegment() {
      return { segment: '000000020000000000000005', seconds: 1 };
    },
    async removeArchivedSegment() {
      return null as never;
    },
    async restoreBackup() {
      await take(d.restore, hostId, 'fetch');
      return { backupLabel: 'b1', fetchSeconds: d.restore };
    },
    async recoverFromBackup() {
      await take(d.restore / 4, hostId, 'replay and promote');
      return { ok: true, detail: 'ok', replaySeconds: d.restore / 4, promoteSeconds: 1, stoppedAt: 't', lastTransactionAt: 't', restoredSegments: 2 };
    },
    async checkArchive({ from, to }) {
      return { continuity: { ok: true, from, to, checked: 2, missing: [] }, repository: REPOSITORY_OK };
    },
    async checkRepository() {
      return REPOSITORY_OK;
    },
    async verifyRestore() {
      return {
        ledger: { ok: true, detail: 'every marker through 10, none after', expectedThroughId: 10, presentRows: 10, maxPresentId: 10, missingIds: [], idsAfterTarget: 0 },
        checksums: { ok: true, detail: 'equal', tables: {} },
        amcheck: { ok: true, detail: 'clean', problems: 0 },
        maxPresentCommittedAt: 't',
      } as never;
    },
    recoverAfterPowerCut: notInBudget('recoverAfterPowerCut'),
    checkClusterAfterPowerCut: notInBudget('checkClusterAfterPowerCut'),
    countAfterPowerCut: notInBudget('countAfterPowerCut'),
    async createFailoverLedger() {},
    async cloneStandby() {
      return { seconds: 1 };
    },
    async setReplication() {},
    async waitForStandbys() {
      return { seconds: 1 } as never;
    },
    // The lowest-numbered standby received the most WAL, so it is the one promoted; the writer finds it.
    async standbyPosition() {
      return { inRecovery: true, receiveLsn: `0/${(10 - Number(node ?? 0)).toString(16)}000000`, replayLsn: null };
    },
    async promoteStandby() {
      return { seconds: 0.5, timeline: 2 };
    },
    async runFailoverWriter(input) {
      await take(d.writes, hostId, `writer round ${input.round}`);
      const winner = input.nodes.map((n) => n.node).filter((n) => n !== input.initialNode).sort()[0];
      const now = Date.now();
      return {
        acknowledged: 100,
        failedWrites: 3,
        inDoubt: 0,
        lastAckBeforeKillAt: new Date(now - 900).toISOString(),
        firstAckAfterAt: new Date(now).toISOString(),
        newPrimaryNode: winner,
        outageSeconds: 0.9,
        stopReason: 'done',
      };
    },
    async countLostCommits() {
      return { acknowledged: 100, lost: 0, lostSample: [], inDoubtPresent: 0, rowsOnPrimary: 100 };
    },
    async probeOldPrimary({ id }) {
      return {
        synchronousStandbyNames: 'ANY 1 (n2, n3)',
        stillPrimary: true,
        currentLsn: '0/9000000',
        timeline: 1,
        fence: { outcome: 'hung', seconds: 1, detail: `write ${id} was not acknowledged within 1 s` },
      };
    },
    async rejoinAsStandby() {
      return { action: 'rewound', seconds: 1, detail: 'pg_rewind' };
    },
  };
  return host;
}
