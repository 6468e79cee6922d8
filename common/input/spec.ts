/**
 * The experiment spec: one zod schema with defaults and the rules that read one section at a time; the rules that
 * read the whole spec (sizes, the workload, the cost) are applied as it is resolved (resolve.ts). Pure and
 * deterministic: workflows validate with it too, so a bad spec fails before anything is provisioned.
 */
import { z } from 'zod';
import { dataSetBytes } from './data-size';
import { BACKUP_COMPRESSIONS, BACKUP_TOOLS, DEFAULT_BACKUP_COMPRESSION, DEFAULT_BACKUP_TOOL, backupToolProblems } from './backup-store';
import { FAILURE_TYPES, formatSpecProblems, type SpecProblem } from '../core/errors';
import { DIRECT_IO_MODES, versionProblems } from './postgres-versions';
import { PRESET_NAMES } from './presets';
import type { PhaseContext } from '../phases/kit';
import { PhasesSchema, phasesVolumeBytes } from '../phases/registry';
import { ServerSettingsSchema } from './server-settings';
import { int, SPEC_LIMITS } from './limits';
import { EBS_LEAST_IOPS, StorageClassSchema, storageMiBps } from './storage';
import { AwsRegionField, BackupSubfolderField, CONTROL_CHARACTER, EndpointField, InstanceTypeField, KeyPrefixField, S3BucketField } from './fields';
import {
  backupStoreKindProblem,
  clientToolsOf,
  networkCutters,
  ProviderField,
  providerOf,
  providerSectionsShape,
  sectionProblem,
  storageKindProblem,
  type ProviderName,
} from '../providers/registry';

export { int, SPEC_LIMITS } from './limits';
export { classLimits, EBS_LEAST_IOPS, GP3_BASELINE, STORAGE_KINDS, StorageClassSchema, storageMiBps, withBudgetDefault, type StorageClassSpec, type StorageKind } from './storage';

export const SPEC_VERSION = 1;

/** How a run uses published data sets (data.reuse). */
export const DATA_REUSE_MODES = ['auto', 'never'] as const;
export type DataReuseMode = (typeof DATA_REUSE_MODES)[number];

const classNamePattern = /^[a-z][a-z0-9-]{0,19}$/;
const ClassName = z
  .string()
  .max(20, { error: 'must be at most 20 characters', abort: true })
  .regex(classNamePattern, { error: 'must be lower-case letters, digits and dashes, starting with a letter (max 20)' });

/** A run's (or drill's) name: it names hosts, folders and tags. */
export const RunName = z
  .string()
  .max(40, { error: 'must be at most 40 characters', abort: true })
  .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, { error: 'must be lower-case letters, digits and dashes (max 40)' });

/**
 * Where backups go. Every value ends up in pgBackRest's config (one `key=value` a line) and WAL-G's, so each is
 * checked by its pattern (fields.ts); pgBackRest further needs an https:// endpoint (backupToolProblems).
 */
export const BackupStoreSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('folder'),
      /** A sub-folder of the lab's backups folder (STORAGE_LAB_BACKUPS_DIR); unset: that folder itself. */
      path: BackupSubfolderField.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('s3'),
      bucket: S3BucketField,
      prefix: KeyPrefixField.default('storage-lab/backups'),
      region: AwsRegionField.default('us-east-1'),
      /** An S3-compatible store (MinIO, an emulator); unset on AWS. */
      endpoint: EndpointField.optional(),
    })
    .strict(),
]);

/**
 * `postgres.settings` with the sizes of each part bounded (the refusals and the control-character rule are
 * ServerSettingsSchema's; ranges are the real server's, spec-checks.ts).
 */
