/**
 * The failover drill: a primary and two standbys on separate hosts, streaming replication, and in "sync" mode
 * synchronous_commit = on with synchronous_standby_names = 'ANY 1 (<both standbys>)'. Each round a writer on a
 * client host of its own commits ledger rows and records every acknowledged id on that host; the primary host is
 * killed (kill -9 of everything on it: postmaster and agent); the standby that received the most WAL is promoted,
 * the other is repointed to it, and the writer finds the new primary. The round measures write downtime (last
 * acknowledged commit before the kill to the first after it: the RTO) and counts acknowledged ids missing on the new
 * primary (0 under ANY 1; "async" mode shows the contrast). The old primary rejoins with pg_rewind for the next round.
 * As in the reference's production pattern, the primary archives its WAL continuously through the backup tool (the
 * backup section) to a store of the drill's own, above a base backup taken once the cluster is up; each new primary
 * goes on archiving on its new timeline; after the rounds the tool checks the archive across every timeline (WAL-G:
 * wal-verify integrity timeline). Standbys archive nothing (archive_mode = on): with archive_mode = always each one
 * also pushes the old timeline's last, partly written segment under its full name when it follows a new primary, and
 * those copies differ, so a shared store refuses all but one and that node's archiver is stuck (seen here with WAL-G).
 * Results are saved, then every host (and the store) is torn down in a non-cancellable scope. One object argument: {"preset":"ci"}.
 */
import { ApplicationFailure, continueAsNew, sleep } from '@temporalio/workflow';
import { z } from 'zod';
import type { DrillNode, runFailoverWriter } from '../activities/host/failover-writer';
import type { ConfigurePostgresInput } from '../activities/host/postgres';
import { BACKUP_TOOLS, backupStoreLocation, type BackupToolName, type ResolvedBackupStore } from '../common/input/backup-store';
import {
  drillResultHead,
  repositoryVerification,
  type DrillSummary,
  type FailoverArchive,
  type FailoverDrillResult,
  type FailoverRound,
  type StandbyPosition,
} from '../common/results/drill-result';
import { drillLabSettings, resolveFailoverDrill, type DrillInput, type FailoverDrillSpec } from '../common/input/drill-spec';
import { FAILURE_TYPES } from '../common/core/errors';
import { hostIdFor, runFolderName, segmentProblem } from '../common/core/ids';
import { hostTaskQueue } from '../common/core/names';
import { STORAGE_KINDS } from '../common/input/spec';
import { compareLsn, parseSegmentName } from '../common/core/lsn';
import { synchronousStandbyNames, userPostgresSettings, type LabServerSettings } from '../common/input/postgres-settings';
import { median } from '../common/core/stats';
import type { HostRecord } from '../common/core/hosts';
import { failoverDrillBounds, type HostTimeouts } from '../common/input/bounds';
import { runCompensated } from './compensation';
import { checkedWorkflowId, continuationAtDoor } from './doors';
import { drillHostRequest, finishDrill, provisionAndWait, teardownAll } from './drill-hosts';
import { failureMessage } from './failures';
import { ProgressBoard } from './progress';
import { hostCalls, preflightCalls, providerCalls, resultCalls } from './proxies';
import { acceptInput, drillSearchAttributes, preflightOrFail } from './search-attributes';

type WriterResult = Awaited<ReturnType<typeof runFailoverWriter>>;

const NODES = ['n1', 'n2', 'n3'] as const;
type Node = (typeof NODES)[number];

/** Ids of round r start here, so no two rounds share one. */
const IDS_PER_ROUND = 1_000_000_000;
/** Bound on a standby catching up after it was cloned, repointed or rewound. */
const STANDBY_WAIT_SECONDS = 120;
/** Bound on the final primary archiving the segment it just closed: one push to the store, seconds normally. */
const ARCHIVE_WAIT_SECONDS = 120;

/** The standby to promote: the one that received the most WAL, then replayed the most, then the first. */
export function mostAdvanced(positions: StandbyPosition[]): StandbyPosition {
  const lsn = (v: string | null) => v ?? '0/0';
  return [...positions].sort(
    (a, b) => compareLsn(lsn(b.receiveLsn), lsn(a.receiveLsn)) || compareLsn(lsn(b.replayLsn), lsn(a.replayLsn)),
  )[0];
}

