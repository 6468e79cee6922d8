/** What a spec will create and run, in words: the dry run prints it before anything exists. Pure. */
import { clusterBounds, failoverDrillBounds, formatBound, restoreDrillBounds } from './bounds';
import { drillInputFor, resolveFailoverDrill, resolveRestoreDrill } from './drill-spec';
import { hostIdFor } from '../core/ids';
import { classLimits, slowestPhaseContext, volumeBytes, type ExperimentSpec, type StorageClassSpec } from './spec';
import { describeBudget, deviceModelOf } from '../model/devices';
import { PHASES } from '../phases/registry';
import { providerOf } from '../providers/registry';
import { DEFAULT_KEEP_DAYS, dataSetsOff, planPreparation, type PlannedPreparation } from './data-set';
import { s3DataSetsPrefix } from '../core/ids';

export interface PlannedHost {
  hostId: string;
  className: string;
  kind: string;
  instanceType: string | null;
  volume: string;
}

export interface Plan {
  hosts: PlannedHost[];
  /** Each cluster's steps in order, with the bound that ends a hung one. */
  steps: string[];
  /** The durability drills after the clusters, with their steps' bounds. */
  drills: string[];
  parallel: number;
  /** Each host's data preparation, load or restore, with its estimated seconds (issue 31). */
  preparation: { hosts: (PlannedPreparation & { hostId: string })[]; note: string };
}

export function planRun(spec: ExperimentSpec, runId: string): Plan {
  const hosts: PlannedHost[] = [];
  const provider = providerOf(spec.provider);
  for (const [className, cls] of Object.entries(spec.storageClasses)) {
    const limits = classLimits(cls);
    // The provider's own size where it sizes volumes its own way (gp3's IOPS per GiB), else the spec's or the need.
    const gib = provider.volumeGiB?.(cls, volumeBytes(spec)) ?? cls.sizeGiB ?? Math.ceil(volumeBytes(spec) / 2 ** 30);
    for (let i = 0; i < spec.clustersPerClass; i++) {
      hosts.push({
        hostId: hostIdFor(runId, className, i),
        className,
        kind: cls.kind,
        instanceType: provider.onThisMachine ? null : spec.host.instanceType,
        volume: volumeLine(cls, gib, limits),
      });
    }
  }
  const b = clusterBounds(spec);
  const bound = (seconds: number) => ` (bound ${formatBound(seconds)})`;
  const steps = [
    `provision; the agent starts${bound(b.agentStartSeconds)}`,
    'configure Postgres',
    `load scale ${spec.data.scale} (${(spec.data.scale * 1e5).toLocaleString('en-US')} rows, ${spec.data.loadWriters} writers)${bound(b.loadHours * 3600)}`,
  ];
  if (spec.durability.enabled) steps.push(`WAL archiving + base backup with ${spec.durability.tool}${bound(b.bulkSeconds)}`);
  if (spec.workload.warmupSeconds > 0) steps.push(`warm-up ${spec.workload.warmupSeconds} s${bound(b.measureSeconds)}`);
  const ownClients = Object.entries(spec.storageClasses).filter(([, c]) => c.clients !== undefined).map(([name, c]) => `${name} ${c.clients}`);
  steps.push(
    `TPS run: ${spec.workload.clients} clients${ownClients.length ? ` (${ownClients.join(', ')})` : ''}, ${spec.workload.threads} threads, ${spec.workload.durationSeconds} s${bound(b.measureSeconds)}`,
  );
  const slowest = slowestPhaseContext(spec);
  for (const p of PHASES) {
    const line = p.planLine(spec.phases, slowest, bound);
    if (line) steps.push(line);
  }
  steps.push('save results', 'teardown');
  steps.push(`a host silent for ${formatBound(b.deadAfterSeconds)} is dead (host.deadAfterSeconds)`);
  return { hosts, steps, drills: planDrills(spec), parallel: Math.min(spec.maxParallelClusters, hosts.length), preparation: planPreparationText(spec, runId) };
}