export const BoundedServerSettings = ServerSettingsSchema.superRefine((settings, ctx) => {
  const names = Object.keys(settings);
  if (names.length > SPEC_LIMITS.settings)
    ctx.addIssue({ code: 'custom', path: [], message: `${names.length} settings; at most ${SPEC_LIMITS.settings} may be set` });
  for (const [name, value] of Object.entries(settings)) {
    if (name.length > SPEC_LIMITS.settingNameChars)
      ctx.addIssue({ code: 'custom', path: [name], message: `a setting name has at most ${SPEC_LIMITS.settingNameChars} characters; fix the name` });
    if (typeof value === 'string' && value.length > SPEC_LIMITS.settingValueChars)
      ctx.addIssue({ code: 'custom', path: [name], message: `the value is ${value.length} characters; at most ${SPEC_LIMITS.settingValueChars}` });
  }
});

/** The host every Postgres of a run gets: a memory limit (at least `minMemoryMiB`) and, where hosts are instances, their type. */
export function hostSchema(minMemoryMiB: number) {
  return z
    .object({
      memoryLimitMiB: int(minMemoryMiB, 1_048_576, 'MiB'),
      instanceType: InstanceTypeField.default('m6id.4xlarge'),
      /**
       * A host whose agent has not polled for this long is dead: its cluster (or drill) fails naming it, and the
       * host is torn down. Default: the provider's (180 s locally, 600 s on EC2: an instance reboot or a slow cloud API).
       */
      deadAfterSeconds: int(10, 86_400, 'seconds').optional(),
    })
    .strict();
}

/** How long a host of this spec may stay silent before it is declared dead (host.deadAfterSeconds or the default). */
export function hostDeadAfterSeconds(spec: { provider: ProviderName; host: { deadAfterSeconds?: number } }): number {
  return spec.host.deadAfterSeconds ?? providerOf(spec.provider).deadAfterSeconds;
}

