/**
 * What a run costs on AWS at the list prices in the spec (aws.hourlyPriceUsd, aws.storagePriceUsd): an estimate
 * before start from a simple duration model, and the figure after from the host-hours the clusters measured.
 * Pure: the CLI prints the estimate, writeResults stores both in result.json.
 */
import { dataVolumeGiB } from './aws';
import type { SpecProblem } from '../core/errors';
import type { ClusterResult } from '../results/result';
import type { FailoverDrillSpec, RestoreDrillSpec } from './drill-spec';
import { classLimits, GP3_BASELINE, LIST_PRICES_USD, phaseContext, volumeBytes, type ExperimentSpec, type StoragePricesUsd } from './spec';
import { phasesEstimateSeconds } from '../phases/registry';
import { accountRows, dataSetBytes } from './data-size';

/** Hours in a billing month, as AWS prices GiB-months and IOPS-months. */
export const HOURS_PER_MONTH = 730;

/** The duration model's assumptions, listed with every estimate. */
export const COST_ASSUMPTIONS = {
  /** Instance start plus the bootstrap's installs (apt, PGDG, Node, npm ci) and file system creation. */
  bootMinutes: 10,
  teardownMinutes: 3,
  /** The resumable loader's rate per parallel writer when the CPU, not the device, limits it. */
  loadRowsPerSecondPerWriter: 25_000,
  /** Bytes moved per byte of data during the load: heap and WAL written, heap read back for the indexes. */
  loadIoFactor: 2.5,
  /** Sequential write rate assumed for instance-store NVMe (gp3 uses the class's provisioned MiB/s). */
  instanceStoreMiBps: 1_000,
  /** result.json, cluster results and reports of one run. */
  resultsGiB: 0.01,
} as const;

/** One priced item. `usd` is null when its price is missing from the spec. */
export interface CostLine {
  item: string;
  quantity: number;
  unit: string;
  unitPriceUsd: number | null;
  usd: number | null;
}

/** Cost of a run from host-hours: estimated before the start, or measured after. */
export interface CostFigure {
  basis: 'estimate' | 'measured';
  hostHours: number;
  /** Start to end of the run with the spec's parallelism (estimate only). */
  wallHours?: number;
  lines: CostLine[];
  /** Sum of the priced lines; null when a price is missing. */
  totalUsd: number | null;
  /** Spec fields to add for a complete figure, e.g. aws.hourlyPriceUsd.m6i.4xlarge. */
  missingPrices: string[];
  notes: string[];
}

/** The `cost` section of result.json. */
export interface RunCost {
  currency: 'USD';
  estimate: CostFigure;
  /** From the clusters' measured start and end; null when no cluster ran. */
  actual: CostFigure | null;
}

/** Hours one host of a class is expected to live: boot, load, measurements, phases, teardown. */
export function estimatedHostHours(spec: ExperimentSpec, className: string): number {
  const cls = spec.storageClasses[className];
  const a = COST_ASSUMPTIONS;
  const nvme = cls.kind !== 'ebs';
  const deviceMiBps = classLimits(cls)?.throughputMiBps ?? a.instanceStoreMiBps;
  const dataBytes = volumeBytes(spec);
  const loadSeconds = Math.max(
    accountRows(spec.data.scale) / (spec.data.loadWriters * a.loadRowsPerSecondPerWriter),
    (dataBytes * a.loadIoFactor) / (deviceMiBps * 2 ** 20),
  );
  const measureSeconds = spec.workload.warmupSeconds + spec.workload.durationSeconds;
  const phaseSeconds = phasesEstimateSeconds(spec.phases, phaseContext(spec, className), nvme ? 'nvme' : 'gp3');
  const seconds = (a.bootMinutes + a.teardownMinutes) * 60 + loadSeconds + measureSeconds + phaseSeconds;
  return seconds / 3600;
}