/** The standbys a primary's commits wait for (any one of them): its standbys in sync mode, none in async mode. */
function quorumNodes(mode: FailoverDrillSpec['mode'], standbys: string[]): string[] {
  return mode === 'sync' ? standbys : [];
}

/** synchronous_standby_names of a primary whose standbys are `standbys` ('' in async mode). */
export function quorumOf(mode: FailoverDrillSpec['mode'], standbys: string[]): string {
  return synchronousStandbyNames(quorumNodes(mode, standbys));
}

/** Rounds per workflow execution: the drill continues as new after this many, so its history stays bounded. */
export const ROUNDS_PER_EXECUTION = 10;

/** The drill's archive between executions: its store and the tool every node archives with (each host writes its own commands). */
interface Archiving {
  store: ResolvedBackupStore;
  tool: BackupToolName;
}

/** Where the drill stands between executions (continue-as-new): the hosts, the roles, the archive, the rounds so far. */
export interface FailoverContinuation {
  startedAt: string;
  postgresVersion: string | null;
  records: Record<Node, HostRecord>;
  /** Addresses of the other hosts (the client and the nodes) that connect over TCP, beyond loopback. */
  peers: string[];
  primary: Node;
  standbys: Node[];
  /** Null when backup.enabled is false. */
  archiving: Archiving | null;
  archive: FailoverArchive | null;
  rounds: FailoverRound[];
  nextRound: number;
}

/** Everything a round needs: the spec, the hosts, their proxies and the drill's record. */
interface Drill {
  spec: FailoverDrillSpec;
  runId: string;
  board: ProgressBoard;
  result: FailoverDrillResult;
  hostOf: Record<Node, string>;
  client: string;
  calls: (node: Node) => ReturnType<typeof hostCalls>;
  clientCalls: ReturnType<typeof hostCalls>;
  /** Every node's server settings: the lab's and the spec's, apart (the host checks both). */
  settings: { server: LabServerSettings; user: Record<string, string> };
  timeouts: HostTimeouts;
  state: Omit<FailoverContinuation, 'startedAt' | 'postgresVersion' | 'archive' | 'rounds' | 'nextRound'>;
  progress: (phase: string, done: number, hostId?: string) => void;
}

