/**
 * The failover drill's shared state and its steps around the rounds (workflows/failover-round.ts): the set-up of the
 * hosts, replication and the archive, the archive check after the rounds, and the verdict. The partition drill
 * (workflows/partition-*.ts) is a replica drill too: it shares the state, the set-up and the archive check.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { DrillNode } from '../activities/host/failover-writer';
import type { ConfigurePostgresInput } from '../activities/host/postgres';
import { FAILURE_TYPES } from '../common/core/errors';
import type { HostRecord } from '../common/core/hosts';
import { hostIdFor, type NameScheme } from '../common/core/ids';
import { parseSegmentName } from '../common/core/lsn';
import { median } from '../common/core/stats';
import { backupStoreLocation } from '../common/input/backup-store';
import { failoverDrillBounds, type HostTimeouts } from '../common/input/bounds';
import { drillLabSettings, type FailoverDrillSpec, type ReplicaDrillSpec } from '../common/input/drill-spec';
import { synchronousStandbyNames, userPostgresSettings, type LabServerSettings } from '../common/input/postgres-settings';
import { drillResultHead, repositoryVerification, type DrillSummary, type FailoverArchive, type FailoverDrillResult } from '../common/results/drill-result';
import { UndoStack } from './compensation';
import { drillHostShape } from './drill-skeleton';
import { continuation, NODES, resumedState, ROUNDS_PER_EXECUTION, type FailoverContinuation, type Node } from './failover-continuation';
import { hostRequest, provisionHosts } from './hosts';
import type { ProgressBoard } from './progress';
import { currentClaimant } from './owner';
import { hostCalls, providerCalls, type HostCalls } from './proxies';

/** Bound on a standby catching up after it was cloned, repointed or rewound. */
export const STANDBY_WAIT_SECONDS = 120;
/** Bound on a primary archiving the segment it just closed: one push to the store, seconds normally. */
export const ARCHIVE_WAIT_SECONDS = 120;
/** Every node's volume: the drill's data is small. */
const NODE_VOLUME_BYTES = 2 * 2 ** 30;

/** What the shared steps write into a replica drill's result: the server's version and the archive. */
export interface ReplicaDrillResult {
  postgresVersion: string | null;
  archive: FailoverArchive | null;
}

/**
 * Everything a step of a replica drill (failover, partition) needs: the spec, the hosts, their calls, what the drill
 * made and the drill's record.
 */
export interface ReplicaDrill<S extends ReplicaDrillSpec = ReplicaDrillSpec, R extends ReplicaDrillResult = ReplicaDrillResult> {
  spec: S;
  /** `sync`: each primary's commits wait for ANY 1 of its standbys; `async`: for none (the failover drill's contrast). */
  mode: FailoverDrillSpec['mode'];
  runId: string;
  /** How the run's hosts are named: a continued drill keeps its first execution's scheme. */
  scheme: NameScheme;
  board: ProgressBoard;
  result: R;
  undo: UndoStack;
  hostOf: Record<Node, string>;
  client: string;
  /** The client first, then the nodes. */
  allHosts: string[];
  calls: (node: Node) => HostCalls;
  clientCalls: HostCalls;
  /** Every node's server settings: the lab's and the spec's, apart (the host checks both). */
  settings: { server: LabServerSettings; user: Record<string, string> };
  timeouts: HostTimeouts;
  state: Pick<FailoverContinuation, 'records' | 'peers' | 'primary' | 'standbys' | 'archiving'>;
  progress: (step: string, done: number, hostId?: string) => void;
}

/** The failover drill's state and steps. */
export type FailoverDrill = ReplicaDrill<FailoverDrillSpec, FailoverDrillResult>;

/** The standbys a primary's commits wait for (any one of them): its standbys in sync mode, none in async mode. */
export function quorumNodes(mode: FailoverDrillSpec['mode'], standbys: string[]): string[] {
  return mode === 'sync' ? standbys : [];
}

/** synchronous_standby_names of a primary whose standbys are `standbys` ('' in async mode). */
export function quorumOf(mode: FailoverDrillSpec['mode'], standbys: string[]): string {
  return synchronousStandbyNames(quorumNodes(mode, standbys));
}