/** The estimate before a run starts. */
export function estimateCost(spec: ExperimentSpec): CostFigure {
  const hosts = Object.keys(spec.storageClasses).flatMap((className) =>
    Array.from({ length: spec.clustersPerClass }, () => ({ className, hours: estimatedHostHours(spec, className) })),
  );
  const waves = Math.ceil(hosts.length / Math.max(1, spec.maxParallelClusters));
  const longest = Math.max(0, ...hosts.map((h) => h.hours));
  const a = COST_ASSUMPTIONS;
  return {
    ...priced(spec, hosts, 'estimate'),
    wallHours: round(waves * longest, 2),
    notes: [
      `duration model: ${a.bootMinutes} min boot, load at the slower of ${a.loadRowsPerSecondPerWriter.toLocaleString('en-US')} rows/s per writer and ${a.loadIoFactor}x the data over the device (gp3: its MiB/s; NVMe: ${a.instanceStoreMiBps} MiB/s), warm-up + run, each phase at the reference's rate where it measured one (common/phases/), ${a.teardownMinutes} min teardown`,
      'on-demand list prices from the spec (aws.hourlyPriceUsd, aws.storagePriceUsd); taxes, data transfer and Temporal Cloud are not included',
    ],
  };
}

/** The figure after the run, from each cluster's measured start and end (teardown after the result is saved excluded). */
export function actualCost(spec: ExperimentSpec, clusters: ClusterResult[]): CostFigure | null {
  const hosts = clusters
    .filter((c) => c.startedAt && c.finishedAt)
    .map((c) => ({ className: c.className, hours: (Date.parse(c.finishedAt) - Date.parse(c.startedAt)) / 3_600_000 }))
    .filter((h) => Number.isFinite(h.hours) && h.hours >= 0);
  if (hosts.length === 0) return null;
  return {
    ...priced(spec, hosts, 'measured'),
    notes: [
      `measured host-hours (provision to results saved; about ${COST_ASSUMPTIONS.teardownMinutes} min of teardown per host not included) at the spec's list prices`,
    ],
  };
}

/** Both figures, as stored in result.json. */
export function runCost(spec: ExperimentSpec, clusters: ClusterResult[]): RunCost {
  return { currency: 'USD', estimate: estimateCost(spec), actual: actualCost(spec, clusters) };
}

function priced(
  spec: ExperimentSpec,
  hosts: { className: string; hours: number }[],
  basis: CostFigure['basis'],
): Omit<CostFigure, 'notes' | 'wallHours'> {
  const aws = spec.aws;
  const prices = aws?.storagePriceUsd ?? LIST_PRICES_USD.storage;
  const lines: CostLine[] = [];
  const missingPrices: string[] = [];
  const line = (item: string, quantity: number, unit: string, unitPriceUsd: number | null) => {
    if (quantity <= 0) return;
    lines.push({
      item,
      quantity: round(quantity, 3),
      unit,
      unitPriceUsd,
      usd: unitPriceUsd === null ? null : round(quantity * unitPriceUsd, 2),
    });
  };
  const hostHours = hosts.reduce((sum, h) => sum + h.hours, 0);

  const instanceType = spec.host.instanceType;
  const hourly = aws?.hourlyPriceUsd[instanceType] ?? null;
  if (hourly === null) missingPrices.push(`aws.hourlyPriceUsd.${instanceType}`);
  line(`${instanceType} on-demand`, hostHours, 'instance-hours', hourly);
  line(`root volumes (${aws?.rootVolumeGiB ?? 20} GiB gp3 each)`, ((aws?.rootVolumeGiB ?? 20) * hostHours) / HOURS_PER_MONTH, 'GiB-months', prices.gp3GiBMonth);

  for (const [className, cls] of Object.entries(spec.storageClasses)) {
    const limits = classLimits(cls);
    if (cls.kind !== 'ebs' || !limits) continue;
    const months = hosts.filter((h) => h.className === className).reduce((sum, h) => sum + h.hours, 0) / HOURS_PER_MONTH;
    const gib = dataVolumeGiB(volumeBytes(spec), cls);
    line(`${className}: gp3 data volumes (${gib} GiB each)`, gib * months, 'GiB-months', prices.gp3GiBMonth);
    line(`${className}: gp3 IOPS above ${GP3_BASELINE.iops}`, (limits.iops - GP3_BASELINE.iops) * months, 'IOPS-months', prices.gp3IopsMonth);
    line(
      `${className}: gp3 throughput above ${GP3_BASELINE.throughputMiBps} MiB/s`,
      (limits.throughputMiBps - GP3_BASELINE.throughputMiBps) * months,
      'MiB/s-months',
      prices.gp3MiBpsMonth,
    );
  }
  line('S3: results and reports (one month)', COST_ASSUMPTIONS.resultsGiB, 'GiB-months', prices.s3GiBMonth);
  if (spec.durability.enabled && spec.durability.backupStore.kind === 's3')
    line('S3: backups, one base backup per cluster (per month kept)', (hosts.length * volumeBytes(spec)) / 2 ** 30, 'GiB-months', prices.s3GiBMonth);

  const totalUsd = lines.some((l) => l.usd === null) ? null : round(lines.reduce((sum, l) => sum + (l.usd ?? 0), 0), 2);
  return { basis, hostHours: round(hostHours, 3), lines, totalUsd, missingPrices };
}

