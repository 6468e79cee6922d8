/**
 * The durability drills' specs: one zod schema each (restore, failover), with defaults, named presets and semantic
 * rules, resolved like the experiment spec (preset + overrides, every problem named with its dotted path).
 * Pure and workflow-safe: a drill validates its own input before anything is provisioned.
 */
import { z } from 'zod';
import { BACKUP_COMPRESSIONS, BACKUP_TOOLS, DEFAULT_BACKUP_COMPRESSION, DEFAULT_BACKUP_TOOL, backupToolProblems } from './backup-store';
import type { SpecProblem } from '../core/errors';
import type { ExperimentSpec } from './spec';
import { userPostgresSettings, type LabServerSettings } from './postgres-settings';
import { versionProblems } from './postgres-versions';
import { connectionProblems, MAX_TPS_PER_CPU, memoryProblems, serverLogProblems, volumeSizeProblems } from './rules';
import { dataSetBytes } from './data-size';
import {
  backupStoreKindProblem,
  clientToolsOf,
  networkCutters,
  ProviderField,
  providerOf,
  providerSectionsShape,
  sectionProblem,
  sectionsOf,
  storageKindProblem,
} from '../providers/registry';
import {
  BackupStoreSchema,
  BoundedServerSettings,
  InvalidSpecError,
  RunName,
  StorageClassSchema,
  withBudgetDefault,
  hostSchema,
  int,
  mergeSpec,
  toProblem,
} from './spec';

export const DRILL_SPEC_VERSION = 1;
export const DRILL_PRESET_NAMES = ['ci', 'local-quick'] as const;
export type DrillPresetName = (typeof DRILL_PRESET_NAMES)[number];

const seconds = (min: number, max: number) =>
  z
    .number({ error: 'must be a number (seconds)' })
    .min(min, { error: `must be at least ${min} (seconds)` })
    .max(max, { error: `must be at most ${max} (seconds)` });

/** Tables a restore drill compares by checksum. */
const MAX_CHECKSUM_TABLES = 32;

const TableName = z
  .string()
  .max(63, { error: 'must be at most 63 characters (a PostgreSQL name)', abort: true })
  .regex(/^[a-z_][a-z0-9_]{0,62}$/, { error: 'must be a plain lower-case table name of the public schema' });

/** The backup tool and how it writes: both drills' backup sections start with these. */
const backupToolFields = {
  /** WAL-G (the reference's) or pgBackRest. */
  tool: z.enum(BACKUP_TOOLS, { error: `must be ${BACKUP_TOOLS.map((t) => `"${t}"`).join(' or ')}` }).default(DEFAULT_BACKUP_TOOL),
  /** Compression of archived WAL and base backups alike. */
  compression: z.enum(BACKUP_COMPRESSIONS, { error: `must be one of ${BACKUP_COMPRESSIONS.join(', ')}` }).default(DEFAULT_BACKUP_COMPRESSION),
  store: BackupStoreSchema.default({ kind: 'folder' }),
  archiveTimeoutSeconds: int(1, 3_600, 'seconds'),
  /** Keep the drill's backups and archived WAL after it ends (default: removed with the hosts). */
  keep: z.boolean().default(false),
};

/** What both drills share: where hosts come from and how their Postgres runs. */
const drillBase = {
  specVersion: z.literal(DRILL_SPEC_VERSION).default(DRILL_SPEC_VERSION),
  name: RunName,
  preset: z.enum(DRILL_PRESET_NAMES).optional(),
  provider: ProviderField,
  /** The storage of every host of the drill. */
  storageClass: StorageClassSchema,
  host: hostSchema(128),
  postgres: z
    .object({
      version: int(12, 18, 'PostgreSQL major version').optional(),
      sharedBuffersMiB: int(16, 1_048_576, 'MiB'),
      settings: BoundedServerSettings,
    })
    .strict(),
  /** Each provider's own section under its name (common/providers/registry.ts). */
  ...providerSectionsShape,
  /** Hosts older than this are the sweeper's, whatever their drill's state. */
  expiresAfterHours: z.number().positive().max(24 * 14),
};

