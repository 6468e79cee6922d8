/**
 * The failover drill between executions: what it carries when it continues as new (every ROUNDS_PER_EXECUTION rounds,
 * so its history stays bounded), and the door that checks a carried continuation: only in a run the lab continued,
 * in its shape, naming this run's hosts, addresses and store, and rounds that all passed.
 */
import { z } from 'zod';
import { hostFolderName, hostIdFor, legacyRunFolderName, nameSchemeOf, runFolderName, segmentProblem, type NameScheme } from '../common/core/ids';
import type { HostRecord } from '../common/core/hosts';
import { hostTaskQueue } from '../common/core/names';
import { BACKUP_TOOLS, type BackupToolName, type ResolvedBackupStore } from '../common/input/backup-store';
import { resolveFailoverDrill, type DrillInput, type ReplicaDrillSpec } from '../common/input/drill-spec';
import { STORAGE_KINDS } from '../common/input/spec';
import { isInstanceId, PROVIDER_NAMES, providerOf } from '../common/providers/registry';
import type { FailoverArchive, FailoverRound } from '../common/results/drill-result';
import { continuationAtDoor } from './doors';

/** The drill's database nodes; n1 is the first primary. */
export const NODES = ['n1', 'n2', 'n3'] as const;
export type Node = (typeof NODES)[number];

/** Rounds per workflow execution: the drill continues as new after this many, so its history stays bounded. */
export const ROUNDS_PER_EXECUTION = 10;

/** The drill's archive between executions: its store and the tool every node archives with (each host writes its own commands). */
export interface Archiving {
  store: ResolvedBackupStore;
  tool: BackupToolName;
}

/**
 * Where a replica drill (failover, partition) stands between executions (continue-as-new): the hosts, the roles, the
 * archive, the rounds so far.
 */
export interface FailoverContinuation<Round = FailoverRound> {
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
  rounds: Round[];
  nextRound: number;
}

/**
 * The continuation a run carries, checked at the door; undefined when it was started with its input only. `resolve`
 * is the drill's own spec resolver (the failover drill's by default).
 */
export function continuedAtDoor<Round = FailoverRound>(
  runId: string,
  input: DrillInput,
  raw: unknown,
  resolve: (input: unknown) => ReplicaDrillSpec = resolveFailoverDrill,
): FailoverContinuation<Round> | undefined {
  // The continuation's schema depends on the input: built only when there is one to check.
  if (raw == null) return undefined;
  return continuationAtDoor(failoverContinuationSchema(runId, specOrNull(input, resolve)) as unknown as z.ZodType<FailoverContinuation<Round>>, raw, 'continued');
}

/** The drill spec of an input, or null when it is invalid (acceptInput then refuses the run, naming every problem). */
function specOrNull(input: unknown, resolve: (input: unknown) => ReplicaDrillSpec): ReplicaDrillSpec | null {
  try {
    return resolve(input ?? {});
  } catch {
    return null;
  }
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
  // The host's folder (its id, or a hash of it: common/core/ids.ts hostFolderName) holds the tool's config.
  const folder = hostFolderName(hostId);
  if (a === '--config' && c === 'wal-push' && d === '%p')
    return safePathEndingWith(bin, '/wal-g') && safePathEndingWith(b, `/${folder}/wal-g/walg.json`);
  return (
    bin === 'pgbackrest' && a.startsWith('--config=') && safePathEndingWith(a.slice('--config='.length), `/${folder}/pgbackrest/pgbackrest.conf`) &&
    b === '--stanza=storage-lab' && c === 'archive-push' && d === '%p'
  );
}

/** A node's host id in run `runId`, of a naming scheme (workflows/names.ts). */
function nodeHostId(runId: string, n: Node, scheme: NameScheme): string {
  return hostIdFor(runId, 'node', NODES.indexOf(n) + 1, scheme);
}

/** Both schemes' host ids of a node: a drill continued from before collision-proof names carries the old ones. */
const SCHEMES: NameScheme[] = ['sha256', 'fnv32'];