/** The most a run may cost, the spec field a message names, and who set the figure (for the message). */
export interface CostCeiling {
  usd: number;
  field: string;
  /** "aws.maxCostUsd", or the control worker's variable. */
  source: string;
}

/** How many of an estimate's largest lines a refusal lists. */
const MAIN_TERMS = 3;

/**
 * The run's estimate (the dry run's, estimateCost) against a ceiling: nothing when it is at or below; otherwise one
 * problem with the estimate, its main terms, the ceiling and what to lower. An estimate without a price cannot be
 * held to any ceiling: each missing price is a problem.
 */
export function costCeilingProblems(spec: ExperimentSpec, ceiling: CostCeiling): SpecProblem[] {
  const estimate = estimateCost(spec);
  if (estimate.totalUsd === null)
    return estimate.missingPrices.map((path) => ({
      path,
      message: `no price, so the run cannot be held to its cost ceiling of $${ceiling.usd} (${ceiling.source}); add the on-demand price in USD per hour`,
    }));
  if (estimate.totalUsd <= ceiling.usd) return [];
  const terms = estimate.lines
    .filter((l) => l.usd !== null && l.usd > 0)
    .sort((a, b) => (b.usd ?? 0) - (a.usd ?? 0))
    .slice(0, MAIN_TERMS)
    .map((l) => `${l.item} ${l.quantity} ${l.unit} = $${(l.usd ?? 0).toFixed(2)}`);
  const hosts = Object.keys(spec.storageClasses).length * spec.clustersPerClass;
  return [
    {
      path: ceiling.field,
      message: `the run is estimated at $${estimate.totalUsd.toFixed(2)} for ${hosts} hosts (${terms.join('; ')}), above its ceiling of $${ceiling.usd} (${ceiling.source}); lower clustersPerClass, the storage classes, data.scale or the durations, or choose a smaller host.instanceType (storage-lab run --dry-run prints the estimate)`,
    },
  ];
}

/**
 * A drill's hosts and the hours each lives, by the experiment's duration model: every host from boot to teardown.
 * Restore: the source and the restore host through the load, a base backup, the writes around the target, the fetch
 * and at most restoreTimeoutSeconds of replay. Failover: three nodes and a client through two standby clones and every
 * round (the writes before the kill, the outage bound, the writes after, a minute to rejoin).
 */
export function drillHostHours(kind: 'restore' | 'failover', spec: RestoreDrillSpec | FailoverDrillSpec): { hosts: number; hours: number } {
  const a = COST_ASSUMPTIONS;
  const deviceMiBps = classLimits(spec.storageClass)?.throughputMiBps ?? a.instanceStoreMiBps;
  const copySeconds = (bytes: number) => bytes / (deviceMiBps * 2 ** 20);
  const fixed = (a.bootMinutes + a.teardownMinutes) * 60;
  if (kind === 'restore') {
    const r = spec as RestoreDrillSpec;
    const bytes = dataSetBytes(r.data.scale);
    const load = Math.max(accountRows(r.data.scale) / (r.data.loadWriters * a.loadRowsPerSecondPerWriter), copySeconds(bytes * a.loadIoFactor));
    const seconds = fixed + load + 2 * copySeconds(bytes) + r.workload.beforeSeconds + r.workload.afterSeconds + r.restoreTimeoutSeconds;
    return { hosts: 2, hours: seconds / 3600 };
  }
  const f = spec as FailoverDrillSpec;
  const round = f.writer.killAfterSeconds + f.writer.maxOutageSeconds + f.writer.afterFailoverSeconds + 60;
  return { hosts: 4, hours: (fixed + f.rounds * round) / 3600 };
}

