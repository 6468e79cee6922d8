/**
 * The experiment spec: one zod schema with defaults, named presets and semantic rules.
 * Pure and deterministic: workflows validate with it too, so a bad spec fails before anything is provisioned.
 */
import { z } from 'zod';
import { dataSetBytes } from './data-size';
import { BACKUP_COMPRESSIONS, BACKUP_TOOLS, DEFAULT_BACKUP_COMPRESSION, DEFAULT_BACKUP_TOOL, backupToolProblems } from './backup-store';
import { costCeilingProblems } from './cost';
import { FAILURE_TYPES, formatSpecProblems, type SpecProblem } from '../core/errors';
import { DIRECT_IO_MODES, versionProblems } from './postgres-versions';
import { PRESETS, PRESET_NAMES, type PresetName } from './presets';
import { ServerSettingsSchema } from './server-settings';
import {
  AmiIdField,
  AwsRegionField,
  BackupSubfolderField,
  CONTROL_CHARACTER,
  EndpointField,
  HostAndPortField,
  ImageParameterField,
  InstanceProfileNameField,
  InstanceTypeField,
  KeyPrefixField,
  S3BucketField,
  SecurityGroupIdField,
  SsmParameterField,
  SubnetIdField,
  TemporalNamespaceField,
} from './fields';
import { experimentSpecRules } from './rules';

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
 * Upper bounds of the sizes a spec sets, each what the thing can be, not what a run usually needs (every field has
 * one: test/unit/spec-bounds.test.ts fails on a number, string or list without a maximum).
 */
export const SPEC_LIMITS = {
  /** gp3's long-standing maximum volume size (16 TiB); a local volume is a file of that size on this machine. */
  volumeGiB: 16_384,
  /** A pgbench script: the reference's is 120 bytes; 64 KiB holds any hand-written benchmark. */
  scriptBytes: 64 * 1024,
  /** Dead tuples made for VACUUM and WAL retained for the backlog drain: 1 TB each (the reference used 10 GB). */
  phaseMB: 1_000_000,
  /** Storage classes of one run (predict-check has 5). */
  storageClasses: 8,
  /** Clusters of one run, all classes together (seed-full has 8). */
  clusters: 64,
  /** Security groups on one host's network interface (EC2's quota can reach 16). */
  securityGroups: 16,
  /** Instance types in the price table. */
  priceTableEntries: 64,
  /** On-demand price of one instance hour (the largest EC2 instances list at about 400 USD). */
  hourlyPriceUsd: 1_000,
  /** A storage price per GiB-, IOPS- or MiB/s-month (gp3 lists at 0.08, 0.005 and 0.04 USD). */
  storagePriceUsd: 10,
  /** A run's own cost ceiling (the control worker caps it lower: STORAGE_LAB_AWS_MAX_COST_USD). */
  maxCostUsd: 100_000,
  /** Server settings of one spec (PostgreSQL documents about 350), a name's length (NAMEDATALEN - 1), a value's. */
  settings: 200,
  settingNameChars: 63,
  settingValueChars: 1_024,
} as const;

/** A whole-number field whose errors name its bounds and unit. */
export const int = (min: number, max: number, what: string) =>
  z
    .number({ error: `must be a whole number (${what})` })
    .int({ error: `must be a whole number (${what})` })
    .min(min, { error: `must be at least ${min} (${what})` })
    .max(max, { error: `must be at most ${max} (${what})` });

/** Megabytes a phase makes (dead tuples, retained WAL): positive, at most SPEC_LIMITS.phaseMB. */
const phaseMB = (what: string) =>
  z
    .number({ error: `must be a number (${what})` })
    .positive({ error: `must be positive (${what})` })
    .max(SPEC_LIMITS.phaseMB, { error: `must be at most ${SPEC_LIMITS.phaseMB} (${what}, 1 TB)` });

/** Where a storage class's data lives. Local kinds run on this machine; the others on AWS. */
/**
 * Local kinds: the machine's own disk (`local-disk`), and modelled volumes (docs/storage-emulation.md): `emulated-ebs`
 * (gp3 or io2, volumeType) and `nvme` (m6id.4xlarge's instance-store NVMe). AWS kinds: real EBS and instance store.
 */