/** pg_hba lines that let the drill's peers on other machines (AWS) connect over TCP, with a password. */
export function peerHbaLines(addresses: string[]): string[] {
  return [...new Set(addresses)].flatMap((h) => [`host all all ${h}/32 scram-sha-256`, `host replication all ${h}/32 scram-sha-256`]);
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** An IPv4 address, or an IPv6 one (hex groups and colons, an IPv4 tail allowed); the host checks each again. */
const IP_ADDRESS = /^(?:(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}|(?=[^:]*:)[0-9A-Fa-f:.]{2,45})$/;
/** A word archive_command holds unquoted: what the backup tools' own commands are made of. */
const SHELL_WORD = /^[\w@%+=:,./-]+$/;
const Text = z.string().max(1_000).regex(/^[^\u0000-\u001f\u007f]*$/, { error: 'must not hold control characters' });

/** An absolute path of safe segments (no `.`, `..`, empty or control characters) that ends with `tail`. */
function safePathEndingWith(p: string, tail: string): boolean {
  return p.startsWith('/') && p.endsWith(tail) && p.slice(1).split('/').every((s) => segmentProblem(s) === null);
}

/**
 * Whether an archive_command is the one the backup tool configured on this host: WAL-G's wal-push with the host's
 * own walg.json, or pgBackRest's archive-push with the host's own pgbackrest.conf; every word plain (no quoting, no
 * shell syntax).
 */
export function isToolArchiveCommand(command: string, hostId: string): boolean {
  const words = command.split(' ');
  if (!words.every((w) => SHELL_WORD.test(w))) return false;
  const [bin, a, b, c, d] = words;
  if (words.length !== 5) return false;
  if (a === '--config' && c === 'wal-push' && d === '%p')
    return safePathEndingWith(bin, '/wal-g') && safePathEndingWith(b, `/${hostId}/wal-g/walg.json`);
  return (
    bin === 'pgbackrest' && a.startsWith('--config=') && safePathEndingWith(a.slice('--config='.length), `/${hostId}/pgbackrest/pgbackrest.conf`) &&
    b === '--stanza=storage-lab' && c === 'archive-push' && d === '%p'
  );
}

/**
 * What a continuation must look like: the hosts this run's ids name, on loopback locally (or an IPv4 address on AWS),
 * their peers as IP addresses (none locally), the drill's own backup tool archiving to this run's store, and rounds
 * that all passed. A continuation written before peers and tools were carried (pg_hba lines, each node's archiving
 * settings) is still read, and checked as strictly, so a drill in flight goes on across the change. `spec` is null when the input itself is invalid (then acceptInput refuses the run).
 */
export function failoverContinuationSchema(runId: string, spec: FailoverDrillSpec | null) {
  const hostOf = (n: Node) => hostIdFor(runId, 'node', NODES.indexOf(n) + 1);
  const limit = z.number().int().nonnegative().nullable();
  const record = (n: Node) =>
    z
      .object({
        hostId: z.literal(hostOf(n)),
        runId: z.literal(runId),
        provider: z.enum(['local', 'aws']),
        className: z.literal('node'),
        kind: z.enum(STORAGE_KINDS),
        taskQueue: z.literal(hostTaskQueue(hostOf(n))),
        emulated: z.boolean(),
        emulationNote: Text.optional(),
        limits: z.object({ iops: limit, throughputMiBps: limit, memoryLimitMiB: limit }).strict(),
        postgres: z.object({ host: z.string().regex(IPV4, { error: 'must be an IPv4 address' }), port: z.number().int().min(1).max(65_535) }).strict(),
        instanceId: z.string().regex(/^i-[0-9a-f]{8,32}$/).optional(),
      })
      .strict();
  const runFolder = runFolderName(runId);
  const storePath = z.string().refine((p) => safePathEndingWith(p, `/${runFolder}`), { error: `must be an absolute path of plain folder names ending with /${runFolder}` });
  const store = z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('folder'), path: storePath }).strict(),
    z
      .object({
        kind: z.literal('s3'),
        bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { error: 'must be an S3 bucket name' }),
        path: storePath,
        region: z.string().regex(/^[a-z0-9-]{1,40}$/),
        endpoint: z.url().optional(),
      })
      .strict(),
  ]);
  const archiveSettings = (n: Node) =>
    z
      .object({
        archive_mode: z.literal('on'),
        archive_command: z
          .string()
          .refine((c) => isToolArchiveCommand(c, hostOf(n)), { error: `must be the backup tool's own archive command for host ${hostOf(n)}` })
          .optional(),
        archive_timeout: z.string().regex(/^\d{1,5}s$/).optional(),
      })
      .strict();
  const node = z.enum(NODES);
  return z
    .object({
      startedAt: z.iso.datetime(),
      postgresVersion: Text.nullable(),
      records: z.object({ n1: record('n1'), n2: record('n2'), n3: record('n3') }).strict(),
      peers: z.array(z.string().regex(IP_ADDRESS, { error: 'must be an IP address' })).max(8).optional(),
      /** Continuations written before `peers`: the pg_hba lines for them (a drill in flight across the change). */
      hbaLines: z.array(Text).max(8).optional(),
      primary: node,
      standbys: z.array(node).min(1).max(2),
      archiving: z
        .object({
          store,
          tool: z.enum(BACKUP_TOOLS).optional(),
          /** Continuations written before `tool`: each node's archiving settings, as its host wrote them. */
          settings: z.object({ n1: archiveSettings('n1'), n2: archiveSettings('n2'), n3: archiveSettings('n3') }).strict().optional(),
        })
        .strict()
        .nullable(),
      archive: z
        .object({
          backupStore: Text,
          backupTool: z.object({ name: Text, version: Text }).strict(),
          backup: z.record(z.string(), z.union([Text, z.number(), z.null()])).nullable(),
          throughSegment: z.null(),
          timeline: z.null(),
          check: z.null(),
        })
        .strict()
        .nullable(),
      rounds: z.array(z.looseObject({ round: z.number().int().min(1), ok: z.literal(true), lostCommits: z.number().int().nonnegative() })),
      nextRound: z.number().int().min(ROUNDS_PER_EXECUTION + 1),
    })
    .strict()
    .superRefine((c, ctx) => {
      const add = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
      if (c.standbys.includes(c.primary) || new Set(c.standbys).size !== c.standbys.length)
        add(['standbys'], `must name other nodes than the primary (${c.primary}), each once`);
      if ((c.nextRound - 1) % ROUNDS_PER_EXECUTION !== 0 || c.rounds.length !== c.nextRound - 1 || c.rounds.some((r, i) => r.round !== i + 1))
        add(['nextRound'], `a run continues after every ${ROUNDS_PER_EXECUTION} rounds, carrying each of them in order`);
      if ((c.peers === undefined) === (c.hbaLines === undefined)) add(['peers'], 'give the peers (or, from a run continued before them, hbaLines), not both');
      const addresses = (c.hbaLines ?? []).map((line) => line.split(/\s+/).map((w) => w.split('/')[0]).find((w) => IPV4.test(w)) ?? '');
      if (c.hbaLines && JSON.stringify(peerHbaLines(addresses)) !== JSON.stringify(c.hbaLines))
        add(['hbaLines'], 'must be the lines the drill writes for its peers, one IPv4 address each');
      if (c.archiving && (c.archiving.tool === undefined) === (c.archiving.settings === undefined))
        add(['archiving'], 'give the backup tool (or, from a run continued before it, the settings), not both');
      if (!spec) return;
      if (c.archiving?.tool !== undefined && c.archiving.tool !== spec.backup.tool) add(['archiving', 'tool'], `must be the drill's backup.tool, ${spec.backup.tool}`);
      const records = Object.values(c.records);
      if (records.some((r) => r.provider !== spec.provider)) add(['records'], `every host must come from provider ${spec.provider}`);
      if (spec.provider === 'local' && records.some((r) => r.postgres.host !== '127.0.0.1')) add(['records'], 'local hosts listen on 127.0.0.1 only');
      if (spec.provider === 'local' && (c.peers?.length || c.hbaLines?.length)) add([c.peers ? 'peers' : 'hbaLines'], 'local hosts reach each other on 127.0.0.1: no peers');
      if (c.nextRound > spec.rounds) add(['nextRound'], `beyond the drill's ${spec.rounds} rounds`);
      if ((c.archiving === null) !== !spec.backup.enabled) add(['archiving'], `must be ${spec.backup.enabled ? 'set: backup.enabled is true' : 'null: backup.enabled is false'}`);
    });
}

