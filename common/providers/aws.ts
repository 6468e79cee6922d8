/**
 * The AWS provider's workflow-safe half: hosts are EC2 instances (instance-store NVMe or a gp3 EBS volume), backups
 * go to S3. It declares the spec's `aws` section, the fields a real run needs in it, how a gp3 data volume is sized,
 * the cost model at the section's list prices, and the published experiment's preset (`seed-full`). The instances
 * themselves are made, listed, inspected and removed by infra/providers/aws/ (the EC2 provider), which also checks a
 * spec against the account before anything exists. Pure and workflow-safe.
 */
import { z } from 'zod';
import type { SpecProblem } from '../core/errors';
import {
  AmiIdField,
  AwsRegionField,
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
} from '../input/fields';
import { int } from '../input/limits';
import { classLimits, GP3_BASELINE, type StorageClassSpec } from '../input/storage';
import { RANDOM_UPDATE_SCRIPT } from '../input/workload-script';
import { costLine, defineProvider, type CostLine, type CostModel, type PricedRun } from './kit';

/** Upper bounds of the `aws` section's sizes and prices (test/unit/spec-bounds.test.ts holds every field to one). */
export const AWS_LIMITS = {
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
} as const;

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

/** A spec's `aws` section: where the hosts start, what they dial, the secrets' names, the prices. */
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
      .max(AWS_LIMITS.securityGroups, { error: `must list at most ${AWS_LIMITS.securityGroups} security groups` })
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
      .record(InstanceTypeField, usd(AWS_LIMITS.hourlyPriceUsd, 'USD per instance hour'))
      .refine((prices) => Object.keys(prices).length <= AWS_LIMITS.priceTableEntries, {
        error: `must list at most ${AWS_LIMITS.priceTableEntries} instance types`,
      })
      .default({ ...LIST_PRICES_USD.hourly }),
    /** Storage prices for the cost estimate (us-east-1 list prices; a month is 730 hours). */
    storagePriceUsd: z
      .object({
        gp3GiBMonth: usd(AWS_LIMITS.storagePriceUsd, 'USD per GiB-month').default(LIST_PRICES_USD.storage.gp3GiBMonth),
        gp3IopsMonth: usd(AWS_LIMITS.storagePriceUsd, 'USD per IOPS-month').default(LIST_PRICES_USD.storage.gp3IopsMonth),
        gp3MiBpsMonth: usd(AWS_LIMITS.storagePriceUsd, 'USD per MiB/s-month').default(LIST_PRICES_USD.storage.gp3MiBpsMonth),
        s3GiBMonth: usd(AWS_LIMITS.storagePriceUsd, 'USD per GiB-month').default(LIST_PRICES_USD.storage.s3GiBMonth),
      })
      .strict()
      .default({ ...LIST_PRICES_USD.storage }),
    /**
     * The most the run may cost by its estimate (the dry run's, common/input/cost.ts with this module's prices); a run estimated above it is refused
     * before anything is created. The control worker's own ceiling (STORAGE_LAB_AWS_MAX_COST_USD) applies as well:
     * this can lower it, never raise it.
     */
    maxCostUsd: z
      .number({ error: 'must be a number (USD)' })
      .positive({ error: 'must be positive (USD)' })
      .max(AWS_LIMITS.maxCostUsd, { error: `must be at most ${AWS_LIMITS.maxCostUsd} (USD)` })
      .optional(),
  })
  .strict();


export type AwsSpec = z.output<typeof AwsSchema>;

/** Hours in a billing month, as AWS prices GiB-months and IOPS-months. */
export const HOURS_PER_MONTH = 730;
/** result.json, cluster results and reports of one run, kept in S3 for a month. */
const RESULTS_GIB = 0.01;
/** The root volume of a host when the spec has no aws section to say (the section's default). */
const DEFAULT_ROOT_VOLUME_GIB = 20;

/** Room on a gp3 volume beyond the data estimate (file system overhead, WAL bursts), as on local volumes. */
const VOLUME_HEADROOM_GIB = 2;
/** gp3 allows at most 500 provisioned IOPS per GiB. */
const GP3_MAX_IOPS_PER_GIB = 500;

/** Size of a class's gp3 data volume: the spec's size, or the data estimate plus headroom; large enough for its IOPS. */
export function dataVolumeGiB(volumeBytes: number, cls: StorageClassSpec): number {
  const limits = classLimits(cls);
  const wanted = cls.sizeGiB ?? volumeBytes / 2 ** 30 + VOLUME_HEADROOM_GIB;
  const forIops = limits ? limits.iops / GP3_MAX_IOPS_PER_GIB : 1;
  return Math.ceil(Math.max(1, wanted, forIops));
}

/** Where to read how to make each field a run on AWS needs. */
const AWS_PAGE = 'infra/providers/aws/README.md';