/** A node's host record as the provider made it: this run's host id (of either scheme) and its task queue, an IPv4 address. */
export function hostRecordSchema(runId: string, n: Node) {
  const limit = z.number().int().nonnegative().nullable();
  const ids = SCHEMES.map((scheme) => nodeHostId(runId, n, scheme)) as [string, string];
  return z
    .object({
      hostId: z.enum(ids),
      runId: z.literal(runId),
      provider: z.enum(PROVIDER_NAMES),
      className: z.literal('node'),
      kind: z.enum(STORAGE_KINDS),
      taskQueue: z.enum(ids.map(hostTaskQueue) as [string, string]),
      emulated: z.boolean(),
      emulationNote: Text.optional(),
      // iopsBudget: records made since the choice existed carry it (null where no budget is emulated).
      limits: z.object({ iops: limit, throughputMiBps: limit, memoryLimitMiB: limit, iopsBudget: z.enum(['shared', 'separate']).nullable().optional() }).strict(),
      postgres: z.object({ host: z.string().regex(IPV4, { error: 'must be an IPv4 address' }), port: z.number().int().min(1).max(65_535) }).strict(),
      // The provider's own id of the host, of a form a registered provider gives (common/providers/).
      instanceId: z.string().max(64).refine(isInstanceId, { error: "must be a provider's own id of a host" }).optional(),
    })
    .strict();
}