/** The drill spec of an input, or null when it is invalid (acceptInput then refuses the run, naming every problem). */
function specOrNull(input: unknown): FailoverDrillSpec | null {
  try {
    return resolveFailoverDrill(input ?? {});
  } catch {
    return null;
  }
}

export async function failoverDrillWorkflow(input: DrillInput = {}, rawContinued?: FailoverContinuation): Promise<DrillSummary> {
  const runId = checkedWorkflowId();
  // The continuation's schema depends on the input: built only when there is one to check.
  const continued =
    rawContinued == null
      ? undefined
      : continuationAtDoor(failoverContinuationSchema(runId, specOrNull(input)) as unknown as z.ZodType<FailoverContinuation>, rawContinued, 'continued');
  const spec = acceptInput(resolveFailoverDrill, input, drillSearchAttributes);
  // Settings by the real server, sizes against this environment: before any host exists (once, not per continuation).
  if (!continued) await preflightOrFail(preflightCalls.preflightDrill({ kind: 'failover', spec }));
  const board = new ProgressBoard(`Failover drill ${runId}`, runId);
  const provider = spec.provider;
  const timeouts = failoverDrillBounds(spec);
  const client = hostIdFor(runId, 'client', 0);
  const hostOf = Object.fromEntries(NODES.map((n, i) => [n, hostIdFor(runId, 'node', i + 1)])) as Record<Node, string>;
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
  // Set-up, the rounds, and the archive check.
  const totalSteps = 3 + spec.rounds;
  const drill: Drill = {
    spec,
    runId,
    board,
    result,
    hostOf,
    client,
    calls: (node) => hostCalls(hostOf[node], timeouts),
    clientCalls: hostCalls(client, timeouts),
    settings: { server: drillLabSettings(spec), user: userPostgresSettings(spec.postgres.settings) },
    timeouts,
    state: continued
      ? { ...resumedState(spec, continued), records: continued.records, primary: continued.primary, standbys: continued.standbys }
      : { records: {} as Record<Node, HostRecord>, peers: [], primary: 'n1', standbys: ['n2', 'n3'], archiving: null },
    progress: (phase, done, hostId = client) => {
      board.step(hostId, phase);
      board.setPercent((100 * done) / totalSteps);
    },
  };
  const allHosts = [client, ...NODES.map((n) => hostOf[n])];

  const outcome = await runCompensated(
    board,
    async () => {
      const first = continued?.nextRound ?? 1;
      if (!continued) await setUpCluster(drill, allHosts);
      for (let round = first; round <= spec.rounds; round++) {
        if (round > first && (round - first) % ROUNDS_PER_EXECUTION === 0)
          await continueAsNew<typeof failoverDrillWorkflow>(input, {
            ...drill.state,
            startedAt: result.startedAt,
            postgresVersion: result.postgresVersion,
            archive: result.archive,
            rounds: result.rounds,
            nextRound: round,
          });
        await failoverRound(drill, round);
      }
      if (spec.backup.enabled) await checkArchive(drill);
      result.status = 'passed';
    },
    {
      failed(err, status) {
        result.status = status;
        result.errors.push(failureMessage(err));
      },
      async save() {
        summarise(result);
        result.verdict = verdictOf(result, result.errors[0]);
        board.setPhase('save results');
        result.finishedAt = new Date().toISOString();
        return resultCalls.saveDrillResult({ runId, result });
      },
      async teardown() {
        board.setPhase('teardown');
        const errors = await teardownAll(provider, allHosts);
        if (spec.backup.enabled && !spec.backup.keep)
          await providerCalls.removeBackupStore({ runId, store: spec.backup.store }).catch((err) => errors.push(failureMessage(err)));
        board.setPercent(100);
        return errors;
      },
    },
  );
  return finishDrill(board, outcome, 'failover-drill', runId, result, {
    tool: result.archive?.backupTool.name ?? null,
    toolVersion: result.archive?.backupTool.version ?? null,
    archiveThrough: result.archive?.check?.ok ? result.archive.throughSegment : null,
    rounds: result.summary.rounds,
    lostCommits: result.summary.lostCommits,
    rtoSecondsMedian: result.summary.rtoSecondsMedian,
    rtoSecondsMax: result.summary.rtoSecondsMax,
  });
}

