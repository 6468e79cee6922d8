/** What a spec will create and run, in words: the dry run prints it before anything exists. Pure. */
import { dataVolumeGiB } from './aws';
import { clusterBounds, failoverDrillBounds, formatBound, restoreDrillBounds } from './bounds';
import { drillInputFor, resolveFailoverDrill, resolveRestoreDrill } from './drill-spec';
import { hostIdFor } from '../core/ids';
import { classLimits, volumeBytes, type ExperimentSpec } from './spec';
import { dataSetsOff, planPreparation, type PlannedPreparation } from './data-set';

export interface PlannedHost {
  hostId: string;
  className: string;
  kind: string;
  instanceType: string | null;
  volume: string;
}

export interface Plan {
  hosts: PlannedHost[];
  /** Each cluster's phases in order, with the bound that ends a hung one. */
  phases: string[];
  /** The durability drills after the clusters, with their steps' bounds. */
  drills: string[];
  parallel: number;
  /** Each host's data preparation, load or restore, with its estimated seconds (issue 31). */
  preparation: { hosts: (PlannedPreparation & { hostId: string })[]; note: string };
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
        volume:
          cls.kind === 'instance-store'
            ? 'instance-store NVMe (comes with the instance)'
            : cls.kind === 'local-disk'
              ? "this machine's disk"
              : `${gib} GiB ${cls.kind === 'ebs' ? 'gp3 EBS' : 'emulated gp3 (loop device + cgroup limits)'} at ${limits?.iops} IOPS / ${limits?.throughputMiBps} MiB/s`,
      });
    }
  }
  const b = clusterBounds(spec);
  const bound = (seconds: number) => ` (bound ${formatBound(seconds)})`;
  const phases = [
    `provision; the agent starts${bound(b.agentStartSeconds)}`,
    'configure Postgres',
    `load scale ${spec.data.scale} (${(spec.data.scale * 1e5).toLocaleString('en-US')} rows, ${spec.data.loadWriters} writers)${bound(b.loadHours * 3600)}`,
  ];
  if (spec.durability.enabled) phases.push(`WAL archiving + base backup with ${spec.durability.tool}${bound(b.phaseSeconds)}`);
  if (spec.workload.warmupSeconds > 0) phases.push(`warm-up ${spec.workload.warmupSeconds} s${bound(b.measureSeconds)}`);
  const ownClients = Object.entries(spec.storageClasses).filter(([, c]) => c.clients !== undefined).map(([name, c]) => `${name} ${c.clients}`);
  phases.push(
    `TPS run: ${spec.workload.clients} clients${ownClients.length ? ` (${ownClients.join(', ')})` : ''}, ${spec.workload.threads} threads, ${spec.workload.durationSeconds} s${bound(b.measureSeconds)}`,
  );
  if (spec.phases.vacuum.enabled) phases.push(`bloat ${spec.phases.vacuum.bloatMB} MB + VACUUM${bound(b.phaseSeconds)}`);
  if (spec.phases.backlog.enabled) phases.push(`logical-replication backlog ${spec.phases.backlog.backlogMB} MB + drain${bound(b.phaseSeconds)}`);
  phases.push('save results', 'teardown');
  phases.push(`a host silent for ${formatBound(b.deadAfterSeconds)} is dead (host.deadAfterSeconds)`);
  return { hosts, phases, drills: planDrills(spec), parallel: Math.min(spec.maxParallelClusters, hosts.length), preparation: planPreparationText(spec, runId) };
}

/** Load or restore per host, and what the plan assumes (and, where data sets are off, what they would save). */
function planPreparationText(spec: ExperimentSpec, runId: string): Plan['preparation'] {
  const off = dataSetsOff(spec);
  const hosts = planPreparation(spec).map((p) => ({ ...p, hostId: hostIdFor(runId, p.className, p.index) }));
  const total = (ps: PlannedPreparation[]) => ps.reduce((sum, p) => sum + p.seconds, 0);
  const counts = (ps: PlannedPreparation[]) => {
    const loads = ps.filter((p) => p.step !== 'restore').length;
    const restores = ps.length - loads;
    return `${loads} load${loads === 1 ? '' : 's'}${restores ? ` and ${restores} restore${restores === 1 ? '' : 's'}` : ''}`;
  };
  const hydration = 'a restore writes every block onto the host\'s own volume (WAL-G backup-fetch), so a gp3 volume needs no hydration and no Fast Snapshot Restore (0 USD)';
  if (off === null)
    return { hosts, note: `${counts(hosts)}, ${formatBound(total(hosts))} of preparation host time (or only restores when a set of this key is published already: storage-lab datasets list); ${hydration}` };
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
      return `restore drill: load scale ${d.data.scale} with ${d.data.loadWriters} writers (bound ${formatBound(b.loadHours * 3600)}), base backup and restore with ${d.backup.tool} (bound ${formatBound(b.phaseSeconds)} each), writes and replay (bound ${formatBound(b.measureSeconds)})`;
    }
    const d = resolveFailoverDrill(drillInputFor(kind, spec));
    const b = failoverDrillBounds(d);
    return `failover drill: ${d.rounds} round${d.rounds === 1 ? '' : 's'} of kill -9 and promotion (each step bound ${formatBound(b.measureSeconds)})`;
  });
}
