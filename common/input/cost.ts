/**
 * What a run costs on a provider that prices its hosts (its cost model, common/providers/: EC2 at the list prices in
 * the spec's section): an estimate before start from a simple duration model, and the figure after from the
 * host-hours the clusters measured. Pure: the CLI prints the estimate, writeResults stores both in result.json.
 */
import type { SpecProblem } from '../core/errors';
import type { ClusterResult } from '../results/result';
import type { FailoverDrillSpec, RestoreDrillSpec } from './drill-spec';
import { classLimits, phaseContext, volumeBytes, type ExperimentSpec } from './spec';
import { phasesEstimateSeconds } from '../phases/registry';
import { providerOf, type AnyProvider } from '../providers/registry';
import { roundTo, type CostLine, type CostModel } from '../providers/kit';
import { accountRows, dataSetBytes } from './data-size';
import { DEFAULT_KEEP_DAYS, RESTORE_ASSUMPTIONS, dataSetsOff, estimatedRestoreSeconds, planPreparation, type PlannedPreparation } from './data-set';

export type { CostLine } from '../providers/kit';

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
} as const;

/** Cost of a run from host-hours: estimated before the start, or measured after. */
export interface CostFigure {
  basis: 'estimate' | 'measured';
  hostHours: number;
  /** Start to end of the run with the spec's parallelism (estimate only). */
  wallHours?: number;
  lines: CostLine[];
  /** Sum of the priced lines; null when a price is missing. */
  totalUsd: number | null;
  /** Spec fields to add for a complete figure, e.g. the hourly price of an instance type the section lacks. */
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

/**
 * Hours one host of a class is expected to live: boot, load, measurements, phases, teardown. With data sets
 * (planPreparation), `preparation` replaces the load: the first host's load and publish, every other's restore.
 */
export function estimatedHostHours(spec: ExperimentSpec, className: string, preparation?: PlannedPreparation): number {
  const cls = spec.storageClasses[className];
  const a = COST_ASSUMPTIONS;
  const nvme = cls.kind !== 'ebs';
  const deviceMiBps = classLimits(cls)?.throughputMiBps ?? a.instanceStoreMiBps;
  const dataBytes = volumeBytes(spec);
  const loadSeconds = Math.max(
    accountRows(spec.data.scale) / (spec.data.loadWriters * a.loadRowsPerSecondPerWriter),
    (dataBytes * a.loadIoFactor) / (deviceMiBps * 2 ** 20),
  );
  // The publish is a restore's bytes read back (estimatedRestoreSeconds); a restore replaces the load.
  const prepareSeconds =
    preparation === undefined || preparation.step === 'load'
      ? loadSeconds
      : preparation.step === 'restore'
        ? (preparation.waitSeconds ?? 0) + estimatedRestoreSeconds(spec, className)
        : loadSeconds + estimatedRestoreSeconds(spec, className);
  const measureSeconds = spec.workload.warmupSeconds + spec.workload.durationSeconds;
  const phaseSeconds = phasesEstimateSeconds(spec.phases, phaseContext(spec, className), nvme ? 'nvme' : 'gp3');
  const seconds = (a.bootMinutes + a.teardownMinutes) * 60 + prepareSeconds + measureSeconds + phaseSeconds;
  return seconds / 3600;
}

/** The cost model of the spec's provider; a provider without one prices nothing (ask providerOf(...).cost first). */
function costModelOf(spec: { provider: ExperimentSpec['provider'] }): { provider: AnyProvider; model: CostModel<unknown> } {
  const provider = providerOf(spec.provider);
  if (!provider.cost) throw new Error(`provider "${provider.name}" prices nothing: its hosts cost nothing the lab can count`);
  return { provider, model: provider.cost };
}

/** The estimate before a run starts. */
export function estimateCost(spec: ExperimentSpec): CostFigure {
  // With data sets, the first host loads and publishes and every other restores (planPreparation's order).
  const withSets = dataSetsOff(spec) === null;
  const hosts = withSets
    ? planPreparation(spec).map((p) => ({ className: p.className, hours: estimatedHostHours(spec, p.className, p) }))
    : Object.keys(spec.storageClasses).flatMap((className) => Array.from({ length: spec.clustersPerClass }, () => ({ className, hours: estimatedHostHours(spec, className) })));
  const waves = Math.ceil(hosts.length / Math.max(1, spec.maxParallelClusters));
  const longest = Math.max(0, ...hosts.map((h) => h.hours));
  const a = COST_ASSUMPTIONS;
  return {
    ...priced(spec, hosts, 'estimate'),
    wallHours: round(waves * longest, 2),
    notes: [
      `duration model: ${a.bootMinutes} min boot, ${withSets ? `data sets: the first host loads and publishes, the others restore, those started with it after waiting for its publish (WAL-G fetch at ${RESTORE_ASSUMPTIONS.fetchMiBps} MiB/s or the device's rate, the slower; the comparison's checks not included), ` : ''}load at the slower of ${a.loadRowsPerSecondPerWriter.toLocaleString('en-US')} rows/s per writer and ${a.loadIoFactor}x the data over the device (gp3: its MiB/s; NVMe: ${a.instanceStoreMiBps} MiB/s), warm-up + run, each phase at the reference's rate where it measured one (common/phases/), ${a.teardownMinutes} min teardown`,
      costModelOf(spec).model.priceNote,
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

/**
 * The data set a run keeps in an S3 store (sets on, the store S3): its size, taken as the database's uncompressed
 * (dataSetBytes; an upper bound of what WAL-G's lz4 backup stores), and the days it is kept (dataSets.keepDays).
 */
export function dataSetInS3(spec: ExperimentSpec): { gib: number; keepDays: number } | null {
  if (dataSetsOff(spec) !== null || spec.durability.backupStore.kind !== 's3') return null;
  return { gib: round(dataSetBytes(spec.data.scale) / 2 ** 30, 1), keepDays: spec.dataSets?.keepDays ?? DEFAULT_KEEP_DAYS };
}

function priced(
  spec: ExperimentSpec,
  hosts: { className: string; hours: number }[],
  basis: CostFigure['basis'],
): Omit<CostFigure, 'notes' | 'wallHours'> {
  const { provider, model } = costModelOf(spec);
  const { lines, missingPrices } = model.price({
    section: provider.sectionIn(spec),
    instanceType: spec.host.instanceType,
    storageClasses: spec.storageClasses,
    hosts,
    volumeBytes: volumeBytes(spec),
    s3Backups: spec.durability.enabled && spec.durability.backupStore.kind === 's3',
    dataSetInS3: dataSetInS3(spec),
  });
  const hostHours = hosts.reduce((sum, h) => sum + h.hours, 0);
  const totalUsd = lines.some((l) => l.usd === null) ? null : round(lines.reduce((sum, l) => sum + (l.usd ?? 0), 0), 2);
  return { basis, hostHours: round(hostHours, 3), lines, totalUsd, missingPrices };
}

/** The most a run may cost, the spec field a message names, and who set the figure (for the message). */
export interface CostCeiling {
  usd: number;
  field: string;
  /** The spec's field (the section's own ceiling), or the control worker's variable. */
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
  const { provider, model } = costModelOf(spec);
  const hour = model.hostHour(provider.sectionIn(spec), type);
  if ('missingPrice' in hour)
    return [{ path: hour.missingPrice, message: `no price, so the drill cannot be held to its cost ceiling of $${ceiling.usd} (${ceiling.source}); add the on-demand price in USD per hour` }];
  const hourly = hour.instanceUsd;
  const usd = hosts * hours * hour.usd;
  if (usd <= ceiling.usd) return [];
  const lower = kind === 'restore' ? 'data.scale, workload.beforeSeconds, workload.afterSeconds or restoreTimeoutSeconds' : 'rounds or the writer\'s seconds';
  return [
    {
      path: ceiling.field,
      message: `the ${kind} drill is estimated at $${usd.toFixed(2)} (${hosts} ${type} hosts for ${round(hours, 2)} h each at $${hourly}/h, with their root volumes), above its ceiling of $${ceiling.usd} (${ceiling.source}); lower ${lower}, or choose a smaller host.instanceType`,
    },
  ];
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

const round = roundTo;

/** The report's cost section: the estimate and the measured figure, each line priced at its provider's prices. */
export function costMarkdown(cost: RunCost, provider: ExperimentSpec['provider']): string[] {
  const lines = [`## Cost (${providerOf(provider).cost?.title ?? 'prices'})`, ''];
  for (const figure of [cost.estimate, cost.actual]) {
    if (!figure) continue;
    const [head, ...rest] = formatCost(figure);
    lines.push(`**${head}**`, '', ...rest.map((l) => `- ${l.trim()}`), '');
  }
  return lines;
}