/** This run's own prefix of a folder or an S3 store (its folder from before injective escaping, for a drill in flight). */
function storeSchema(runId: string) {
  const runFolder = runFolderName(runId);
  const legacy = legacyRunFolderName(runId);
  const storePath = z
    .string()
    .refine((p) => safePathEndingWith(p, `/${runFolder}`) || (legacy !== null && safePathEndingWith(p, `/${legacy}`)), {
      error: `must be an absolute path of plain folder names ending with /${runFolder}`,
    });
  return z.discriminatedUnion('kind', [
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
}

/** A node's archiving settings as a continuation written before `tool` carried them: the tool's own command. */
function archiveSettingsSchema(runId: string, n: Node) {
  return z
    .object({
      archive_mode: z.literal('on'),
      archive_command: z
        .string()
        .refine((c) => SCHEMES.some((scheme) => isToolArchiveCommand(c, nodeHostId(runId, n, scheme))), {
          error: `must be the backup tool's own archive command for host ${nodeHostId(runId, n, 'sha256')}`,
        })
        .optional(),
      archive_timeout: z.string().regex(/^\d{1,5}s$/).optional(),
    })
    .strict();
}

/**
 * What a continuation must look like: the hosts this run's ids name, on loopback locally (or an IPv4 address on AWS),
 * their peers as IP addresses (none locally), the drill's own backup tool archiving to this run's store, and rounds
 * that all passed. A continuation written before peers and tools were carried (pg_hba lines, each node's archiving
 * settings) is still read, and checked as strictly, so a drill in flight goes on across the change. `spec` is null
 * when the input itself is invalid (then acceptInput refuses the run).
 */
export function failoverContinuationSchema(runId: string, spec: ReplicaDrillSpec | null) {
  const node = z.enum(NODES);
  const perNode = <T extends z.ZodType>(schema: (runId: string, n: Node) => T) => z.object({ n1: schema(runId, 'n1'), n2: schema(runId, 'n2'), n3: schema(runId, 'n3') }).strict();
  return z
    .object({
      startedAt: z.iso.datetime(),
      postgresVersion: Text.nullable(),
      records: perNode(hostRecordSchema),
      peers: z.array(z.string().regex(IP_ADDRESS, { error: 'must be an IP address' })).max(8).optional(),
      /** Continuations written before `peers`: the pg_hba lines for them (a drill in flight across the change). */
      hbaLines: z.array(Text).max(8).optional(),
      primary: node,
      standbys: z.array(node).min(1).max(2),
      archiving: z
        .object({
          store: storeSchema(runId),
          tool: z.enum(BACKUP_TOOLS).optional(),
          /** Continuations written before `tool`: each node's archiving settings, as its host wrote them. */
          settings: perNode(archiveSettingsSchema).optional(),
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
      for (const { path, message } of continuationProblems(c, spec)) ctx.addIssue({ code: 'custom', path, message });
    });
}

/** A continuation of the schema's shape, as continuationProblems reads it. */
type CarriedShape = {
  records: Record<Node, { hostId: string; taskQueue: string; provider: string; postgres: { host: string } }>;
  peers?: string[];
  hbaLines?: string[];
  primary: Node;
  standbys: Node[];
  archiving: { tool?: string; settings?: unknown } | null;
  rounds: { round: number }[];
  nextRound: number;
};

/** What a continuation's fields say against each other and against the drill's spec (when the input is valid). */
function continuationProblems(c: CarriedShape, spec: ReplicaDrillSpec | null): { path: string[]; message: string }[] {
  const problems: { path: string[]; message: string }[] = [];
  const add = (path: string[], message: string) => problems.push({ path, message });
  const records = Object.values(c.records);
  if (records.some((r) => hostTaskQueue(r.hostId) !== r.taskQueue)) add(['records'], "each host's task queue must be its own (host:<hostId>)");
  if (new Set(records.map((r) => nameSchemeOf(r.hostId))).size > 1) add(['records'], 'every host id must be of one naming scheme');
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
  if (!spec) return problems;
  if (c.archiving?.tool !== undefined && c.archiving.tool !== spec.backup.tool) add(['archiving', 'tool'], `must be the drill's backup.tool, ${spec.backup.tool}`);
  if (records.some((r) => r.provider !== spec.provider)) add(['records'], `every host must come from provider ${spec.provider}`);
  // Hosts on this machine listen on loopback and reach each other there.
  const here = providerOf(spec.provider).onThisMachine;
  if (here && records.some((r) => r.postgres.host !== '127.0.0.1')) add(['records'], 'local hosts listen on 127.0.0.1 only');
  if (here && (c.peers?.length || c.hbaLines?.length)) add([c.peers ? 'peers' : 'hbaLines'], 'local hosts reach each other on 127.0.0.1: no peers');
  if (c.nextRound > spec.rounds) add(['nextRound'], `beyond the drill's ${spec.rounds} rounds`);
  if ((c.archiving === null) !== !spec.backup.enabled) add(['archiving'], `must be ${spec.backup.enabled ? 'set: backup.enabled is true' : 'null: backup.enabled is false'}`);
  return problems;
}

/** What an execution carries to the next, from where the drill stands before round `nextRound`. */
export function continuation<Round>(
  state: Pick<FailoverContinuation, 'records' | 'peers' | 'primary' | 'standbys' | 'archiving'>,
  result: Pick<FailoverContinuation<Round>, 'startedAt' | 'postgresVersion' | 'archive' | 'rounds'>,
  nextRound: number,
): FailoverContinuation<Round> {
  return { ...state, startedAt: result.startedAt, postgresVersion: result.postgresVersion, archive: result.archive, rounds: result.rounds, nextRound };
}

/** A continuation written before peers and the archive's tool were typed: its pg_hba lines name the peers. */
export type LegacyContinuation = Partial<Pick<FailoverContinuation, 'peers'>> & { hbaLines?: string[]; archiving: { store: ResolvedBackupStore; tool?: BackupToolName } | null };

/** The peers and the archive of a continuation, of either shape (a drill in flight continues across the change). */
export function resumedState(spec: ReplicaDrillSpec, continued: FailoverContinuation<unknown> | LegacyContinuation): Pick<FailoverContinuation, 'peers' | 'archiving'> {
  const legacy = continued as LegacyContinuation;
  const peers = legacy.peers ?? [...new Set((legacy.hbaLines ?? []).map((line) => line.split(/\s+/)[3]?.replace(/\/\d+$/, '') ?? ''))].filter(Boolean);
  const archiving = legacy.archiving ? { store: legacy.archiving.store, tool: legacy.archiving.tool ?? spec.backup.tool } : null;
  return { peers, archiving };
}