export const RestoreDrillSpecSchema = z
  .object({
    ...drillBase,
    /** pgbench data on the source (scale 1 = 100,000 accounts), loaded in recorded, resumable chunks. */
    data: z
      .object({
        scale: int(1, 100_000, 'pgbench scale'),
        chunkRows: int(1_000, 100_000_000, 'rows per chunk'),
        /** Parallel chunk writers: at seed scale a single writer would need more than a day. */
        loadWriters: int(1, 64, 'parallel chunk writers').default(2),
      })
      .strict(),
    /** Writes before and after the target: pgbench (tpcb-like) next to a ledger writer that commits a marker row each interval. */
    workload: z
      .object({
        clients: int(0, 256, 'pgbench clients; 0 for markers only'),
        beforeSeconds: seconds(1, 86_400),
        afterSeconds: seconds(1, 86_400),
        markerIntervalMs: int(10, 60_000, 'ms between marker rows'),
      })
      .strict(),
    /** Where recovery stops: at a time or an LSN between two marker rows, or at the end of the archived WAL. */
    target: z.enum(['time', 'lsn', 'latest'], { error: 'must be "time", "lsn" or "latest"' }),
    /** Tables whose checksums at the target must equal the restored ones. */
    checksumTables: z
      .array(TableName)
      .min(1, { error: 'must name at least one table' })
      // Each is read in full twice (at the target and after the restore): a handful of tables, not a catalogue.
      .max(MAX_CHECKSUM_TABLES, { error: `must name at most ${MAX_CHECKSUM_TABLES} tables` }),
    backup: z
      .object({
        ...backupToolFields,
        /**
         * `full`: one full base backup after the load. `delta`: a full one, writes, then a delta of it (WAL-G's delta,
         * pgBackRest's incr), which the restore fetches with the full one beneath it.
         */
        kind: z.enum(['full', 'delta'], { error: 'must be "full" or "delta"' }).default('full'),
      })
      .strict(),
    /** Bound on the restore itself (fetch, replay, promote): a drill never hangs on a broken archive. */
    restoreTimeoutSeconds: int(10, 86_400, 'seconds'),
    /** Faults the drill injects to prove they are caught. */
    inject: z
      .object({
        /** Delete one archived WAL segment between the backup and the target before restoring. */
        missingWalSegment: z.boolean().default(false),
      })
      .strict()
      .default({ missingWalSegment: false }),
  })
  .strict()
  .superRefine((spec, ctx) => {
    baseRules(spec, ctx);
    if (spec.inject.missingWalSegment && spec.backup.store.kind !== 'folder')
      issue(ctx, ['inject', 'missingWalSegment'], 'removing an archived segment is supported for a folder store only; use backup.store.kind "folder"');
  });