/**
 * The drill as an execution starts it: fresh, or where a continuation left it (then what the earlier executions
 * made is registered for undo at once).
 */
export function failoverDrill(
  runId: string,
  spec: FailoverDrillSpec,
  board: ProgressBoard,
  continued: FailoverContinuation | undefined,
  scheme: NameScheme = 'sha256',
): FailoverDrill {
  const { client, hostOf } = replicaHosts(runId, scheme);
  const result: FailoverDrillResult = {
    ...drillResultHead('failover-drill', runId, spec),
    ...(continued ? { startedAt: continued.startedAt, postgresVersion: continued.postgresVersion } : {}),
    mode: spec.mode,
    synchronousStandbyNames: quorumOf(spec.mode, ['n2', 'n3']) || null,
    hosts: { client, nodes: hostOf },
    archive: continued?.archive ?? null,
    rounds: continued?.rounds ?? [],
    summary: { rounds: 0, lostCommits: 0, rtoSecondsMedian: null, rtoSecondsMax: null },
    errors: [],
  };
  return replicaDrill({ runId, scheme, spec, mode: spec.mode, board, result, timeouts: failoverDrillBounds(spec) }, continued);
}

/** A replica drill's hosts, named by the run's scheme (workflows/names.ts): the writer's client and the three nodes. */
export function replicaHosts(runId: string, scheme: NameScheme): { client: string; hostOf: Record<Node, string> } {
  return {
    client: hostIdFor(runId, 'client', 0, scheme),
    hostOf: Object.fromEntries(NODES.map((n, i) => [n, hostIdFor(runId, 'node', i + 1, scheme)])) as Record<Node, string>,
  };
}

/**
 * A replica drill as an execution starts it, around its result: fresh, or where a continuation left it (then what the
 * earlier executions made is registered for undo at once).
 */
export function replicaDrill<S extends ReplicaDrillSpec, R extends ReplicaDrillResult>(
  d: Pick<ReplicaDrill<S, R>, 'runId' | 'scheme' | 'spec' | 'mode' | 'board' | 'result' | 'timeouts'>,
  continued: FailoverContinuation<unknown> | undefined,
): ReplicaDrill<S, R> {
  const { runId, spec, board, timeouts } = d;
  const { client, hostOf } = replicaHosts(runId, d.scheme);
  // Set-up, the rounds, and the archive check.
  const totalSteps = 3 + spec.rounds;
  const drill: ReplicaDrill<S, R> = {
    ...d,
    undo: new UndoStack(),
    hostOf,
    client,
    allHosts: [client, ...NODES.map((n) => hostOf[n])],
    calls: (node) => hostCalls(hostOf[node], timeouts),
    clientCalls: hostCalls(client, timeouts),
    settings: { server: drillLabSettings(spec), user: userPostgresSettings(spec.postgres.settings) },
    state: continued
      ? { ...resumedState(spec, continued), records: continued.records, primary: continued.primary, standbys: continued.standbys }
      : { records: {} as Record<Node, HostRecord>, peers: [], primary: 'n1', standbys: ['n2', 'n3'], archiving: null },
    progress: (step, done, hostId = client) => {
      board.step(hostId, step);
      board.setPercent((100 * done) / totalSteps);
    },
  };
  if (continued) registerUndo(drill);
  return drill;
}

/**
 * Everything the drill makes, before the first of it is made: the store (unless kept), then every host, so the hosts
 * are undone first (they archive into the store).
 */
function registerUndo(d: ReplicaDrill): void {
  const { backup } = d.spec;
  if (backup.enabled && !backup.keep) d.undo.backupStore(d.runId, backup.store);
  d.undo.hosts(d.spec.provider, d.allHosts);
}

/** Provisions (or, for a killed one, starts again) hosts of the drill, waiting for their agents. */
export function provisionDrillHosts(d: ReplicaDrill, hostIds: string[]): Promise<HostRecord[]> {
  const shape = drillHostShape(d.spec, d.runId, NODE_VOLUME_BYTES);
  const requests = hostIds.map((hostId) => hostRequest(d.spec, d.runId, hostId, hostId === d.client ? 'client' : 'node', shape));
  return provisionHosts(d.undo, d.spec.provider, requests, d.timeouts);
}