/**
 * A drill's estimate (its instances and root volumes at the spec's prices) against a ceiling: nothing when it is at
 * or below, else one problem naming the ceiling's field, the estimate and what to lower; a missing price is a problem.
 */
export function drillCostProblems(kind: 'restore' | 'failover', spec: RestoreDrillSpec | FailoverDrillSpec, ceiling: CostCeiling): SpecProblem[] {
  const { hosts, hours } = drillHostHours(kind, spec);
  const type = spec.host.instanceType;
  const hourly = spec.aws?.hourlyPriceUsd[type];
  if (hourly === undefined)
    return [{ path: `aws.hourlyPriceUsd.${type}`, message: `no price, so the drill cannot be held to its cost ceiling of $${ceiling.usd} (${ceiling.source}); add the on-demand price in USD per hour` }];
  const rootGiB = spec.aws?.rootVolumeGiB ?? 20;
  const storage = spec.aws?.storagePriceUsd.gp3GiBMonth ?? LIST_PRICES_USD.storage.gp3GiBMonth;
  const usd = hosts * hours * (hourly + (rootGiB * storage) / HOURS_PER_MONTH);
  if (usd <= ceiling.usd) return [];
  const lower = kind === 'restore' ? 'data.scale, workload.beforeSeconds, workload.afterSeconds or restoreTimeoutSeconds' : 'rounds or the writer\'s seconds';
  return [
    {
      path: ceiling.field,
      message: `the ${kind} drill is estimated at $${usd.toFixed(2)} (${hosts} ${type} hosts for ${round(hours, 2)} h each at $${hourly}/h, with their root volumes), above its ceiling of $${ceiling.usd} (${ceiling.source}); lower ${lower}, or choose a smaller host.instanceType`,
    },
  ];
}

/**
 * The spec with every price at least `floor`'s: a spec may quote a higher price than the control worker's, never a
 * lower one, so a ceiling holds whatever prices the spec writes. An instance type without a floor keeps no price.
 */
export function withPriceFloor<S extends Pick<ExperimentSpec, 'aws'>>(spec: S, floor: { hourly: Readonly<Record<string, number>>; storage: Readonly<StoragePricesUsd> }): S {
  const own = spec.aws;
  if (!own) return spec;
  const hourly: Record<string, number> = {};
  for (const [type, price] of Object.entries(floor.hourly)) hourly[type] = Math.max(price, own.hourlyPriceUsd[type] ?? 0);
  const storage = { ...floor.storage };
  for (const key of Object.keys(storage) as (keyof StoragePricesUsd)[]) storage[key] = Math.max(storage[key], own.storagePriceUsd[key]);
  return { ...spec, aws: { ...own, hourlyPriceUsd: hourly, storagePriceUsd: storage } };
}

/** The figure as text lines, for the CLI and the report. */
export function formatCost(cost: CostFigure): string[] {
  const usd = (v: number | null) => (v === null ? 'no price' : `$${v.toFixed(2)}`);
  const out = [
    `${cost.basis === 'estimate' ? 'Estimated' : 'Measured'} cost: ${usd(cost.totalUsd)} for ${cost.hostHours.toFixed(1)} host-hours${cost.wallHours !== undefined ? ` (about ${cost.wallHours.toFixed(1)} h from start to end)` : ''}`,
  ];
  for (const l of cost.lines)
    out.push(`  ${l.item}: ${l.quantity} ${l.unit} x ${l.unitPriceUsd === null ? '?' : `$${l.unitPriceUsd}`} = ${usd(l.usd)}`);
  if (cost.missingPrices.length) out.push(`  add prices for a complete figure: ${cost.missingPrices.join(', ')}`);
  for (const n of cost.notes) out.push(`  (${n})`);
  return out;
}

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** The report's cost section: the estimate and the measured figure, each line priced. */
export function costMarkdown(cost: RunCost): string[] {
  const lines = ['## Cost (AWS list prices)', ''];
  for (const figure of [cost.estimate, cost.actual]) {
    if (!figure) continue;
    const [head, ...rest] = formatCost(figure);
    lines.push(`**${head}**`, '', ...rest.map((l) => `- ${l.trim()}`), '');
  }
  return lines;
}