export const ExperimentSpecSchema = z
  .object({
    specVersion: z.literal(SPEC_VERSION).default(SPEC_VERSION),
    name: RunName,
    preset: z.enum(PRESET_NAMES).optional(),
    provider: ProviderField,
    storageClasses: z.record(ClassName, StorageClassSchema),
    /** Ratios are the candidate's speedup over the baseline, as in the reference (NVMe over gp3). */
    compare: z.object({ baseline: ClassName, candidate: ClassName }).strict().optional(),
    clustersPerClass: int(1, 16, 'clusters per storage class'),
    /** Clusters that run at once; 1 on one machine, so no cluster's measurement shares the CPU with another's. */
    maxParallelClusters: int(1, 64, 'clusters at once'),
    host: hostSchema(64),
    postgres: z
      .object({
        /** Without one: the newest full installation (server and client tools); locally Debian's 15. */
        version: int(12, 18, 'PostgreSQL major version').optional(),
        sharedBuffersMiB: int(16, 1_048_576, 'MiB'),
        maxWalSizeMiB: int(32, 1_048_576, 'MiB'),
        /**
         * Files Postgres reads and writes with O_DIRECT (`debug_io_direct`, 16+), on every class alike: an emulated
         * volume's cgroup limit then holds the data files' writes too (kernel writeback escapes cgroup v1), and no
         * class caches data outside shared_buffers.
         */
        directIo: z.enum(DIRECT_IO_MODES, { error: `must be one of ${DIRECT_IO_MODES.join(', ')}` }).default('off'),
        settings: BoundedServerSettings,
      })
      .strict(),
    data: z
      .object({
        /** pgbench scale: 100,000 rows of pgbench_accounts each (the reference: 33,000, 3.3 billion rows). */
        scale: int(1, 1_000_000, 'pgbench scale'),
        chunkRows: int(1_000, 100_000_000, 'rows per load chunk'),
        loadWriters: int(1, 64, 'parallel chunk writers'),
        /** After the load, check count(*) = count(distinct aid) = the rows asked for (a full scan). */
        verifyRows: z.boolean().default(true),
        /**
         * Data sets (issue 31): "auto" (when absent) restores a published set of the same key instead of loading, and
         * publishes the first load for the other hosts and later runs; "never" loads every host afresh.
         */
        reuse: z.enum(DATA_REUSE_MODES, { error: `must be ${DATA_REUSE_MODES.map((m) => `"${m}"`).join(' or ')}` }).optional(),
      })
      .strict(),
    workload: z
      .object({
        clients: int(1, 10_000, 'pgbench clients'),
        threads: int(1, 1_024, 'pgbench threads'),
        durationSeconds: int(1, 86_400, 'seconds'),
        warmupSeconds: int(0, 86_400, 'seconds'),
        /** A pgbench script; `:scale` is set from data.scale. Default: the reference's random single-row UPDATE. */
        script: z
          .string()
          .min(1, { error: 'must not be empty' })
          .max(SPEC_LIMITS.scriptBytes, { error: `must be at most ${SPEC_LIMITS.scriptBytes} characters (64 KiB)` }),
      })
      .strict(),
    /** The measurements after the TPS run, each under its name (common/phases/registry.ts). */
    phases: PhasesSchema,
    sampler: z.object({ enabled: z.boolean(), intervalMs: int(10, 1_000, 'ms between samples') }).strict(),
    durability: z
      .object({
        enabled: z.boolean(),
        archiveTimeoutSeconds: int(1, 3_600, 'seconds'),
        backupStore: BackupStoreSchema.default({ kind: 'folder' }),
        /** The backup tool of the clusters and of the drills: WAL-G (the reference's) or pgBackRest. */
        tool: z.enum(BACKUP_TOOLS, { error: `must be ${BACKUP_TOOLS.map((t) => `"${t}"`).join(' or ')}` }).default(DEFAULT_BACKUP_TOOL),
        /** Compression of archived WAL and base backups alike. */
        compression: z.enum(BACKUP_COMPRESSIONS, { error: `must be one of ${BACKUP_COMPRESSIONS.join(', ')}` }).default(DEFAULT_BACKUP_COMPRESSION),
        /** Drills run after the clusters, on hosts like the candidate class's: a restore, a failover and a partition drill. */
        drills: z
          .array(z.enum(['restore', 'failover', 'partition'], { error: 'must be "restore", "failover" or "partition"' }))
          .max(3, { error: 'must list each drill at most once ("restore", "failover", "partition")' })
          .refine((drills) => new Set(drills).size === drills.length, { error: 'must list each drill at most once ("restore", "failover", "partition")' })
          .default([]),
      })
      .strict(),
    /** Each provider's own section under its name (common/providers/registry.ts): `aws` for a run on EC2. */
    ...providerSectionsShape,
    /** Predict every other class from this class's measured demands; the report puts predicted beside measured. */
    prediction: z.object({ calibrationClass: ClassName }).strict().optional(),
    /** Resources older than this are the sweeper's, whatever their run's state. */
    expiresAfterHours: z.number().positive().max(24 * 14),
    /** Published data sets: kept this many days after their publish (default 7), then the sweeper removes them. */
    dataSets: z.object({ keepDays: z.number({ error: 'must be a number of days' }).positive({ error: 'must be positive (days)' }).max(365, { error: 'must be at most 365 (days)' }) }).strict().optional(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const add = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const classNames = Object.keys(spec.storageClasses);
    if (classNames.length === 0) add(['storageClasses'], 'must name at least one storage class');
    if (classNames.length > SPEC_LIMITS.storageClasses)
      add(['storageClasses'], `${classNames.length} storage classes; a run compares at most ${SPEC_LIMITS.storageClasses}: remove some`);
    const clusters = classNames.length * spec.clustersPerClass;
    if (clusters > SPEC_LIMITS.clusters)
      add(
        ['clustersPerClass'],
        `${spec.clustersPerClass} clusters per class x ${classNames.length} classes = ${clusters} clusters; a run has at most ${SPEC_LIMITS.clusters}: lower clustersPerClass or remove storage classes`,
      );
    if (spec.compare) {
      for (const side of ['baseline', 'candidate'] as const) {
        if (!classNames.includes(spec.compare[side]))
          add(
            ['compare', side],
            `unknown storage class "${spec.compare[side]}"; use one of: ${classNames.join(', ') || '(none defined)'}`,
          );
      }
    }
    if (spec.prediction && !classNames.includes(spec.prediction.calibrationClass))
      add(['prediction', 'calibrationClass'], `unknown storage class "${spec.prediction.calibrationClass}"; use one of: ${classNames.join(', ') || '(none defined)'}`);
    for (const [name, cls] of Object.entries(spec.storageClasses)) {
      const kind = storageKindProblem(spec.provider, cls.kind, true);
      if (kind) add(['storageClasses', name, 'kind'], kind);
      const limited = cls.kind === 'ebs' || cls.kind === 'emulated-ebs';
      if (!limited && (cls.iops !== undefined || cls.throughputMiBps !== undefined))
        add(['storageClasses', name, 'iops'], `a ${cls.kind} class has no provisioned IOPS or throughput; remove them`);
      if (cls.kind === 'ebs' && cls.iops !== undefined && cls.iops < EBS_LEAST_IOPS)
        add(['storageClasses', name, 'iops'], `must be at least ${EBS_LEAST_IOPS} (IOPS): no EBS volume is provisioned below it`);
      if (cls.iopsBudget !== undefined && cls.kind !== 'emulated-ebs')
        add(['storageClasses', name, 'iopsBudget'], `only an emulated-ebs class has an emulated IOPS budget (a real volume has its own); remove it`);
      if (cls.iopsBudget === 'separate')
        add(
          ['storageClasses', name, 'iopsBudget'],
          'a modelled volume has one budget for reads and writes, as EBS (the kernel\'s separate read and write throttles are gone); remove iopsBudget',
        );
      if (cls.volumeType !== undefined && cls.kind !== 'emulated-ebs')
        add(['storageClasses', name, 'volumeType'], `only an emulated-ebs class models an EBS volume type; remove it (a ${cls.kind} class has its own device)`);
    }
    for (const [name, cls] of Object.entries(spec.storageClasses))
      if (cls.clients !== undefined && cls.clients > spec.workload.clients)
        add(
          ['storageClasses', name, 'clients'],
          `${cls.clients} clients is more than workload.clients (${spec.workload.clients}), which sizes max_connections and the memory checks; raise workload.clients to ${cls.clients} or lower this`,
        );
    if (spec.workload.threads > spec.workload.clients)
      add(
        ['workload', 'threads'],
        `${spec.workload.threads} threads for ${spec.workload.clients} clients; pgbench needs threads <= clients`,
      );
    const section = sectionProblem(spec);
    if (section) add([section.path], section.message);
    // The failover drill archives too (its own store, the same tool), so every drill backs up.
    const backsUp = spec.durability.enabled || spec.durability.drills.length > 0;
    for (const p of versionProblems({
      ...clientToolsOf(spec.provider),
      version: spec.postgres.version,
      directIo: spec.postgres.directIo,
      backups: backsUp,
      backupTool: spec.durability.tool,
      replicas: spec.durability.drills.includes('failover') || spec.durability.drills.includes('partition'),
      fields: { version: 'postgres.version', directIo: 'postgres.directIo', backups: 'durability.tool', replicas: 'durability.drills' },
    }))
      add(p.path.split('.'), p.message);
    if (spec.durability.drills.includes('partition') && !providerOf(spec.provider).cutsNetwork)
      add(['durability', 'drills'], `the partition drill cuts the hosts' loopback traffic with nftables on the control worker's machine: provider ${networkCutters()} only; remove "partition"`);
    const storeKind = backsUp ? backupStoreKindProblem(spec.provider, spec.durability.backupStore.kind) : null;
    if (storeKind) add(['durability', 'backupStore', 'kind'], storeKind);
    const store = spec.durability.backupStore;
    if (backsUp)
      for (const p of backupToolProblems({
        tool: spec.durability.tool,
        compression: spec.durability.compression,
        s3Endpoint: store.kind === 's3' ? store.endpoint : undefined,
        fields: { tool: 'durability.tool', compression: 'durability.compression', endpoint: 'durability.backupStore.endpoint' },
      }))
        add(p.path.split('.'), p.message);
  });

/** A validated, normalised experiment spec. */
export type ExperimentSpec = z.output<typeof ExperimentSpecSchema>;
export type BackupStoreSpec = z.output<typeof BackupStoreSchema>;

/** What a caller passes: a preset name and any overrides, every field optional. */
export type ExperimentInput = DeepPartial<ExperimentSpec> & { preset?: string };
type DeepPartial<T> = T extends (infer U)[]
  ? U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> | null }
    : T;