/** A continuation written before peers and the archive's tool were typed: its pg_hba lines name the peers. */
export type LegacyContinuation = Partial<Pick<FailoverContinuation, 'peers'>> & { hbaLines?: string[]; archiving: { store: ResolvedBackupStore; tool?: BackupToolName } | null };

/** The peers and the archive of a continuation, of either shape (a drill in flight continues across the change). */
export function resumedState(spec: FailoverDrillSpec, continued: FailoverContinuation | LegacyContinuation): Pick<FailoverContinuation, 'peers' | 'archiving'> {
  const legacy = continued as LegacyContinuation;
  const peers = legacy.peers ?? [...new Set((legacy.hbaLines ?? []).map((line) => line.split(/\s+/)[3]?.replace(/\/\d+$/, '') ?? ''))].filter(Boolean);
  const archiving = legacy.archiving ? { store: legacy.archiving.store, tool: legacy.archiving.tool ?? spec.backup.tool } : null;
  return { peers, archiving };
}

/** A node's configuration: the drill's settings, its peers, and archiving through the tool when the archive is on. */
function nodeConfig(d: Drill): Omit<ConfigurePostgresInput, 'hostId'> {
  const archiving = d.state.archiving ? { archiving: { archiveTimeoutSeconds: d.spec.backup.archiveTimeoutSeconds } } : {};
  return { ...d.settings, replicationPeers: d.state.peers, ...archiving };
}

/**
 * Provisions the client and the three nodes, then a primary and two streaming standbys (the quorum once both stream),
 * every node archiving to the drill's store, and a base backup of the primary.
 */