/**
 * Fields a real run on AWS cannot do without (a dry run needs none of them). Each problem names the field and
 * what to put there; infra/providers/aws/README.md shows how to make each.
 */
export function awsRunProblems(aws: AwsSpec | undefined): SpecProblem[] {
  if (!aws) return [{ path: 'aws', message: `provider "aws" needs an aws section; see ${AWS_PAGE}` }];
  const problems: SpecProblem[] = [];
  const need = (field: keyof AwsSpec, what: string) => {
    if (!aws[field]) problems.push({ path: `aws.${field}`, message: `is required for a run on AWS: ${what}` });
  };
  need('subnetId', 'the subnet the hosts start in (its availability zone must offer the instance type), e.g. subnet-0abc...');
  need('instanceProfileName', 'an instance profile whose role has infra/providers/aws/iam/host-policy.json (SSM parameters, the agent package)');
  need('temporalAddress', 'host:port the host agents dial: your Temporal Cloud namespace endpoint or self-hosted frontend');
  if (!aws.imageId && !aws.imageSsmParameter)
    problems.push({ path: 'aws.imageId', message: 'set an AMI id or aws.imageSsmParameter (a public Debian 12 parameter by default)' });
  if (aws.temporalTlsCertParameter && !aws.temporalTlsKeyParameter)
    problems.push({ path: 'aws.temporalTlsKeyParameter', message: 'mTLS needs the key parameter with the certificate parameter' });
  if (aws.temporalTlsKeyParameter && !aws.temporalTlsCertParameter)
    problems.push({ path: 'aws.temporalTlsCertParameter', message: 'mTLS needs the certificate parameter with the key parameter' });
  return problems;
}

/**
 * The spec with every price at least `floor`'s: a spec may quote a higher price than the control worker's, never a
 * lower one, so a ceiling holds whatever prices the spec writes. An instance type without a floor keeps no price.
 */
export function withPriceFloor<S extends { aws?: AwsSpec }>(spec: S, floor: { hourly: Readonly<Record<string, number>>; storage: Readonly<StoragePricesUsd> }): S {
  const own = spec.aws;
  if (!own) return spec;
  const hourly: Record<string, number> = {};
  for (const [type, price] of Object.entries(floor.hourly)) hourly[type] = Math.max(price, own.hourlyPriceUsd[type] ?? 0);
  const storage = { ...floor.storage };
  for (const key of Object.keys(storage) as (keyof StoragePricesUsd)[]) storage[key] = Math.max(storage[key], own.storagePriceUsd[key]);
  return { ...spec, aws: { ...own, hourlyPriceUsd: hourly, storagePriceUsd: storage } };
}

/**
 * EC2 at the section's list prices: instance-hours on demand, each host's gp3 root volume, an EBS class's gp3 data
 * volumes and what they are provisioned above gp3's baseline, the results in S3 for a month and, with an S3 backup
 * store, one base backup per cluster for a month.
 */