/**
 * The pgbench workload of a class's runs: the spec's, with the class's own client count where it sets one (pgbench
 * needs threads <= clients, so the threads are capped at the clients).
 */
export function classWorkload(spec: ExperimentSpec, className: string): ExperimentSpec['workload'] {
  const clients = spec.storageClasses[className]?.clients ?? spec.workload.clients;
  return { ...spec.workload, clients, threads: Math.min(spec.workload.threads, clients) };
}

/** What a phase reads of one class's run beside its own fragment (common/phases/kit.ts). */
export function phaseContext(spec: ExperimentSpec, className: string): PhaseContext {
  const { clients, threads, script } = classWorkload(spec, className);
  return { scale: spec.data.scale, workload: { clients, threads, script }, sharedBuffersMiB: spec.postgres.sharedBuffersMiB, storageMiBps: storageMiBps(spec.storageClasses[className]) };
}

/** The phase context of the class with the slowest storage: what a plan's bounds are stated for. */
export function slowestPhaseContext(spec: ExperimentSpec): PhaseContext {
  const [first, ...rest] = Object.keys(spec.storageClasses).map((name) => phaseContext(spec, name));
  return rest.reduce((slowest, c) => (c.storageMiBps < slowest.storageMiBps ? c : slowest), first);
}

/** Bytes one host's volume needs for a spec: heap, indexes, WAL, and what the phases write. */
export function volumeBytes(spec: ExperimentSpec): number {
  const heap = dataSetBytes(spec.data.scale);
  const wal = spec.postgres.maxWalSizeMiB * 2 * 1024 * 1024;
  return Math.ceil(heap + wal + phasesVolumeBytes(spec.phases));
}


