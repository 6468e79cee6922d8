/**
 * The power-cut drill's state and its steps around the rounds (workflows/power-cut-round.ts): one primary on a
 * modelled volume (the device that drops what it had not made durable) and the writer's client host, named as the
 * replica drills name theirs (workflows/failover-steps.ts replicaHosts); the set-up (data checksums on, the ledger,
 * a check of the cluster before any cut); the moment of each cut, drawn from the spec's seed; and the verdict.
 */
import type { DrillNode } from '../activities/host/failover-writer';
import type { HostRecord } from '../common/core/hosts';
import type { NameScheme } from '../common/core/ids';
import { median } from '../common/core/stats';
import { powerCutDrillBounds, type HostTimeouts } from '../common/input/bounds';
import { drillLabSettings, type PowerCutDrillSpec } from '../common/input/drill-spec';
import { userPostgresSettings, type LabServerSettings } from '../common/input/postgres-settings';
import { drillResultHead, type DrillSummary, type PowerCutDrillResult } from '../common/results/drill-result';
import { UndoStack } from './compensation';
import { drillHostShape } from './drill-skeleton';
import { replicaHosts } from './failover-steps';
import { hostRequest, provisionHosts } from './hosts';
import type { PowerCutContinuation } from './power-cut-continuation';
import type { ProgressBoard } from './progress';
import { hostCalls, type HostCalls } from './proxies';

/** The primary's volume: the drill's data is a ledger of small rows. */
const VOLUME_BYTES = 2 * 2 ** 30;
/** Bound on pg_amcheck over the drill's small cluster. */
export const CHECK_TIMEOUT_SECONDS = 600;

/** Everything a step of the power-cut drill needs. */
export interface PowerCutDrill {
  spec: PowerCutDrillSpec;
  runId: string;
  scheme: NameScheme;
  board: ProgressBoard;
  result: PowerCutDrillResult;
  undo: UndoStack;
  /** The primary's host id, and the writer's client host. */
  host: string;
  client: string;
  calls: HostCalls;
  clientCalls: HostCalls;
  settings: { server: LabServerSettings; user: Record<string, string> };
  timeouts: HostTimeouts;
  /** The primary's record once provisioned (a continued run carries it). */
  record: HostRecord | null;
  progress: (phase: string, done: number, hostId?: string) => void;
}

/** The drill as an execution starts it: fresh, or where a continuation left it (then its hosts are registered for undo at once). */
export function powerCutDrill(
  runId: string,
  spec: PowerCutDrillSpec,
  board: ProgressBoard,
  continued: PowerCutContinuation | undefined,
  scheme: NameScheme = 'sha256',
): PowerCutDrill {
  const { client, hostOf } = replicaHosts(runId, scheme);
  const host = hostOf.n1;
  const timeouts = powerCutDrillBounds(spec);
  const result: PowerCutDrillResult = {
    ...drillResultHead('power-cut-drill', runId, spec),
    ...(continued ? { startedAt: continued.startedAt, postgresVersion: continued.postgresVersion } : {}),
    hosts: { client, primary: host },
    baseline: continued?.baseline ?? null,
    rounds: continued?.rounds ?? [],
    summary: emptySummary(),
    errors: [],
  };
  // The set-up and the rounds.
  const totalSteps = 1 + spec.rounds;
  const drill: PowerCutDrill = {
    spec,
    runId,
    scheme,
    board,
    result,
    undo: new UndoStack(),
    host,
    client,
    calls: hostCalls(host, timeouts),
    clientCalls: hostCalls(client, timeouts),
    settings: { server: drillLabSettings(spec), user: userPostgresSettings(spec.postgres.settings) },
    timeouts,
    record: continued?.records.n1 ?? null,
    progress: (phase, done, hostId = client) => {
      board.step(hostId, phase);
      board.setPercent((100 * done) / totalSteps);
    },
  };
  if (continued) drill.undo.hosts(spec.provider, [client, host]);
  return drill;
}

function emptySummary(): PowerCutDrillResult['summary'] {
  return {
    rounds: 0,
    lostCommits: 0,
    roundsWithLoss: 0,
    acknowledgedTotal: 0,
    notRecovered: 0,
    amcheckProblems: 0,
    amcheckFailedRounds: 0,
    checksumFailures: 0,
    droppedPages: 0,
    droppedBytes: 0,
    recoverySecondsMedian: null,
    recoverySecondsMax: null,
  };
}

/** Provisions hosts of the drill (or, after a cut, starts the primary's agent again), waiting for their agents. */
export function provisionPowerCutHosts(d: PowerCutDrill, hostIds: string[]): Promise<HostRecord[]> {
  const shape = { ...drillHostShape(d.spec, d.runId, VOLUME_BYTES), powerCuts: true };
  const requests = hostIds.map((hostId) => hostRequest(d.spec, d.runId, hostId, hostId === d.client ? 'client' : 'node', shape));
  return provisionHosts(d.undo, d.spec.provider, requests, d.timeouts);
}

/** Where the primary's Postgres listens, as the writer reaches it. */
export function primaryAddress(d: PowerCutDrill): DrillNode {
  const r = d.record!;
  return { node: 'n1', host: r.postgres.host, port: r.postgres.port };
}

