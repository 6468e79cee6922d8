/** What a spec will create and run, in words: the dry run prints it before anything exists. Pure. */
import { dataVolumeGiB } from './aws';
import { clusterBounds, failoverDrillBounds, formatBound, restoreDrillBounds } from './bounds';
import { drillInputFor, resolveFailoverDrill, resolveRestoreDrill } from './drill-spec';
import { hostIdFor } from '../core/ids';
import { classLimits, slowestPhaseContext, volumeBytes, type ExperimentSpec, type StorageClassSpec } from './spec';
import { describeBudget, deviceModelOf } from '../model/devices';
import { PHASES } from '../phases/registry';

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
}

export function planRun(spec: ExperimentSpec, runId: string): Plan {
  const hosts: PlannedHost[] = [];
  for (const [className, cls] of Object.entries(spec.storageClasses)) {
    const limits = classLimits(cls);
    const gib = cls.kind === 'ebs' ? dataVolumeGiB(volumeBytes(spec), cls) : (cls.sizeGiB ?? Math.ceil(volumeBytes(spec) / 2 ** 30));
    for (let i = 0; i < spec.clustersPerClass; i++) {
      hosts.push({
        hostId: hostIdFor(runId, className, i),
        className,
        kind: cls.kind,
        instanceType: spec.provider === 'aws' ? spec.host.instanceType : null,
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
  return { hosts, steps, drills: planDrills(spec), parallel: Math.min(spec.maxParallelClusters, hosts.length) };
}

/** What a host's volume is, in words: a modelled class by its model's name and budget (common/model/devices.ts). */
function volumeLine(cls: StorageClassSpec, gib: number, limits: ReturnType<typeof classLimits>): string {
  if (cls.kind === 'instance-store') return 'instance-store NVMe (comes with the instance)';
  if (cls.kind === 'local-disk') return "this machine's disk";
  if (cls.kind === 'ebs') return `${gib} GiB gp3 EBS at ${limits?.iops} IOPS / ${limits?.throughputMiBps} MiB/s`;
  const model = deviceModelOf(cls);
  return model ? `${gib} GiB modelled volume: ${model.name} (${model.standsFor}), ${describeBudget(model)}` : `${gib} GiB ${cls.kind}`;
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