export const FailoverDrillSpecSchema = z
  .object({
    ...drillBase,
    /**
     * `sync`: synchronous_commit = on with synchronous_standby_names = 'ANY 1 (<the two standbys>)', so an
     * acknowledged commit is on at least one standby. `async`: no synchronous standbys, for contrast.
     */
    mode: z.enum(['sync', 'async'], { error: 'must be "sync" or "async"' }),
    /** Failovers in a row: each kills the current primary; the old one rejoins as a standby for the next. */
    rounds: int(1, 50, 'failovers'),
    writer: z
      .object({
        /** Connections committing ledger rows at once. */
        connections: int(1, 64, 'connections'),
        /** Writes before the primary is killed. */
        killAfterSeconds: seconds(0.5, 3_600),
        /** Writes on the new primary before the round ends. */
        afterFailoverSeconds: seconds(0.5, 3_600),
        /** A round fails when no write is acknowledged this long after the last one before the kill. */
        maxOutageSeconds: seconds(1, 3_600),
      })
      .strict(),
    /** `rewind`: the old primary rejoins with pg_rewind (rebuilt from a base backup when it cannot); `none`: left down. */
    rejoin: z.enum(['rewind', 'none'], { error: 'must be "rewind" or "none"' }),
    /**
     * The production pattern's continuous archive: a base backup after the cluster is up, the primary's WAL archived to
     * a store of the drill's own, each new primary continuing it on its new timeline; the tool checks the archive
     * after the rounds. `enabled: false` archives nothing.
     */
    backup: z
      .object({
        enabled: z.boolean().default(true),
        ...backupToolFields,
      })
      .strict(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    baseRules(spec, ctx);
    if (spec.rounds > 1 && spec.rejoin === 'none')
      issue(ctx, ['rejoin'], `${spec.rounds} rounds need the old primary back as a standby each round; set rejoin to "rewind" or rounds to 1`);
  });

export const PartitionDrillSpecSchema = z
  .object({
    ...drillBase,
    /** Partitions in a row: each cuts the current primary off; the old one rejoins as a standby for the next. */
    rounds: int(1, 50, 'partitions'),
    writer: z
      .object({
        /** Connections committing ledger rows at once. */
        connections: int(1, 64, 'connections'),
        /** Writes before the primary is cut off. */
        cutAfterSeconds: seconds(0.5, 3_600),
        /** Writes on the new primary before the round ends. */
        afterFailoverSeconds: seconds(0.5, 3_600),
        /** A round fails when the new primary acknowledges no write this long after the cut. */
        maxOutageSeconds: seconds(1, 3_600),
      })
      .strict(),
    partition: z
      .object({
        /**
         * false: the cut is between the database hosts only, and the writer still reaches both sides (it goes on
         * writing to the old primary until it finds the new one: where a split brain would show). true: the writer is
         * on the standbys' side, cut off from the old primary too.
         */
        cutWriter: z.boolean({ error: 'must be true or false' }).default(false),
        /** How long the primary stays cut off before the standby is promoted: an HA manager's failure detection. */
        detectionSeconds: seconds(0, 600),
        /** After the heal, how long a write on the old primary may wait: it must not be acknowledged (fenced). */
        fenceProbeSeconds: seconds(0.5, 60),
      })
      .strict(),
    /** The production pattern's continuous archive, as in the failover drill; `enabled: false` archives nothing. */
    backup: z
      .object({
        enabled: z.boolean().default(true),
        ...backupToolFields,
      })
      .strict(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    baseRules(spec, ctx);
    if (!providerOf(spec.provider).cutsNetwork)
      issue(ctx, ['provider'], `the partition drill cuts the hosts' loopback traffic with nftables on the control worker's machine; use ${networkCutters()}`);
  });

/** Storage kinds whose local volume is a modelled device (lib/volume.ts): the only ones that can drop unsynced writes. */
export const POWER_CUT_KINDS = ['emulated-ebs', 'nvme'] as const;

export const PowerCutDrillSpecSchema = z
  .object({
    ...drillBase,
    /** Power cuts in a row, each on the one primary, which comes back from crash recovery for the next. */
    rounds: int(1, 50, 'power cuts'),
    writer: z
      .object({
        /** Connections committing ledger rows at once. */
        connections: int(1, 64, 'connections'),
        /** A round stops waiting for a write this long after the last one acknowledged before the cut. */
        maxOutageSeconds: seconds(0.5, 3_600),
      })
      .strict(),
    powerCut: z
      .object({
        /**
         * The cut falls at a moment drawn between these seconds of writing (uniformly, from `seed`): the same seed
         * cuts at the same moments, so a run is repeatable.
         */
        earliestSeconds: seconds(0.5, 3_600),
        latestSeconds: seconds(0.5, 3_600),
        /** The random moments' seed (a whole number); each round draws from it and its number. */
        seed: int(0, 2 ** 31 - 1, 'seed'),
        /** Bound on PostgreSQL's crash recovery after the cut (pg_ctl start -w): a cluster that does not come back fails the round. */
        recoveryTimeoutSeconds: int(5, 86_400, 'seconds'),
      })
      .strict(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    baseRules(spec, ctx);
    if (spec.provider !== 'local')
      issue(ctx, ['provider'], 'the power-cut drill cuts a modelled volume\'s power through the local provider; use "local"');
    if (!(POWER_CUT_KINDS as readonly string[]).includes(spec.storageClass.kind))
      issue(ctx, ['storageClass', 'kind'], `only a modelled volume can drop the writes it had not made durable; use ${POWER_CUT_KINDS.map((k) => `"${k}"`).join(' or ')}`);
    if (spec.powerCut.latestSeconds < spec.powerCut.earliestSeconds)
      issue(ctx, ['powerCut', 'latestSeconds'], `must be at least powerCut.earliestSeconds (${spec.powerCut.earliestSeconds})`);
  });

/** A validated restore drill spec. */
export type RestoreDrillSpec = z.output<typeof RestoreDrillSpecSchema>;
/** A validated failover drill spec. */
export type FailoverDrillSpec = z.output<typeof FailoverDrillSpecSchema>;
/** A validated partition drill spec. */
export type PartitionDrillSpec = z.output<typeof PartitionDrillSpecSchema>;
/** A validated power-cut drill spec. */
export type PowerCutDrillSpec = z.output<typeof PowerCutDrillSpecSchema>;
/** The drills of a primary, two standbys and a writer on a client host of its own (failover, partition). */
export type ReplicaDrillSpec = FailoverDrillSpec | PartitionDrillSpec;
/** What a drill's caller passes: a preset and overrides (the UI's pasted JSON object, the CLI's --set). */
export type DrillInput = Record<string, unknown> & { preset?: string };

/** Seconds the writer writes before the drill's fault (the kill, the cut). */
export function writesBeforeFault(spec: ReplicaDrillSpec): number {
  return 'partition' in spec ? spec.writer.cutAfterSeconds : spec.writer.killAfterSeconds;
}

type BaseSpec = RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec;

function issue(ctx: z.RefinementCtx, path: (string | number)[], message: string): void {
  ctx.addIssue({ code: 'custom', path, message });
}

function baseRules(spec: BaseSpec, ctx: z.RefinementCtx): void {
  const kind = storageKindProblem(spec.provider, spec.storageClass.kind, false);
  if (kind) issue(ctx, ['storageClass', 'kind'], kind);
  // Sizes that cannot fit: the primary's memory and connections, an explicit volume size (issue 9).
  for (const p of drillSpecRules(spec)) issue(ctx, p.path.split('.'), p.message);
  const section = sectionProblem(spec);
  if (section) issue(ctx, [section.path], section.message);
  // The power-cut drill has one node and no archive; the replica drills archive unless backup.enabled is false.
  const failover = 'rounds' in spec && !('powerCut' in spec);
  const backups = 'backup' in spec && (!('enabled' in spec.backup) || spec.backup.enabled);
  for (const p of versionProblems({
    ...clientToolsOf(spec.provider),
    version: spec.postgres.version,
    directIo: 'off',
    backups,
    backupTool: 'backup' in spec ? spec.backup.tool : undefined,
    replicas: failover,
    fields: { version: 'postgres.version', directIo: 'postgres.directIo', backups: 'backup.tool', replicas: 'postgres.version' },
  }))
    issue(ctx, p.path.split('.'), p.message);
  if (!backups || !('backup' in spec)) return;
  const { store } = spec.backup;
  const storeKind = backupStoreKindProblem(spec.provider, store.kind);
  if (storeKind) issue(ctx, ['backup', 'store', 'kind'], storeKind);
  for (const p of backupToolProblems({
    tool: spec.backup.tool,
    compression: spec.backup.compression,
    s3Endpoint: store.kind === 's3' ? store.endpoint : undefined,
    fields: { tool: 'backup.tool', compression: 'backup.compression', endpoint: 'backup.store.endpoint' },
  }))
    issue(ctx, p.path.split('.'), p.message);
}

const drillCommon = (name: string) => ({
  name,
  provider: 'local',
  storageClass: { kind: 'local-disk' },
  expiresAfterHours: 3,
});

/** Restore drill presets: `ci` runs in well under a minute; `local-quick` has more data and longer write phases. */
export const RESTORE_DRILL_PRESETS: Record<DrillPresetName, Record<string, unknown>> = {
  ci: {
    ...drillCommon('restore-drill-ci'),
    host: { memoryLimitMiB: 256 },
    postgres: { sharedBuffersMiB: 32, settings: {} },
    data: { scale: 1, chunkRows: 50_000 },
    workload: { clients: 2, beforeSeconds: 3, afterSeconds: 2, markerIntervalMs: 50 },
    target: 'time',
    checksumTables: ['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history'],
    backup: { store: { kind: 'folder' }, archiveTimeoutSeconds: 1, keep: false },
    restoreTimeoutSeconds: 120,
  },
  'local-quick': {
    ...drillCommon('restore-drill'),
    host: { memoryLimitMiB: 512 },
    postgres: { sharedBuffersMiB: 128, settings: {} },
    data: { scale: 20, chunkRows: 200_000 },
    workload: { clients: 4, beforeSeconds: 20, afterSeconds: 10, markerIntervalMs: 100 },
    target: 'time',
    checksumTables: ['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history'],
    backup: { store: { kind: 'folder' }, archiveTimeoutSeconds: 5, keep: false },
    restoreTimeoutSeconds: 900,
  },
};

/** Failover drill presets: `ci` is one short round; `local-quick` three rounds with longer write phases. */
export const FAILOVER_DRILL_PRESETS: Record<DrillPresetName, Record<string, unknown>> = {
  ci: {
    ...drillCommon('failover-drill-ci'),
    host: { memoryLimitMiB: 256 },
    postgres: { sharedBuffersMiB: 32, settings: {} },
    mode: 'sync',
    rounds: 1,
    writer: { connections: 4, killAfterSeconds: 2, afterFailoverSeconds: 1, maxOutageSeconds: 60 },
    rejoin: 'rewind',
    // No forced switch within a round: the only segments a round completes are the ones the drill closes and waits for,
    // so the kill never falls between a segment's completion and its push (a real gap the archive check would name).
    backup: { store: { kind: 'folder' }, archiveTimeoutSeconds: 60, keep: false },
  },
  'local-quick': {
    ...drillCommon('failover-drill'),
    host: { memoryLimitMiB: 384 },
    postgres: { sharedBuffersMiB: 64, settings: {} },
    mode: 'sync',
    rounds: 3,
    writer: { connections: 8, killAfterSeconds: 10, afterFailoverSeconds: 3, maxOutageSeconds: 120 },
    rejoin: 'rewind',
    backup: { store: { kind: 'folder' }, archiveTimeoutSeconds: 60, keep: false },
  },
};

/**
 * Partition drill presets: `ci` is one short round, the writer on the old primary's side; `local-quick` three rounds
 * with longer write phases and a longer detection.
 */
export const PARTITION_DRILL_PRESETS: Record<DrillPresetName, Record<string, unknown>> = {
  ci: {
    ...drillCommon('partition-drill-ci'),
    host: { memoryLimitMiB: 256 },
    postgres: { sharedBuffersMiB: 32, settings: {} },
    rounds: 1,
    writer: { connections: 4, cutAfterSeconds: 1.5, afterFailoverSeconds: 1, maxOutageSeconds: 60 },
    partition: { cutWriter: false, detectionSeconds: 1, fenceProbeSeconds: 1 },
    backup: { store: { kind: 'folder' }, archiveTimeoutSeconds: 60, keep: false },
  },
  'local-quick': {
    ...drillCommon('partition-drill'),
    host: { memoryLimitMiB: 384 },
    postgres: { sharedBuffersMiB: 64, settings: {} },
    rounds: 3,
    writer: { connections: 8, cutAfterSeconds: 10, afterFailoverSeconds: 3, maxOutageSeconds: 120 },
    partition: { cutWriter: false, detectionSeconds: 5, fenceProbeSeconds: 3 },
    backup: { store: { kind: 'folder' }, archiveTimeoutSeconds: 60, keep: false },
  },
};

/**
 * Power-cut drill presets, both on a modelled gp3 (the device that drops what it had not made durable): `ci` two short
 * rounds; `local-quick` five with a wider window for the cut.
 */
export const POWER_CUT_DRILL_PRESETS: Record<DrillPresetName, Record<string, unknown>> = {
  ci: {
    ...drillCommon('power-cut-drill-ci'),
    storageClass: { kind: 'emulated-ebs', iops: 3000, throughputMiBps: 125 },
    host: { memoryLimitMiB: 256 },
    postgres: { sharedBuffersMiB: 32, settings: {} },
    rounds: 2,
    writer: { connections: 4, maxOutageSeconds: 2 },
    powerCut: { earliestSeconds: 1, latestSeconds: 3, seed: 1, recoveryTimeoutSeconds: 120 },
  },
  'local-quick': {
    ...drillCommon('power-cut-drill'),
    storageClass: { kind: 'emulated-ebs', iops: 3000, throughputMiBps: 125 },
    host: { memoryLimitMiB: 384 },
    postgres: { sharedBuffersMiB: 64, settings: {} },
    rounds: 5,
    writer: { connections: 8, maxOutageSeconds: 3 },
    powerCut: { earliestSeconds: 2, latestSeconds: 10, seed: 1, recoveryTimeoutSeconds: 300 },
  },
};

/** Resolves a restore drill input (preset + overrides); throws InvalidSpecError naming every problem. */
export function resolveRestoreDrill(input: unknown): RestoreDrillSpec {
  const spec = resolveDrill(input, RESTORE_DRILL_PRESETS, RestoreDrillSpecSchema, 'restore drill spec');
  withBudgetDefault(spec.storageClass);
  return spec;
}

/** Resolves a failover drill input (preset + overrides); throws InvalidSpecError naming every problem. */
export function resolveFailoverDrill(input: unknown): FailoverDrillSpec {
  const spec = resolveDrill(input, FAILOVER_DRILL_PRESETS, FailoverDrillSpecSchema, 'failover drill spec');
  withBudgetDefault(spec.storageClass);
  return spec;
}

/** Resolves a partition drill input (preset + overrides); throws InvalidSpecError naming every problem. */
export function resolvePartitionDrill(input: unknown): PartitionDrillSpec {
  const spec = resolveDrill(input, PARTITION_DRILL_PRESETS, PartitionDrillSpecSchema, 'partition drill spec');
  withBudgetDefault(spec.storageClass);
  return spec;
}

/** Resolves a power-cut drill input (preset + overrides); throws InvalidSpecError naming every problem. */
export function resolvePowerCutDrill(input: unknown): PowerCutDrillSpec {
  const spec = resolveDrill(input, POWER_CUT_DRILL_PRESETS, PowerCutDrillSpecSchema, 'power-cut drill spec');
  withBudgetDefault(spec.storageClass);
  return spec;
}

function resolveDrill<S extends z.ZodType>(
  input: unknown,
  presets: Record<DrillPresetName, Record<string, unknown>>,
  schema: S,
  subject: string,
): z.output<S> {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new InvalidSpecError([{ path: '', message: 'must be a JSON object, for example {"preset":"ci"}' }], subject);
  const presetName = (input as { preset?: unknown }).preset ?? 'local-quick';
  if (typeof presetName !== 'string' || !(DRILL_PRESET_NAMES as readonly string[]).includes(presetName))
    throw new InvalidSpecError(
      [{ path: 'preset', message: `unknown preset ${JSON.stringify(presetName)}; use one of: ${DRILL_PRESET_NAMES.join(', ')}` }],
      subject,
    );
  const merged = mergeSpec(presets[presetName as DrillPresetName], { ...input, preset: presetName });
  const parsed = schema.safeParse(merged, { reportInput: true });
  if (!parsed.success) throw new InvalidSpecError(parsed.error.issues.map(toProblem) as SpecProblem[], subject);
  return parsed.data;
}

/** The lab's own server settings of every drill host: replication-ready, timestamps the recovery-log parser reads. */
export function drillLabSettings(spec: BaseSpec): LabServerSettings {
  return {
    shared_buffers: `${spec.postgres.sharedBuffersMiB}MB`,
    max_connections: String(DRILL_MAX_CONNECTIONS),
    wal_level: 'replica',
    hot_standby: 'on',
    max_wal_senders: '10',
    // pg_rewind needs hint bits logged (or data checksums) to find what changed since the fork.
    wal_log_hints: 'on',
    wal_keep_size: '256MB',
    // Standbys retry their primary (and follow a new timeline) within a fraction of a second, not 5 s.
    wal_retrieve_retry_interval: '200ms',
    synchronous_commit: 'on',
    log_line_prefix: '%m [%p] ',
    log_timezone: 'UTC',
    log_checkpoints: 'on',
  };
}

/** Every server setting of a drill host as the host writes it: the lab's, then the spec's postgres.settings on top. */
export function drillPostgresSettings(spec: BaseSpec): Record<string, string> {
  return { ...drillLabSettings(spec), ...userPostgresSettings(spec.postgres.settings) };
}

/** A drill's input from the experiment's spec: its `ci` preset, sized and configured like the experiment. */
export function drillInputFor(kind: ExperimentSpec['durability']['drills'][number], spec: ExperimentSpec): DrillInput {
  const className = spec.compare?.candidate ?? Object.keys(spec.storageClasses)[0];
  const common = {
    preset: 'ci',
    name: `${spec.name}-${kind}`.slice(0, 40),
    provider: spec.provider,
    storageClass: spec.storageClasses[className],
    // A drill host runs Postgres and the agent: shared_buffers plus room for both.
    host: {
      memoryLimitMiB: Math.max(spec.host.memoryLimitMiB, spec.postgres.sharedBuffersMiB + 128),
      instanceType: spec.host.instanceType,
      ...(spec.host.deadAfterSeconds ? { deadAfterSeconds: spec.host.deadAfterSeconds } : {}),
    },
    postgres: { version: spec.postgres.version, sharedBuffersMiB: spec.postgres.sharedBuffersMiB, settings: spec.postgres.settings },
    // The run's own provider section, as it is (the experiment's `aws` for a drill on EC2).
    ...sectionsOf(spec),
    expiresAfterHours: spec.expiresAfterHours,
  };
  // Both drills archive with the experiment's tool to their own prefix of its store.
  const { tool, compression, backupStore, archiveTimeoutSeconds } = spec.durability;
  const backup = { tool, compression, store: backupStore, archiveTimeoutSeconds };
  if (kind === 'failover' || kind === 'partition') return { ...common, backup };
  return { ...common, data: { scale: spec.data.scale, chunkRows: spec.data.chunkRows, loadWriters: spec.data.loadWriters }, backup };
}

/**
 * A line of the drills' ledger of acknowledged commits: a decimal id up to 11 digits, the node's name, the commit's
 * LSN (up to 17 characters) and the acknowledgement's time in ms (13 digits), separated by spaces, and its newline.
 */
const LEDGER_BYTES_PER_COMMIT = 48;

/** Worst-case bytes of a replica or power-cut drill's ledger files on its client host (every round's writes, `cpus` CPUs). */
export function failoverLedgerBytes(spec: ReplicaDrillSpec | PowerCutDrillSpec, cpus: number): number {
  // The writes before the fault (the kill, the cut) and after it; the power-cut drill writes up to its latest cut,
  // then waits out its outage.
  const writeSeconds =
    'powerCut' in spec
      ? spec.powerCut.latestSeconds + spec.writer.maxOutageSeconds
      : ('partition' in spec ? spec.writer.cutAfterSeconds : spec.writer.killAfterSeconds) + spec.writer.afterFailoverSeconds;
  return spec.rounds * writeSeconds * cpus * MAX_TPS_PER_CPU * LEDGER_BYTES_PER_COMMIT;
}

/** max_connections of every drill host unless its spec sets one (common/input/drill-spec.ts drillPostgresSettings). */
export const DRILL_MAX_CONNECTIONS = 100;

/** What one drill host writes to its volume: the restore drill's data and WAL, or the failover drill's ledger. */
export function drillVolumeBytes(spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec): number {
  const data = 'data' in spec ? dataSetBytes(spec.data.scale) : 0;
  return data + 2 * 2 ** 30;
}

/** The drills' rules on sizes: the primary's memory and connections, and an explicit volume size. */
export function drillSpecRules(spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec): SpecProblem[] {
  // The restore drill's pgbench clients and its marker writer; the failover drill's writer connections.
  const restore = 'workload' in spec;
  const clients = restore ? spec.workload.clients : spec.writer.connections;
  const clientsPath = restore ? 'workload.clients' : 'writer.connections';
  // The agent's own connection and a verification; the restore drill's marker writer besides; the partition drill's
  // writer watches every node on a connection of its own, and probes the old primary once the cut is healed.
  const labConnections = restore ? 3 : 'partition' in spec ? 4 : 2;
  return [
    ...memoryProblems({
      limitMiB: spec.host.memoryLimitMiB,
      sharedBuffersMiB: spec.postgres.sharedBuffersMiB,
      clients,
      labConnections,
      limitPath: 'host.memoryLimitMiB',
      clientsPath,
    }),
    ...connectionProblems({
      clients,
      clientsPath,
      labConnections,
      defaultMaxConnections: DRILL_MAX_CONNECTIONS,
      settings: spec.postgres.settings,
      settingsPath: 'postgres.settings',
    }),
    ...serverLogProblems(spec.postgres.settings, 'postgres.settings'),
    ...volumeSizeProblems(
      spec.storageClass.sizeGiB,
      drillVolumeBytes(spec),
      'storageClass.sizeGiB',
      restore ? `the data at scale ${spec.data.scale} with its indexes and 2 GiB of WAL` : '2 GiB of WAL and ledger',
    ),
  ];
}
