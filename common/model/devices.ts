/**
 * The devices the lab models locally, each with the published figures it stands for: the one place their parameters
 * live. The provider hands them to the modelled volume's server (infra/volume), the report prints them beside what the
 * device delivered, and the predictor (common/model/predict.ts) takes a modelled class's budgets and latencies from
 * here. docs/storage-emulation.md lists the sources. Pure and workflow-safe.
 */
import type { StorageClassSpec } from '../input/spec';

/** The modelled devices: EBS gp3 and io2 (an `emulated-ebs` class) and m6id.4xlarge's instance-store NVMe (`nvme`). */
export const DEVICE_MODEL_NAMES = ['gp3', 'io2', 'nvme'] as const;
export type DeviceModelName = (typeof DEVICE_MODEL_NAMES)[number];

/** One published figure and where it comes from. */
export interface DeviceSource {
  figure: string;
  source: string;
}

/** A modelled device's properties, in the units people quote (the server's are derived: serverParams). */
export interface DeviceModel {
  name: DeviceModelName;
  /** The real device it stands for. */
  standsFor: string;
  /** One budget for reads and writes together (EBS), operations and MiB a second; null: none. */
  iops: number | null;
  throughputMiBps: number | null;
  /** Budgets per direction (an instance store publishes its read and write IOPS apart); null: none. */
  readIops: number | null;
  writeIops: number | null;
  readMiBps: number | null;
  writeMiBps: number | null;
  /** An I/O counts as ceil(size / unit) operations (EBS: 256 KiB); null: every I/O counts one. */
  opUnitKiB: number | null;
  /** Service time of one I/O when nothing queues, ms; a flush's own time (a WAL flush is a write, then a flush). */
  readLatencyMs: number;
  writeLatencyMs: number;
  flushLatencyMs: number;
  /** I/Os the device serves at once; more wait in its queue. */
  queueDepth: number;
  /** How far a budget runs ahead after idling (its bucket's depth), ms: the budget holds to within this over a window. */
  burstMs: number;
  sources: DeviceSource[];
}

/** EBS counts an I/O of up to 256 KiB as one operation, a larger one in 256 KiB units. */
export const EBS_OP_UNIT_KIB = 256;

const EBS_UNIT_SOURCE: DeviceSource = {
  figure: 'an I/O of up to 256 KiB is one operation; larger ones count in 256 KiB units',
  source: 'AWS CloudWatch, EBS VolumeConsumedReadWriteOps: "I/O operations that are larger than 256K are counted in 256K capacity units"',
};
const BURST_SOURCE: DeviceSource = {
  figure: 'bucket depth 5 ms',
  source: 'the lab\'s choice (not published): small enough that the budget holds to 0.5 % over a second, large enough for the server\'s wake-ups',
};
const QUEUE_SOURCE = (depth: number, why: string): DeviceSource => ({
  figure: `queue depth ${depth}`,
  source: `the lab's choice (not published): ${why}`,
});

/** gp3 at the class's IOPS and throughput (3,000 and 125 MiB/s unless the class says otherwise). */
export function gp3Model(iops = 3000, throughputMiBps = 125): DeviceModel {
  return {
    name: 'gp3',
    standsFor: `EBS gp3 at ${iops} IOPS and ${throughputMiBps} MiB/s`,
    iops,
    throughputMiBps,
    readIops: null,
    writeIops: null,
    readMiBps: null,
    writeMiBps: null,
    opUnitKiB: EBS_OP_UNIT_KIB,
    readLatencyMs: 1.05,
    writeLatencyMs: 2.0,
    flushLatencyMs: 0,
    queueDepth: 64,
    burstMs: 5,
    sources: [
      { figure: `${iops} IOPS and ${throughputMiBps} MiB/s, one budget for reads and writes`, source: 'AWS EBS user guide, gp3: baseline 3,000 IOPS and 125 MiB/s, provisioned up to 16,000 IOPS and 1,000 MiB/s' },
      EBS_UNIT_SOURCE,
      {
        figure: 'read 1.05 ms, write 2.0 ms',
        source:
          'Netflix service-capacity-modeling, hardware profile of gp3 (read_io_latency_ms mid 1.05, low 0.8, high 1.8; write_io_latency_ms mid 2, low 1.2, high 4); AWS: gp3 delivers "single-digit millisecond latency"',
      },
      { figure: 'flush 0 ms', source: 'EBS acknowledges a write once it is durable: a flush has nothing left to do (no published flush time)' },
      QUEUE_SOURCE(64, 'above what the budget keeps busy (3,000 IOPS x 2 ms = 6 I/Os); I/Os held by the budget count in the queue, as in EBS VolumeQueueLength'),
      BURST_SOURCE,
    ],
  };
}

/** io2 Block Express at the class's IOPS; its throughput scales with the IOPS (256 KiB each) up to 4,000 MiB/s. */
export function io2Model(iops = 3000, throughputMiBps?: number): DeviceModel {
  const mibps = throughputMiBps ?? Math.min(4000, iops / 4);
  return {
    ...gp3Model(iops, mibps),
    name: 'io2',
    standsFor: `EBS io2 Block Express at ${iops} IOPS and ${mibps} MiB/s`,
    readLatencyMs: 0.45,
    writeLatencyMs: 0.45,
    sources: [
      { figure: `${iops} IOPS, ${mibps} MiB/s, one budget`, source: 'AWS EBS user guide, io2 Block Express: up to 256,000 IOPS and 4,000 MiB/s' },
      EBS_UNIT_SOURCE,
      {
        figure: 'read and write 0.45 ms',
        source: 'AWS EBS user guide: io2 Block Express is "designed to deliver an average latency of under 500 microseconds for 16KiB I/O operations" (just under it taken)',
      },
      { figure: 'flush 0 ms', source: 'as gp3: EBS acknowledges a durable write' },
      QUEUE_SOURCE(64, 'as gp3'),
      BURST_SOURCE,
    ],
  };
}