export const STORAGE_KINDS = ['local-disk', 'emulated-ebs', 'nvme', 'instance-store', 'ebs'] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];
export const LOCAL_KINDS: readonly StorageKind[] = ['local-disk', 'emulated-ebs', 'nvme'];
export const AWS_KINDS: readonly StorageKind[] = ['instance-store', 'ebs'];

export const StorageClassSchema = z
  .object({
    kind: z.enum(STORAGE_KINDS, { error: `must be one of ${STORAGE_KINDS.join(', ')}` }),
    /** Provisioned IOPS of an EBS (or emulated EBS) volume; gp3's baseline is 3,000. */
    iops: int(100, 256_000, 'IOPS').optional(),
    /** Provisioned throughput in MiB/s; gp3's baseline is 125. */
    throughputMiBps: int(1, 4_000, 'MiB/s').optional(),
    /** Volume size; by default large enough for the data set, its WAL and the phases' bloat. */
    sizeGiB: z
      .number({ error: 'must be a number (GiB)' })
      .positive({ error: 'must be positive (GiB)' })
      .max(SPEC_LIMITS.volumeGiB, { error: `must be at most ${SPEC_LIMITS.volumeGiB} (GiB, gp3's largest volume)` })
      .optional(),
    /**
     * `required`: fail before provisioning when I/O limits cannot be enforced (no root, no cgroups).
     * `preferred`: run anyway and mark the class "not emulated" in the report.
     */
    emulation: z.enum(['required', 'preferred']).default('preferred'),
    /** This class's hosts get this memory limit instead of host.memoryLimitMiB (a second memory size in one run). */
    memoryLimitMiB: int(64, 1_048_576, 'MiB').optional(),
    /** emulated-ebs: the EBS volume type the modelled volume stands for (common/model/devices.ts); default gp3. */
    volumeType: z.enum(['gp3', 'io2'], { error: 'must be "gp3" or "io2"' }).optional(),
    /**
     * emulated-ebs: `shared`, one budget for reads and writes as EBS has: the modelled volume's only budget (the
     * default). `separate` (the kernel's two throttles of earlier versions) is refused: recorded specs still parse.
     */
    iopsBudget: z.enum(['shared', 'separate'], { error: 'must be "shared" (reads + writes, as EBS) or "separate"' }).optional(),
    /**
     * This class's TPS run uses this many pgbench clients instead of workload.clients (at most that many, which sizes
     * max_connections and the memory rules): one data set measured at several client counts, as predict-matrix does.
     */
    clients: int(1, 10_000, 'pgbench clients').optional(),
  })
  .strict();

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

/** A price in USD, from 0 to `max`. */
const usd = (max: number, what: string) =>
  z
    .number({ error: `must be a number (${what})` })
    .nonnegative({ error: `must not be negative (${what})` })
    .max(max, { error: `must be at most ${max} (${what})` });

/** Storage prices of the cost estimate, USD per month (730 hours). */
export interface StoragePricesUsd {
  gp3GiBMonth: number;
  gp3IopsMonth: number;
  gp3MiBpsMonth: number;
  s3GiBMonth: number;
}

/** The lab's list prices: us-east-1 on-demand, a month being 730 hours (the cost estimate's defaults). */
export const LIST_PRICES_USD: { hourly: Readonly<Record<string, number>>; storage: Readonly<StoragePricesUsd> } = {
  hourly: { 'm6id.4xlarge': 0.9492 },
  storage: { gp3GiBMonth: 0.08, gp3IopsMonth: 0.005, gp3MiBpsMonth: 0.04, s3GiBMonth: 0.023 },
};