/**
 * The client and the primary; the primary's cluster made with data checksums (the server verifies every page it
 * reads), the ledger, and a check of the cluster before any cut: pg_amcheck clean and the durability settings it
 * runs with, so a check that fails after a cut failed on what the cut did.
 */
export async function setUpPowerCutDrill(d: PowerCutDrill): Promise<void> {
  d.progress('provision', 0);
  d.undo.hosts(d.spec.provider, [d.client, d.host]);
  const [, record] = await provisionPowerCutHosts(d, [d.client, d.host]);
  d.record = record;
  d.progress('set up the primary', 0.5, d.host);
  d.result.postgresVersion = (await d.calls.setup.configurePostgres({ hostId: d.host, ...d.settings, dataChecksums: true })).postgresVersion;
  await d.calls.setup.createFailoverLedger({ hostId: d.host });
  d.result.baseline = await d.calls.measure.checkClusterAfterPowerCut.executeWithOptions(
    { summary: `before the first cut: pg_amcheck over every database of ${d.host}, its checksums and durability settings` },
    [{ hostId: d.host, timeoutSeconds: CHECK_TIMEOUT_SECONDS }],
  );
}

/**
 * Seconds of writing before round `round`'s cut: uniform between the spec's earliest and latest, drawn from its seed
 * and the round (mulberry32), to the millisecond. The same seed cuts at the same moments on any run, replay included.
 */
export function cutMoment(powerCut: PowerCutDrillSpec['powerCut'], round: number): number {
  let t = (powerCut.seed ^ Math.imul(round, 0x9e3779b9)) >>> 0;
  t = (t + 0x6d2b79f5) >>> 0;
  let x = Math.imul(t ^ (t >>> 15), t | 1);
  x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
  const u = ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
  return Math.round((powerCut.earliestSeconds + u * (powerCut.latestSeconds - powerCut.earliestSeconds)) * 1000) / 1000;
}

/** The headline figures from the rounds, then the one line a person reads first. */
export function concludePowerCutDrill(r: PowerCutDrillResult, failure: string | undefined): void {
  const recovered = r.rounds.filter((x) => x.recovery.started);
  const seconds = recovered.map((x) => x.recovery.seconds);
  const counted = r.rounds.filter((x) => x.lostCommits !== null);
  const sum = (f: (x: PowerCutDrillResult['rounds'][number]) => number) => r.rounds.reduce((total, x) => total + f(x), 0);
  const s = (r.summary = {
    rounds: r.rounds.length,
    // Each round's count covers every earlier round's commits too: the largest is the drill's. Null when a round
    // could not count at all and none counted a loss.
    lostCommits: counted.length === r.rounds.length || counted.some((x) => x.lostCommits! > 0) ? Math.max(0, ...counted.map((x) => x.lostCommits!)) : null,
    roundsWithLoss: counted.filter((x) => x.lostCommits! > 0).length,
    acknowledgedTotal: Math.max(0, ...r.rounds.map((x) => x.acknowledgedTotal)),
    notRecovered: r.rounds.length - recovered.length,
    amcheckProblems: sum((x) => x.check?.amcheck.problems ?? 0),
    amcheckFailedRounds: r.rounds.filter((x) => x.check && !x.check.amcheck.ok).length,
    checksumFailures: sum((x) => x.check?.checksumFailures ?? 0),
    droppedPages: sum((x) => x.cut.droppedPages),
    droppedBytes: sum((x) => x.cut.droppedBytes),
    recoverySecondsMedian: seconds.length ? Math.round(median(seconds)! * 1000) / 1000 : null,
    recoverySecondsMax: seconds.length ? Math.max(...seconds) : null,
  });
  const set = r.baseline?.settings;
  const settings = set ? `fsync = ${set.fsync}, synchronous_commit = ${set.synchronous_commit}, wal_sync_method = ${set.wal_sync_method}` : 'settings unknown';
  const figures = `${s.rounds} power cut${s.rounds === 1 ? '' : 's'} (${settings}): ${s.lostCommits ?? 'uncounted'} acknowledged commits lost, ${s.notRecovered} not recovered, pg_amcheck not clean in ${s.amcheckFailedRounds}, ${s.checksumFailures} checksum failures; the device dropped ${s.droppedPages} unsynced pages; crash recovery median ${s.recoverySecondsMedian ?? '–'} s (max ${s.recoverySecondsMax ?? '–'} s)`;
  if (failure !== undefined) r.verdict = `${r.status}: ${failure.split('\n')[0]} (${figures})`;
  else r.verdict = `passed: ${figures}`;
}

/** The summary's headline figures. */
export function powerCutDrillFigures(r: PowerCutDrillResult): DrillSummary['figures'] {
  const s = r.summary;
  return {
    rounds: s.rounds,
    lostCommits: s.lostCommits,
    notRecovered: s.notRecovered,
    amcheckFailedRounds: s.amcheckFailedRounds,
    amcheckProblems: s.amcheckProblems,
    checksumFailures: s.checksumFailures,
    droppedPages: s.droppedPages,
    recoverySecondsMedian: s.recoverySecondsMedian,
    recoverySecondsMax: s.recoverySecondsMax,
  };
}