/** Where a node's Postgres listens, as the other hosts reach it. */
export function address(d: ReplicaDrill, node: Node): DrillNode {
  const r = d.state.records[node];
  return { node, host: r.postgres.host, port: r.postgres.port };
}

/** A node's configuration: the drill's settings, its peers, and archiving through the tool when the archive is on. */
export function nodeConfig(d: ReplicaDrill): Omit<ConfigurePostgresInput, 'hostId'> {
  const archiving = d.state.archiving ? { archiving: { archiveTimeoutSeconds: d.spec.backup.archiveTimeoutSeconds } } : {};
  return { ...d.settings, replicationPeers: d.state.peers, ...archiving };
}

/**
 * Provisions the client and the three nodes, then a primary and two streaming standbys (the quorum once both stream),
 * every node archiving to the drill's store, and a base backup of the primary.
 */
export async function setUpCluster(d: ReplicaDrill): Promise<void> {
  const { spec, runId, state } = d;
  d.progress('provision', 0);
  registerUndo(d);
  const store = spec.backup.enabled ? await providerCalls.prepareBackupStore({ runId, store: spec.backup.store, keep: spec.backup.keep, owner: currentClaimant() }) : null;
  const [clientRecord, ...nodeRecords] = await provisionDrillHosts(d, d.allHosts);
  NODES.forEach((n, i) => (state.records[n] = nodeRecords[i]));
  // Peers on other machines (AWS) may connect for replication, pg_rewind and the writer; 127.0.0.1 already may.
  state.peers = [...new Set([clientRecord, ...nodeRecords].map((r) => r.postgres.host).filter((h) => h !== '127.0.0.1'))];
  if (store) {
    // Each node's own tool config (its paths), written before its server starts with archive_command pointing there.
    const { tool, compression } = spec.backup;
    const configured = await Promise.all(NODES.map((n) => d.calls(n).setup.configureBackups({ hostId: d.hostOf[n], store, tool, compression })));
    state.archiving = { store, tool };
    const backupTool = { name: configured[0].tool, version: configured[0].version };
    d.result.archive = { backupStore: backupStoreLocation(store), backupTool, backup: null, throughSegment: null, timeline: null, check: null };
  }
  await startReplication(d);
}

/** The primary with its ledger, two standbys cloned from it, the quorum once both stream, then the base backup. */
async function startReplication(d: ReplicaDrill): Promise<void> {
  const { hostOf, state } = d;
  const { primary, standbys } = state;
  const calls = d.calls(primary);
  d.progress('replication', 1, hostOf.n1);
  d.result.postgresVersion = (await calls.setup.configurePostgres({ hostId: hostOf[primary], ...nodeConfig(d) })).postgresVersion;
  if (state.archiving) await calls.setup.initBackupRepository({ hostId: hostOf[primary], store: state.archiving.store, tool: state.archiving.tool });
  await calls.setup.createFailoverLedger({ hostId: hostOf[primary] });
  await Promise.all(
    standbys.map(async (n) => {
      await d.calls(n).setup.cloneStandby({ hostId: hostOf[n], primary: address(d, primary), node: n });
      await d.calls(n).setup.configurePostgres({ hostId: hostOf[n], ...nodeConfig(d) });
    }),
  );
  // The quorum is set once both standbys stream: with no standby yet, every commit would wait.
  await calls.setup.setReplication({ hostId: hostOf[primary], primary: null, node: primary, synchronousStandbys: quorumNodes(d.mode, standbys) });
  await calls.measure.waitForStandbys({ hostId: hostOf[primary], nodes: standbys, sync: d.mode === 'sync', timeoutSeconds: STANDBY_WAIT_SECONDS });
  if (state.archiving) {
    const { store, tool } = state.archiving;
    d.result.archive!.backup = await calls.setup.takeBackup.executeWithOptions(
      { summary: `full base backup of the primary ${primary} with ${tool}: where the archive check starts` },
      [{ hostId: hostOf[primary], store, tool, kind: 'full' }],
    );
  }
}

/**
 * A replica drill's plan: set-up (a fresh execution only), the rounds from where a continuation left off, continuing
 * as new every ROUNDS_PER_EXECUTION rounds (`continueWith` calls continueAsNew with the workflow's own type), then the
 * archive check.
 */