/** What a host's volume is, in words: a modelled class by its model's name and budget (common/model/devices.ts). */
function volumeLine(cls: StorageClassSpec, gib: number, limits: ReturnType<typeof classLimits>): string {
  if (cls.kind === 'instance-store') return 'instance-store NVMe (comes with the instance)';
  if (cls.kind === 'local-disk') return "this machine's disk";
  if (cls.kind === 'ebs') return `${gib} GiB gp3 EBS at ${limits?.iops} IOPS / ${limits?.throughputMiBps} MiB/s`;
  const model = deviceModelOf(cls);
  return model ? `${gib} GiB modelled volume: ${model.name} (${model.standsFor}), ${describeBudget(model)}` : `${gib} GiB ${cls.kind}`;
}

/** Load or restore per host, and what the plan assumes (and, where data sets are off, what they would save). */
function planPreparationText(spec: ExperimentSpec, runId: string): Plan['preparation'] {
  const off = dataSetsOff(spec);
  const hosts = planPreparation(spec).map((p) => ({ ...p, hostId: hostIdFor(runId, p.className, p.index) }));
  const total = (ps: PlannedPreparation[]) => ps.reduce((sum, p) => sum + p.seconds + (p.waitSeconds ?? 0), 0);
  const counts = (ps: PlannedPreparation[]) => {
    const loads = ps.filter((p) => p.step !== 'restore').length;
    const restores = ps.length - loads;
    return `${loads} load${loads === 1 ? '' : 's'}${restores ? ` and ${restores} restore${restores === 1 ? '' : 's'}` : ''}`;
  };
  const hydration = 'a restore writes every block onto the host\'s own volume (WAL-G backup-fetch), so a gp3 volume needs no hydration and no Fast Snapshot Restore (0 USD)';
  // The comparison's checks (every row's checksum, pg_amcheck when data.verifyRows) come after a restore, apart.
  const checks = 'each restored host then checks the set against its manifest (a checksum of every row), not in these figures';
  const store = spec.durability.backupStore;
  const kept =
    store.kind === 's3'
      ? `; the set lives in s3://${store.bucket}/${s3DataSetsPrefix(store.prefix)}/ for ${spec.dataSets?.keepDays ?? DEFAULT_KEEP_DAYS} days (dataSets.keepDays; its S3 storage is a line of the cost estimate)`
      : '';
  if (off === null) {
    const waiting = hosts.filter((h) => h.waitSeconds);
    const later = planPreparation(spec, true, true);
    const noSets = planPreparation(spec, false);
    const waits = waiting.length
      ? ` (${waiting.length} of them provisioned with the first host wait ~${formatBound(waiting[0].waitSeconds!)} for its publish, idle, then restore)`
      : '';
    return {
      hosts,
      note:
        `${counts(hosts)}, ${formatBound(total(hosts))} of preparation host time${waits}; a later run, with the set published (storage-lab datasets list${store.kind === 's3' ? ` --s3-bucket ${store.bucket}` : ''}), ` +
        `restores every host: ${counts(later)}, ${formatBound(total(later))}; every host loading its own: ${counts(noSets)}, ${formatBound(total(noSets))}; ${checks}${kept}; ${hydration}`,
    };
  }
  const alternative = planPreparation(spec, true);
  return {
    hosts,
    note: `${counts(hosts)}, ${formatBound(total(hosts))} of preparation host time: ${off}. With data sets: ${counts(alternative)}, ${formatBound(total(alternative))}; ${hydration}`,
  };
}

/** The drills an experiment runs after its clusters, each step with its bound. */
function planDrills(spec: ExperimentSpec): string[] {
  return spec.durability.drills.map((kind) => {
    if (kind === 'restore') {
      const d = resolveRestoreDrill(drillInputFor(kind, spec));
      const b = restoreDrillBounds(d);
      return `restore drill: load scale ${d.data.scale} with ${d.data.loadWriters} writers (bound ${formatBound(b.loadHours * 3600)}), base backup and restore with ${d.backup.tool} (bound ${formatBound(b.bulkSeconds)} each), writes and replay (bound ${formatBound(b.measureSeconds)})`;
    }
    const d = resolveFailoverDrill(drillInputFor(kind, spec));
    const b = failoverDrillBounds(d);
    return `failover drill: ${d.rounds} round${d.rounds === 1 ? '' : 's'} of kill -9 and promotion (each step bound ${formatBound(b.measureSeconds)})`;
  });
}