export const AwsSchema = z
  .object({
    region: AwsRegionField.default('us-east-1'),
    /** For S3-compatible stores and API emulators (moto); unset on real AWS. */
    endpoint: EndpointField.optional(),
    /** The AMI; its owner must be one the control worker allows (STORAGE_LAB_AWS_IMAGE_OWNERS). */
    imageId: AmiIdField.optional(),
    imageSsmParameter: ImageParameterField.default('/aws/service/debian/release/12/latest/amd64'),
    subnetId: SubnetIdField.optional(),
    securityGroupIds: z
      .array(SecurityGroupIdField)
      .max(SPEC_LIMITS.securityGroups, { error: `must list at most ${SPEC_LIMITS.securityGroups} security groups` })
      .default([]),
    instanceProfileName: InstanceProfileNameField.optional(),
    resultsBucket: S3BucketField.optional(),
    resultsPrefix: KeyPrefixField.default('storage-lab/results'),
    /** Temporal endpoint the host agents dial (Temporal Cloud or a self-hosted cluster). */
    temporalAddress: HostAndPortField.optional(),
    temporalNamespace: TemporalNamespaceField.default('default'),
    /** Names (never values) of secrets in SSM Parameter Store that the host bootstrap reads. */
    temporalApiKeyParameter: SsmParameterField.optional(),
    /** mTLS to Temporal instead of an API key: SSM parameter names of the client certificate and its key. */
    temporalTlsCertParameter: SsmParameterField.optional(),
    temporalTlsKeyParameter: SsmParameterField.optional(),
    /** SSM parameter with the database password; unset: each host generates its own at boot. */
    databasePasswordParameter: SsmParameterField.optional(),
    /** Root volume of each host (OS, packages, agent, pgbench logs); the data lives on its own device. */
    rootVolumeGiB: int(8, 1_024, 'GiB').default(20),
    /** On-demand prices (USD per hour) used for the cost estimate; extend for other instance types. */
    hourlyPriceUsd: z
      .record(InstanceTypeField, usd(SPEC_LIMITS.hourlyPriceUsd, 'USD per instance hour'))
      .refine((prices) => Object.keys(prices).length <= SPEC_LIMITS.priceTableEntries, {
        error: `must list at most ${SPEC_LIMITS.priceTableEntries} instance types`,
      })
      .default({ ...LIST_PRICES_USD.hourly }),
    /** Storage prices for the cost estimate (us-east-1 list prices; a month is 730 hours). */
    storagePriceUsd: z
      .object({
        gp3GiBMonth: usd(SPEC_LIMITS.storagePriceUsd, 'USD per GiB-month').default(LIST_PRICES_USD.storage.gp3GiBMonth),
        gp3IopsMonth: usd(SPEC_LIMITS.storagePriceUsd, 'USD per IOPS-month').default(LIST_PRICES_USD.storage.gp3IopsMonth),
        gp3MiBpsMonth: usd(SPEC_LIMITS.storagePriceUsd, 'USD per MiB/s-month').default(LIST_PRICES_USD.storage.gp3MiBpsMonth),
        s3GiBMonth: usd(SPEC_LIMITS.storagePriceUsd, 'USD per GiB-month').default(LIST_PRICES_USD.storage.s3GiBMonth),
      })
      .strict()
      .default({ ...LIST_PRICES_USD.storage }),
    /**
     * The most the run may cost by its estimate (the dry run's, common/input/cost.ts); a run estimated above it is refused
     * before anything is created. The control worker's own ceiling (STORAGE_LAB_AWS_MAX_COST_USD) applies as well:
     * this can lower it, never raise it.
     */
    maxCostUsd: z
      .number({ error: 'must be a number (USD)' })
      .positive({ error: 'must be positive (USD)' })
      .max(SPEC_LIMITS.maxCostUsd, { error: `must be at most ${SPEC_LIMITS.maxCostUsd} (USD)` })
      .optional(),
  })
  .strict();

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

/** The host every Postgres of a run gets: a memory limit (at least `minMemoryMiB`) and, on AWS, an instance type. */
export function hostSchema(minMemoryMiB: number) {
  return z
    .object({
      memoryLimitMiB: int(minMemoryMiB, 1_048_576, 'MiB'),
      instanceType: InstanceTypeField.default('m6id.4xlarge'),
      /**
       * A host whose agent has not polled for this long is dead: its cluster (or drill) fails naming it, and the
       * host is torn down. Default: 180 s locally, 600 s on AWS (an instance reboot or a slow cloud API).
       */
      deadAfterSeconds: int(10, 86_400, 'seconds').optional(),
    })
    .strict();
}

/** How long a host of this spec may stay silent before it is declared dead (host.deadAfterSeconds or the default). */
export function hostDeadAfterSeconds(spec: { provider: 'local' | 'aws'; host: { deadAfterSeconds?: number } }): number {
  return spec.host.deadAfterSeconds ?? (spec.provider === 'aws' ? 600 : 180);
}