export async function playReplicaDrill<Round>(
  d: ReplicaDrill<ReplicaDrillSpec, ReplicaDrillResult & Pick<FailoverContinuation<Round>, 'startedAt' | 'rounds'>>,
  continued: FailoverContinuation<Round> | undefined,
  playRound: (round: number) => Promise<void>,
  continueWith: (next: FailoverContinuation<Round>) => Promise<never>,
): Promise<void> {
  const first = continued?.nextRound ?? 1;
  if (!continued) await setUpCluster(d);
  for (let round = first; round <= d.spec.rounds; round++) {
    if (round > first && (round - first) % ROUNDS_PER_EXECUTION === 0)
      await continueWith(continuation(d.state, d.result, round));
    await playRound(round);
  }
  if (d.spec.backup.enabled) await checkArchive(d);
}

/**
 * After the rounds: the final primary closes its segment and archives it; then the tool checks the archive through
 * that segment, back across every timeline to the base backup. A gap or a wrong timeline fails the drill.
 */
export async function checkArchive(d: ReplicaDrill): Promise<void> {
  const { spec, hostOf, state } = d;
  const { store, tool } = state.archiving!;
  const primary = state.primary;
  const calls = d.calls(primary);
  d.progress(`archive check (${tool})`, 1 + spec.rounds, hostOf[primary]);
  const closed = await calls.measure.archiveCurrentSegment({ hostId: hostOf[primary], timeoutSeconds: ARCHIVE_WAIT_SECONDS });
  const check = await calls.measure.checkRepository.executeWithOptions(
    { summary: `${tool} checks the archive through ${closed.segment}, across the drill's timelines` },
    [{ hostId: hostOf[primary], store, tool, throughSegment: closed.segment }],
  );
  const archive = d.result.archive!;
  archive.throughSegment = closed.segment;
  archive.timeline = parseSegmentName(closed.segment)?.timeline ?? null;
  archive.check = repositoryVerification(tool, check);
  if (!check.ok) throw ApplicationFailure.nonRetryable(`archive check: ${check.detail}`, FAILURE_TYPES.verification);
}

/** The headline figures from the rounds, then the one line a person reads first. */
export function concludeFailoverDrill(r: FailoverDrillResult, failure: string | undefined): void {
  const rtos = r.rounds.map((x) => x.rtoSeconds).filter((x): x is number => x !== null);
  const s = (r.summary = {
    rounds: r.rounds.length,
    lostCommits: Math.max(0, ...r.rounds.map((x) => x.lostCommits)),
    rtoSecondsMedian: rtos.length ? Math.round(median(rtos)! * 1000) / 1000 : null,
    rtoSecondsMax: rtos.length ? Math.max(...rtos) : null,
  });
  const archived = r.archive?.check?.ok ? `; archive continuous through ${r.archive.throughSegment} (${r.archive.backupTool.name})` : '';
  const figures = `${s.rounds} failover${s.rounds === 1 ? '' : 's'}, ${s.lostCommits} acknowledged commits lost, RTO median ${s.rtoSecondsMedian ?? '–'} s (max ${s.rtoSecondsMax ?? '–'} s)${archived}`;
  if (failure !== undefined) r.verdict = `${r.status}: ${failure.split('\n')[0]} (${figures})`;
  else
    r.verdict =
      r.mode === 'sync'
        ? `passed: ${figures} under synchronous_standby_names = ANY 1`
        : `passed (async, for contrast): ${figures}; without synchronous standbys acknowledged commits can be lost`;
}

/** The summary's headline figures. */
export function failoverDrillFigures(r: FailoverDrillResult): DrillSummary['figures'] {
  return {
    tool: r.archive?.backupTool.name ?? null,
    toolVersion: r.archive?.backupTool.version ?? null,
    archiveThrough: r.archive?.check?.ok ? r.archive.throughSegment : null,
    rounds: r.summary.rounds,
    lostCommits: r.summary.lostCommits,
    rtoSecondsMedian: r.summary.rtoSecondsMedian,
    rtoSecondsMax: r.summary.rtoSecondsMax,
  };
}