async function setUpCluster(d: Drill, allHosts: string[]): Promise<void> {
  const { spec, runId, hostOf, state } = d;
  const { tool, compression } = spec.backup;
  d.progress('provision', 0);
  const store = spec.backup.enabled ? await providerCalls.prepareBackupStore({ runId, store: spec.backup.store, keep: spec.backup.keep }) : null;
  const request = (hostId: string, role: string) => drillHostRequest(spec, runId, hostId, role, 2 * 2 ** 30);
  const [clientRecord, ...nodeRecords] = await Promise.all(
    allHosts.map((hostId) => provisionAndWait(spec.provider, request(hostId, hostId === d.client ? 'client' : 'node'), d.timeouts)),
  );
  NODES.forEach((n, i) => (state.records[n] = nodeRecords[i]));
  // Peers on other machines (AWS) may connect for replication, pg_rewind and the writer; 127.0.0.1 already may.
  state.peers = [...new Set([clientRecord, ...nodeRecords].map((r) => r.postgres.host).filter((h) => h !== '127.0.0.1'))];

  if (store) {
    // Each node's own tool config (its paths), written before its server starts with archive_command pointing there.
    const configured = await Promise.all(
      NODES.map((n) => d.calls(n).setup.configureBackups({ hostId: hostOf[n], store, tool, compression })),
    );
    state.archiving = { store, tool };
    d.result.archive = {
      backupStore: backupStoreLocation(store),
      backupTool: { name: configured[0].tool, version: configured[0].version },
      backup: null,
      throughSegment: null,
      timeline: null,
      check: null,
    };
  }

  d.progress('replication', 1, hostOf.n1);
  const { primary, standbys } = state;
  const pg = await d.calls(primary).setup.configurePostgres({ hostId: hostOf[primary], ...nodeConfig(d) });
  d.result.postgresVersion = pg.postgresVersion;
  if (store) await d.calls(primary).setup.initBackupRepository({ hostId: hostOf[primary], store, tool });
  await d.calls(primary).setup.createFailoverLedger({ hostId: hostOf[primary] });
  await Promise.all(
    standbys.map(async (n) => {
      await d.calls(n).setup.cloneStandby({ hostId: hostOf[n], primary: address(d, primary), node: n });
      await d.calls(n).setup.configurePostgres({ hostId: hostOf[n], ...nodeConfig(d) });
    }),
  );
  // The quorum is set once both standbys stream: with no standby yet, every commit would wait.
  await d.calls(primary).setup.setReplication({ hostId: hostOf[primary], primary: null, node: primary, synchronousStandbys: quorumNodes(spec.mode, standbys) });
  await d.calls(primary).measure.waitForStandbys({ hostId: hostOf[primary], nodes: standbys, sync: spec.mode === 'sync', timeoutSeconds: STANDBY_WAIT_SECONDS });
  if (store)
    d.result.archive!.backup = await d.calls(primary).setup.takeBackup.executeWithOptions(
      { summary: `full base backup of the primary ${primary} with ${tool}: where the archive check starts` },
      [{ hostId: hostOf[primary], store, tool, kind: 'full' }],
    );
}

/**
 * After the rounds: the final primary closes its segment and archives it; then the tool checks the archive through
 * that segment, back across every timeline to the base backup. A gap or a wrong timeline fails the drill.
 */
