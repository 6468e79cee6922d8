/** What a spec will create and run, in words: the dry run prints it before anything exists. Pure. */
import { dataVolumeGiB } from './aws';
import { hostIdFor } from './ids';
import { classLimits, volumeBytes, type ExperimentSpec } from './spec';

export interface PlannedHost {
  hostId: string;
  className: string;
  kind: string;
  instanceType: string | null;
  volume: string;
}

export interface Plan {
  hosts: PlannedHost[];
  phases: string[];
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
        volume:
          cls.kind === 'instance-store'
            ? 'instance-store NVMe (comes with the instance)'
            : cls.kind === 'local-disk'
              ? "this machine's disk"
              : `${gib} GiB ${cls.kind === 'ebs' ? 'gp3 EBS' : 'emulated gp3 (loop device + cgroup limits)'} at ${limits?.iops} IOPS / ${limits?.throughputMiBps} MiB/s`,
      });
    }
  }
  const phases = ['provision', 'configure Postgres', `load scale ${spec.data.scale} (${(spec.data.scale * 1e5).toLocaleString('en-US')} rows)`];
  if (spec.workload.warmupSeconds > 0) phases.push(`warm-up ${spec.workload.warmupSeconds} s`);
  phases.push(`TPS run: ${spec.workload.clients} clients, ${spec.workload.threads} threads, ${spec.workload.durationSeconds} s`);
  if (spec.phases.vacuum.enabled) phases.push(`bloat ${spec.phases.vacuum.bloatMB} MB + VACUUM`);
  if (spec.phases.backlog.enabled) phases.push(`logical-replication backlog ${spec.phases.backlog.backlogMB} MB + drain`);
  phases.push('save results', 'teardown');
  return { hosts, phases, parallel: Math.min(spec.maxParallelClusters, hosts.length) };
}