/** A spec's data.reuse: "auto" when absent. */
export function dataReuse(spec: Pick<ExperimentSpec, 'data'>): DataReuseMode {
  return spec.data.reuse ?? 'auto';
}

/** Thrown for a spec that cannot run; carries every problem at once. */
export class InvalidSpecError extends Error {
  readonly type = FAILURE_TYPES.invalidSpec;
  constructor(
    readonly problems: SpecProblem[],
    subject?: string,
  ) {
    super(formatSpecProblems(problems, subject));
    this.name = 'InvalidSpecError';
  }
}

/** Objects merge key by key; arrays and scalars replace; `null` removes a key (for example a storage class). */
export function mergeSpec(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === null) delete out[key];
    else out[key] = mergeSpec(base[key], value);
  }
  return out;
}

/** A JSON object (not an array, not null). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A key of a path as the message shows it: quoted (JSON) when it holds a control character, so it stays on one line. */
function pathSegment(key: PropertyKey): string {
  const text = String(key);
  return CONTROL_CHARACTER.test(text) ? JSON.stringify(text) : text;
}

/** A zod issue as a spec problem: the dotted path and a message that says how to fix it. */
export function toProblem(issue: z.core.$ZodIssue): SpecProblem {
  const path = issue.path.map(pathSegment).join('.');
  if (issue.code === 'unrecognized_keys')
    return {
      path: [path, ...issue.keys.map(pathSegment)].filter(Boolean).join('.'),
      message: `unknown field; remove it or check its spelling (known fields are listed in docs/configuration.md)`,
    };
  if (issue.code === 'invalid_key')
    return { path, message: `invalid name: ${issue.issues.map((i) => i.message).join('; ')}` };
  if (issue.code === 'invalid_type' && issue.input === undefined)
    return { path, message: `is required (expected ${issue.expected})` };
  return { path, message: issue.message };
}