const awsCost: CostModel<AwsSpec> = {
  title: 'AWS list prices',
  priceNote: 'on-demand list prices from the spec (aws.hourlyPriceUsd, aws.storagePriceUsd); taxes, data transfer and Temporal Cloud are not included',
  price(run: PricedRun<AwsSpec>) {
    const aws = run.section;
    const prices = aws?.storagePriceUsd ?? LIST_PRICES_USD.storage;
    const lines: CostLine[] = [];
    const missingPrices: string[] = [];
    const line = (item: string, quantity: number, unit: string, unitPriceUsd: number | null) => {
      const priced = costLine(item, quantity, unit, unitPriceUsd);
      if (priced) lines.push(priced);
    };
    const hostHours = run.hosts.reduce((sum, h) => sum + h.hours, 0);
    const hourly = aws?.hourlyPriceUsd[run.instanceType] ?? null;
    if (hourly === null) missingPrices.push(`aws.hourlyPriceUsd.${run.instanceType}`);
    line(`${run.instanceType} on-demand`, hostHours, 'instance-hours', hourly);
    const rootGiB = aws?.rootVolumeGiB ?? DEFAULT_ROOT_VOLUME_GIB;
    line(`root volumes (${rootGiB} GiB gp3 each)`, (rootGiB * hostHours) / HOURS_PER_MONTH, 'GiB-months', prices.gp3GiBMonth);
    for (const [className, cls] of Object.entries(run.storageClasses)) {
      const limits = classLimits(cls);
      if (cls.kind !== 'ebs' || !limits) continue;
      const months = run.hosts.filter((h) => h.className === className).reduce((sum, h) => sum + h.hours, 0) / HOURS_PER_MONTH;
      const gib = dataVolumeGiB(run.volumeBytes, cls);
      line(`${className}: gp3 data volumes (${gib} GiB each)`, gib * months, 'GiB-months', prices.gp3GiBMonth);
      line(`${className}: gp3 IOPS above ${GP3_BASELINE.iops}`, (limits.iops - GP3_BASELINE.iops) * months, 'IOPS-months', prices.gp3IopsMonth);
      line(
        `${className}: gp3 throughput above ${GP3_BASELINE.throughputMiBps} MiB/s`,
        (limits.throughputMiBps - GP3_BASELINE.throughputMiBps) * months,
        'MiB/s-months',
        prices.gp3MiBpsMonth,
      );
    }
    line('S3: results and reports (one month)', RESULTS_GIB, 'GiB-months', prices.s3GiBMonth);
    if (run.s3Backups) line('S3: backups, one base backup per cluster (per month kept)', (run.hosts.length * run.volumeBytes) / 2 ** 30, 'GiB-months', prices.s3GiBMonth);
    // A published data set: S3 Standard for its days (a restore's GETs and the transfer to EC2 in the region are free
    // of transfer charges; the requests are not priced here).
    if (run.dataSetInS3)
      line(
        `S3: the data set, ${run.dataSetInS3.gib} GiB (uncompressed: an upper bound of WAL-G's lz4 backup) kept ${run.dataSetInS3.keepDays} days`,
        (run.dataSetInS3.gib * run.dataSetInS3.keepDays * 24) / HOURS_PER_MONTH,
        'GiB-months',
        prices.s3GiBMonth,
      );
    return { lines, missingPrices };
  },
  hostHour(aws, instanceType) {
    const hourly = aws?.hourlyPriceUsd[instanceType];
    if (hourly === undefined) return { missingPrice: `aws.hourlyPriceUsd.${instanceType}` };
    const rootGiB = aws?.rootVolumeGiB ?? DEFAULT_ROOT_VOLUME_GIB;
    const storage = aws?.storagePriceUsd.gp3GiBMonth ?? LIST_PRICES_USD.storage.gp3GiBMonth;
    return { instanceUsd: hourly, usd: hourly + (rootGiB * storage) / HOURS_PER_MONTH };
  },
  ceiling: (aws) => (aws?.maxCostUsd === undefined ? null : { usd: aws.maxCostUsd, field: 'aws.maxCostUsd' }),
};

export const awsProvider = defineProvider({
  name: 'aws',
  where: 'on AWS',
  onThisMachine: false,
  storageKinds: ['instance-store', 'ebs'],
  // Hosts on several machines share no folder.
  backupStores: ['s3'],
  // EC2's instance ids: i- and 8 or 17 hex digits.
  instanceIdPattern: /^i-[0-9a-f]{8,32}$/,
  // A cloud boot installs packages (apt, PGDG, Node, npm ci) before the agent starts.
  agentStartSeconds: 15 * 60,
  // An instance reboot or a slow cloud API.
  deadAfterSeconds: 600,
  // Each host installs its server's major from apt.postgresql.org with matching tools.
  clientToolsMajor: null,
  cutsNetwork: false,
  section: AwsSchema,
  sectionMissing: `provider "aws" needs an aws section (region, subnetId, resultsBucket, temporalAddress; see ${AWS_PAGE})`,
  runProblems: awsRunProblems,
  volumeGiB: (cls, volumeBytes) => (cls.kind === 'ebs' ? dataVolumeGiB(volumeBytes, cls) : null),
  cost: awsCost,
  presets: {
    /** The published experiment: 4 + 4 m6id.4xlarge clusters, instance-store NVMe vs gp3 at 3,000 IOPS. */
    'seed-full': {
      name: 'seed-full',
      provider: 'aws',
      storageClasses: {
        nvme: { kind: 'instance-store' },
        gp3: { kind: 'ebs', iops: 3000, throughputMiBps: 125 },
      },
      compare: { baseline: 'gp3', candidate: 'nvme' },
      clustersPerClass: 4,
      maxParallelClusters: 8,
      host: { memoryLimitMiB: 65_536, instanceType: 'm6id.4xlarge' },
      postgres: { sharedBuffersMiB: 16_384, maxWalSizeMiB: 65_536, settings: { checkpoint_timeout: '30min' } },
      // A full count of 3.3 billion rows takes an hour on gp3; the chunk table already proves every chunk loaded once.
      data: { scale: 33_000, chunkRows: 5_000_000, loadWriters: 16, verifyRows: false },
      workload: { clients: 64, threads: 16, durationSeconds: 300, warmupSeconds: 60, script: RANDOM_UPDATE_SCRIPT },
      phases: { checkpoint: { enabled: true }, vacuum: { enabled: true, bloatMB: 10_240 }, backlog: { enabled: true, backlogMB: 10_240 } },
      sampler: { enabled: true, intervalMs: 50 },
      durability: { enabled: false, archiveTimeoutSeconds: 60, backupStore: { kind: 'folder' } },
      aws: { region: 'us-east-1' },
      expiresAfterHours: 24,
    },
  },
  setup: `start the control worker with STORAGE_LAB_AWS=1 (see ${AWS_PAGE})`,
});