async function checkArchive(d: Drill): Promise<void> {
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

/** Where a node's Postgres listens, as the other hosts reach it. */
function address(d: Drill, node: Node): DrillNode {
  const r = d.state.records[node];
  return { node, host: r.postgres.host, port: r.postgres.port };
}

/**
 * One round: the writer commits on the primary; the primary host is killed; the most advanced standby is promoted
 * and the other follows it; write downtime and lost acknowledged commits are measured; the old primary rejoins.
 */
async function failoverRound(d: Drill, round: number): Promise<void> {
  const { spec, hostOf, state } = d;
  const { writer } = spec;
  const sync = spec.mode === 'sync';
  const { primary, standbys } = state;
  d.progress(`round ${round}: writing on ${primary}`, round, d.client);
  const writing: Promise<WriterResult> = d.clientCalls.measure.runFailoverWriter.executeWithOptions(
    { summary: `round ${round}: ${writer.connections} writers commit ledger rows on the primary (${primary}) and record every acknowledged id` },
    [
      {
        hostId: d.client,
        round,
        nodes: NODES.map((n) => address(d, n)),
        initialNode: primary,
        connections: writer.connections,
        firstId: round * IDS_PER_ROUND + 1,
        afterSwitchSeconds: writer.afterFailoverSeconds,
        maxOutageSeconds: writer.maxOutageSeconds,
        maxSeconds: d.timeouts.measureSeconds - 600,
      },
    ],
  );
  // A failed writer must not leave this round waiting on its timer.
  writing.catch(() => undefined);
  await sleep(writer.killAfterSeconds * 1000);

  d.progress(`round ${round}: kill ${primary}`, round + 0.2, hostOf[primary]);
  const killedAt = new Date().toISOString();
  await providerCalls.killHost.executeWithOptions({ summary: `round ${round}: kill -9 the primary ${primary} (${hostOf[primary]})` }, [
    { provider: spec.provider, hostId: hostOf[primary] },
  ]);
  const positions: StandbyPosition[] = await Promise.all(
    standbys.map(async (n) => {
      const p = await d.calls(n).measure.standbyPosition({ hostId: hostOf[n] });
      return { hostId: hostOf[n], node: n, receiveLsn: p.receiveLsn, replayLsn: p.replayLsn };
    }),
  );
  const winner = mostAdvanced(positions).node as Node;
  const others = standbys.filter((n) => n !== winner);

  d.progress(`round ${round}: promote ${winner}`, round + 0.4, hostOf[winner]);
  // The other standby follows the winner before the promotion (cascading, then across the new timeline), and
  // the winner's quorum names it and the old primary, so commits after the promotion have a standby to wait for.
  await Promise.all(others.map((n) => d.calls(n).setup.setReplication({ hostId: hostOf[n], primary: address(d, winner), node: n, synchronousStandbys: [] })));
  await d.calls(winner).setup.setReplication({ hostId: hostOf[winner], primary: null, node: winner, synchronousStandbys: quorumNodes(spec.mode, [...others, primary]) });
  const promoted = await d.calls(winner).measure.promoteStandby.executeWithOptions({ summary: `round ${round}: promote ${winner}, the most advanced standby` }, [
    { hostId: hostOf[winner] },
  ]);
  // The new primary archives on its new timeline: it closes its first segment and waits until it is archived, while
  // the writer goes on. Each timeline then also switches in a segment of its own, which wal-verify needs (WAL-G 3.0.8
  // keys timeline switches by segment number, so two failovers within one segment would hide one from its check).
  const [written, archived] = await Promise.all([
    writing,
    state.archiving
      ? d.calls(winner).measure.archiveCurrentSegment.executeWithOptions({ summary: `round ${round}: ${winner} archives its first segment on the new timeline` }, [
          { hostId: hostOf[winner], timeoutSeconds: ARCHIVE_WAIT_SECONDS },
        ])
      : null,
  ]);
  const ledger = await d.clientCalls.measure.countLostCommits({
    hostId: d.client,
    primary: address(d, winner),
    rounds: Array.from({ length: round }, (_, i) => i + 1),
  });
  const entry = roundEntry(d, round, { killed: primary, winner, others, positions, killedAt, promoteSeconds: promoted.seconds, written, ledger, sync });
  if (archived) entry.archivedOnNewTimeline = archived.segment;
  d.result.rounds.push(entry);

  if (spec.rejoin === 'rewind') {
    d.progress(`round ${round}: ${primary} rejoins`, round + 0.7, hostOf[primary]);
    // Provisioning a killed host again starts its agent; its data folder is where the kill left it.
    await provisionAndWait(spec.provider, drillHostRequest(spec, d.runId, hostOf[primary], 'node', 2 * 2 ** 30), d.timeouts);
    const rejoined = await d.calls(primary).setup.rejoinAsStandby.executeWithOptions(
      { summary: `round ${round}: ${primary} rejoins as a standby of ${winner} (pg_rewind)` },
      [{ hostId: hostOf[primary], primary: address(d, winner), node: primary }],
    );
    await d.calls(primary).setup.configurePostgres({ hostId: hostOf[primary], ...nodeConfig(d) });
    await d.calls(winner).measure.waitForStandbys({ hostId: hostOf[winner], nodes: [...others, primary], sync, timeoutSeconds: STANDBY_WAIT_SECONDS });
    entry.oldPrimary = { action: rejoined.action, seconds: rejoined.seconds, detail: rejoined.detail };
    state.standbys = [...others, primary];
  } else state.standbys = others;
  state.primary = winner;
  if (!entry.ok) throw ApplicationFailure.nonRetryable(`round ${round}: ${entry.error}`, FAILURE_TYPES.verification);
}

/** A round's record, and whether it passed: a new primary acknowledged writes, and (sync) no acknowledged commit was lost. */
function roundEntry(
  d: Drill,
  round: number,
  m: {
    killed: Node;
    winner: Node;
    others: Node[];
    positions: StandbyPosition[];
    killedAt: string;
    promoteSeconds: number;
    written: WriterResult;
    ledger: { lost: number; lostSample: number[]; acknowledged: number; inDoubtPresent: number };
    sync: boolean;
  },
): FailoverRound {
  const { hostOf } = d;
  const { written, ledger } = m;
  const problems: string[] = [];
  if (written.outageSeconds === null)
    problems.push(
      written.lastAckBeforeKillAt === null
        ? `the writer had no acknowledged commit on ${m.killed} before the kill; raise writer.killAfterSeconds`
        : `no write was acknowledged on a new primary (${written.stopReason})`,
    );
  else if (written.newPrimaryNode !== m.winner) problems.push(`the writer's new primary was ${written.newPrimaryNode}, not the promoted ${m.winner}`);
  if (m.sync && ledger.lost > 0) problems.push(`${ledger.lost} acknowledged commits missing on ${m.winner} (first ids ${ledger.lostSample.join(', ')})`);
  return {
    round,
    killedHost: hostOf[m.killed],
    killedNode: m.killed,
    killedAt: m.killedAt,
    standbys: m.positions,
    promotedHost: hostOf[m.winner],
    promotedNode: m.winner,
    repointedHost: m.others.map((n) => hostOf[n]).join(', '),
    promoteSeconds: m.promoteSeconds,
    writer: {
      acknowledged: written.acknowledged,
      failedWrites: written.failedWrites,
      inDoubt: written.inDoubt,
      lastAckBeforeKillAt: written.lastAckBeforeKillAt,
      firstAckAfterAt: written.firstAckAfterAt,
      newPrimaryNode: written.newPrimaryNode,
      outageSeconds: written.outageSeconds,
    },
    rtoSeconds: written.outageSeconds,
    lostCommits: ledger.lost,
    lostSample: ledger.lostSample,
    acknowledgedTotal: ledger.acknowledged,
    inDoubtPresent: ledger.inDoubtPresent,
    oldPrimary: { action: 'left down', seconds: null, detail: 'rejoin is "none"' },
    ok: problems.length === 0,
    ...(problems.length ? { error: problems.join('; ') } : {}),
  };
}

/** The drill's headline figures from its rounds. */
function summarise(result: FailoverDrillResult): void {
  const rtos = result.rounds.map((r) => r.rtoSeconds).filter((x): x is number => x !== null);
  result.summary = {
    rounds: result.rounds.length,
    lostCommits: Math.max(0, ...result.rounds.map((r) => r.lostCommits)),
    rtoSecondsMedian: rtos.length ? Math.round(median(rtos)! * 1000) / 1000 : null,
    rtoSecondsMax: rtos.length ? Math.max(...rtos) : null,
  };
}

/** The one line a person reads first. */
function verdictOf(r: FailoverDrillResult, failure: string | undefined): string {
  const s = r.summary;
  const archived = r.archive?.check?.ok ? `; archive continuous through ${r.archive.throughSegment} (${r.archive.backupTool.name})` : '';
  const figures = `${s.rounds} failover${s.rounds === 1 ? '' : 's'}, ${s.lostCommits} acknowledged commits lost, RTO median ${s.rtoSecondsMedian ?? '–'} s (max ${s.rtoSecondsMax ?? '–'} s)${archived}`;
  if (failure !== undefined) return `${r.status}: ${failure.split('\n')[0]} (${figures})`;
  return r.mode === 'sync'
    ? `passed: ${figures} under synchronous_standby_names = ANY 1`
    : `passed (async, for contrast): ${figures}; without synchronous standbys acknowledged commits can be lost`;
}