/** m6id.4xlarge's instance store: one 950 GB NVMe SSD (AWS Nitro SSD), read and write budgets published apart. */
export function nvmeModel(): DeviceModel {
  return {
    name: 'nvme',
    standsFor: "m6id.4xlarge's instance-store NVMe SSD (1 x 950 GB)",
    iops: null,
    throughputMiBps: null,
    readIops: 268_336,
    writeIops: 134_168,
    readMiBps: 1205,
    writeMiBps: 577,
    opUnitKiB: null,
    readLatencyMs: 0.125,
    writeLatencyMs: 0.125,
    flushLatencyMs: 0,
    queueDepth: 128,
    burstMs: 5,
    sources: [
      {
        figure: '268,336 random read and 134,168 random write IOPS (4 KiB)',
        source: 'AWS EC2 instance types, general purpose instance-store volumes: m6id.4xlarge 100 % random read / write IOPS (as quoted in Redpanda\'s iotune data, src/go/rpk/pkg/tuners/iotune/data.go; Netflix service-capacity-modeling auto_m6id.json: 268,332 / 134,168)',
      },
      {
        figure: 'read 1,205 MiB/s, write 577 MiB/s',
        source: 'Redpanda iotune measurements of m7gd.4xlarge, whose disks m6id shares (read_bandwidth 1,263,357,056 B/s, write_bandwidth 604,995,968 B/s)',
      },
      { figure: 'read 0.125 ms', source: 'Netflix service-capacity-modeling, m6id instance store read_io_latency_ms (low 0.1, mid 0.125, high 0.17)' },
      { figure: 'write 0.125 ms', source: 'no published write latency: the read figure taken (an NVMe SSD acknowledges a write from its power-protected cache no slower than it reads)' },
      { figure: 'flush 0 ms', source: 'no published flush time: taken as nothing beyond the write' },
      QUEUE_SOURCE(128, 'above what the published IOPS need at the model\'s latency (268,336 x 0.125 ms = 34 I/Os)'),
      BURST_SOURCE,
    ],
  };
}

/** The model a storage class runs on locally, or null for a class that is not modelled (the machine's disk, AWS). */
export function deviceModelOf(cls: Pick<StorageClassSpec, 'kind' | 'iops' | 'throughputMiBps'> & { volumeType?: 'gp3' | 'io2' }): DeviceModel | null {
  if (cls.kind === 'nvme') return nvmeModel();
  if (cls.kind !== 'emulated-ebs') return null;
  return cls.volumeType === 'io2' ? io2Model(cls.iops, cls.throughputMiBps) : gp3Model(cls.iops, cls.throughputMiBps);
}

/** The parameters the volume server takes (infra/volume/model.go Params): bytes, microseconds. */
export interface VolumeServerParams {
  name: DeviceModelName;
  iops: number;
  bytesPerSecond: number;
  readIops: number;
  writeIops: number;
  readBytesPerSecond: number;
  writeBytesPerSecond: number;
  opUnitBytes: number;
  readLatencyUs: number;
  writeLatencyUs: number;
  flushLatencyUs: number;
  queueDepth: number;
  burstMs: number;
}

export function serverParams(m: DeviceModel): VolumeServerParams {
  const mib = (v: number | null) => (v ?? 0) * 2 ** 20;
  return {
    name: m.name,
    iops: m.iops ?? 0,
    bytesPerSecond: mib(m.throughputMiBps),
    readIops: m.readIops ?? 0,
    writeIops: m.writeIops ?? 0,
    readBytesPerSecond: mib(m.readMiBps),
    writeBytesPerSecond: mib(m.writeMiBps),
    opUnitBytes: (m.opUnitKiB ?? 0) * 1024,
    readLatencyUs: Math.round(m.readLatencyMs * 1000),
    writeLatencyUs: Math.round(m.writeLatencyMs * 1000),
    flushLatencyUs: Math.round(m.flushLatencyMs * 1000),
    queueDepth: m.queueDepth,
    burstMs: m.burstMs,
  };
}

/** A model's budgets in one line: "3,000 IOPS and 125 MiB/s shared" or "268,336 read / 134,168 write IOPS". */
export function describeBudget(m: Pick<DeviceModel, 'iops' | 'throughputMiBps' | 'readIops' | 'writeIops' | 'readMiBps' | 'writeMiBps'>): string {
  const n = (v: number) => v.toLocaleString('en-US');
  const parts: string[] = [];
  if (m.iops !== null) parts.push(`${n(m.iops)} IOPS${m.throughputMiBps !== null ? ` and ${n(m.throughputMiBps)} MiB/s` : ''}, reads and writes together`);
  if (m.readIops !== null || m.writeIops !== null)
    parts.push(`${m.readIops !== null ? n(m.readIops) : 'no'} read / ${m.writeIops !== null ? n(m.writeIops) : 'no'} write IOPS${m.readMiBps !== null ? `, ${n(m.readMiBps)} / ${n(m.writeMiBps ?? 0)} MiB/s` : ''}`);
  return parts.join('; ') || 'no budget';
}

/** A model in one line, for reports and logs. */
export function describeModel(m: DeviceModel): string {
  return `${m.name} (${m.standsFor}): ${describeBudget(m)}; read ${m.readLatencyMs} ms, write ${m.writeLatencyMs} ms, flush ${m.flushLatencyMs} ms; queue depth ${m.queueDepth}`;
}