export const ExperimentSpecSchema = z
  .object({
    specVersion: z.literal(SPEC_VERSION).default(SPEC_VERSION),
    name: RunName,
    preset: z.enum(PRESET_NAMES).optional(),
    provider: z.enum(['local', 'aws'], { error: 'must be "local" or "aws"' }),
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
    phases: z
      .object({
        vacuum: z.object({ enabled: z.boolean(), bloatMB: phaseMB('MB of dead tuples') }).strict(),
        backlog: z.object({ enabled: z.boolean(), backlogMB: phaseMB('MB of WAL retained') }).strict(),
      })
      .strict(),
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
        /** Drills run after the clusters, on hosts like the candidate class's: a restore drill, a failover drill. */
        drills: z
          .array(z.enum(['restore', 'failover'], { error: 'must be "restore" or "failover"' }))
          .max(2, { error: 'must list each drill at most once ("restore", "failover")' })
          .refine((drills) => new Set(drills).size === drills.length, { error: 'must list each drill at most once ("restore", "failover")' })
          .default([]),
      })
      .strict(),
    aws: AwsSchema.optional(),
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
    const allowed = spec.provider === 'local' ? LOCAL_KINDS : AWS_KINDS;
    for (const [name, cls] of Object.entries(spec.storageClasses)) {
      if (!allowed.includes(cls.kind))
        add(
          ['storageClasses', name, 'kind'],
          `"${cls.kind}" cannot run on provider "${spec.provider}"; use ${allowed.join(' or ')}, or set provider to "${spec.provider === 'local' ? 'aws' : 'local'}"`,
        );
      const limited = cls.kind === 'ebs' || cls.kind === 'emulated-ebs';
      if (!limited && (cls.iops !== undefined || cls.throughputMiBps !== undefined))
        add(['storageClasses', name, 'iops'], `a ${cls.kind} class has no provisioned IOPS or throughput; remove them`);
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
    // Sizes that cannot fit (memory, connections, volume) and a workload that cannot run here (issue 9).
    for (const p of experimentSpecRules(spec, volumeBytes(spec))) add(p.path.split('.'), p.message);
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
    if (spec.provider === 'aws' && !spec.aws)
      add(['aws'], 'provider "aws" needs an aws section (region, subnetId, resultsBucket, temporalAddress)');
    // The run's own ceiling, at its own prices; the control worker's preflight applies its ceiling and prices too.
    if (spec.provider === 'aws' && spec.aws?.maxCostUsd !== undefined)
      for (const p of costCeilingProblems(spec, { usd: spec.aws.maxCostUsd, field: 'aws.maxCostUsd', source: 'aws.maxCostUsd' })) add(p.path.split('.'), p.message);
    // The failover drill archives too (its own store, the same tool), so every drill backs up.
    const backsUp = spec.durability.enabled || spec.durability.drills.length > 0;
    for (const p of versionProblems({
      provider: spec.provider,
      version: spec.postgres.version,
      directIo: spec.postgres.directIo,
      backups: backsUp,
      backupTool: spec.durability.tool,
      replicas: spec.durability.drills.includes('failover'),
      fields: { version: 'postgres.version', directIo: 'postgres.directIo', backups: 'durability.tool', replicas: 'durability.drills' },
    }))
      add(p.path.split('.'), p.message);
    if (backsUp && spec.provider === 'aws' && spec.durability.backupStore.kind === 'folder')
      add(['durability', 'backupStore', 'kind'], 'hosts on AWS cannot share a folder; use kind "s3" with a bucket');
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
export type StorageClassSpec = z.output<typeof StorageClassSchema>;
export type BackupStoreSpec = z.output<typeof BackupStoreSchema>;
export type AwsSpec = z.output<typeof AwsSchema>;

/** What a caller passes: a preset name and any overrides, every field optional. */
export type ExperimentInput = DeepPartial<ExperimentSpec> & { preset?: string };
type DeepPartial<T> = T extends (infer U)[]
  ? U[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> | null }
    : T;

/**
 * Sets an emulated EBS class's IOPS budget when the input left it out: one budget for reads and writes, as EBS. Done
 * at resolution (not as a schema default), so a spec resolved before the choice existed, recorded in a run's history,
 * still parses unchanged and keeps the separate limits it ran with (classLimits).
 */
export function withBudgetDefault(cls: StorageClassSpec): StorageClassSpec {
  if (cls.kind === 'emulated-ebs' && cls.iopsBudget === undefined) cls.iopsBudget = 'shared';
  return cls;
}

/** gp3's baseline when a class leaves its limits out. */
/**
 * The pgbench workload of a class's runs: the spec's, with the class's own client count where it sets one (pgbench
 * needs threads <= clients, so the threads are capped at the clients).
 */
export function classWorkload(spec: ExperimentSpec, className: string): ExperimentSpec['workload'] {
  const clients = spec.storageClasses[className]?.clients ?? spec.workload.clients;
  return { ...spec.workload, clients, threads: Math.min(spec.workload.threads, clients) };
}

export const GP3_BASELINE = { iops: 3000, throughputMiBps: 125 } as const;

/** The I/O limits that apply to a class, or null for a class with none (local disk, instance store). */
export function classLimits(cls: StorageClassSpec): { iops: number; throughputMiBps: number; iopsBudget: 'shared' | 'separate' } | null {
  if (cls.kind !== 'ebs' && cls.kind !== 'emulated-ebs') return null;
  return {
    iops: cls.iops ?? GP3_BASELINE.iops,
    throughputMiBps: cls.throughputMiBps ?? GP3_BASELINE.throughputMiBps,
    // Absent only in a spec resolved before the choice existed: those hosts had the kernel's separate limits.
    iopsBudget: cls.iopsBudget ?? 'separate',
  };
}

/** Bytes one host's volume needs for a spec: heap, indexes, WAL, and the phases' bloat and backlog. */
export function volumeBytes(spec: ExperimentSpec): number {
  const heap = dataSetBytes(spec.data.scale);
  const wal = spec.postgres.maxWalSizeMiB * 2 * 1024 * 1024;
  const phases = (spec.phases.vacuum.bloatMB * 2 + spec.phases.backlog.backlogMB * 2) * 1e6;
  return Math.ceil(heap + wal + phases);
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

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Resolves an input (a preset name plus overrides) into a validated spec.
 * Parse → normalise → semantic rules; every problem is reported at once with its dotted path.
 */
export function resolveSpec(input: unknown): ExperimentSpec {
  if (!isPlainObject(input))
    throw new InvalidSpecError([{ path: '', message: 'must be a JSON object, for example {"preset":"local-quick"}' }]);
  const presetName = input.preset ?? 'local-quick';
  if (typeof presetName !== 'string' || !(PRESET_NAMES as readonly string[]).includes(presetName))
    throw new InvalidSpecError([
      { path: 'preset', message: `unknown preset ${JSON.stringify(presetName)}; use one of: ${PRESET_NAMES.join(', ')}` },
    ]);
  const merged = mergeSpec(PRESETS[presetName as PresetName], { ...input, preset: presetName });
  const parsed = ExperimentSpecSchema.safeParse(merged, { reportInput: true });
  if (!parsed.success) throw new InvalidSpecError(parsed.error.issues.map(toProblem));
  const spec = parsed.data;
  for (const cls of Object.values(spec.storageClasses)) withBudgetDefault(cls);
  if (!spec.compare) {
    const names = Object.keys(spec.storageClasses);
    if (names.length >= 2) spec.compare = { baseline: names[1], candidate: names[0] };
  }
  return spec;
}

/** A key of a path as the message shows it: quoted (JSON) when it holds a control character, so it stays on one line. */
function pathSegment(key: PropertyKey): string {
  const text = String(key);
  return CONTROL_CHARACTER.test(text) ? JSON.stringify(text) : text;
}

/**
 * A spec that claims to be resolved already (a child run's input): it must pass the same schema and rules again
 * and come out unchanged, so a run below the experiment works on exactly what was validated, whoever started it.
 */
export function revalidateSpec(spec: unknown): ExperimentSpec {
  const parsed = ExperimentSpecSchema.safeParse(spec, { reportInput: true });
  if (!parsed.success) throw new InvalidSpecError(parsed.error.issues.map(toProblem));
  if (canonicalJson(parsed.data) !== canonicalJson(spec))
    throw new InvalidSpecError([{ path: '', message: 'is not a resolved spec (parsing it again changes it); pass the output of resolveSpec unchanged' }]);
  return parsed.data;
}

/** JSON with object keys sorted, so two values compare equal whatever order their keys came in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isPlainObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
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
