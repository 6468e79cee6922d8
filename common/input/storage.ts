/**
 * A storage class: the device a cluster's data lives on (its kind, provisioned IOPS and MiB/s, size, the emulation
 * it asks for) and its memory, and what the lab derives from it (the limits that apply, the MiB/s bounds are
 * estimated from). Pure and workflow-safe; it knows no provider: each provider's module lists the kinds it hosts.
 */
import { z } from 'zod';
import { int, SPEC_LIMITS } from './limits';

/**
 * Where a storage class's data lives, by device: the machine's own disk (`local-disk`); modelled volumes
 * (docs/storage-emulation.md, common/model/devices.ts): `emulated-ebs` (an EBS volume type, gp3 or io2, at its
 * IOPS and MiB/s) and `nvme` (m6id.4xlarge's instance-store NVMe); real devices: `ebs` (an EBS volume) and
 * `instance-store` (the instance's own NVMe). Which provider hosts which kind, each provider's module says
 * (common/providers/).
 */
export const STORAGE_KINDS = ['local-disk', 'emulated-ebs', 'nvme', 'instance-store', 'ebs'] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

/** The least IOPS AWS provisions an EBS volume with (io1, io2); only a modelled volume goes below. */
export const EBS_LEAST_IOPS = 100;

export const StorageClassSchema = z
  .object({
    kind: z.enum(STORAGE_KINDS, { error: `must be one of ${STORAGE_KINDS.join(', ')}` }),
    /**
     * Provisioned IOPS of an EBS (or emulated EBS) volume; gp3's baseline is 3,000. A real volume takes at least
     * AWS's least (100, in the spec's rules); a modelled one may be slower than any EBS volume, down to 10: a budget
     * that binds one client whatever the CPU's share of a transaction (test/e2e/regression.test.ts).
     */
    iops: int(10, 256_000, 'IOPS').optional(),
    /** Provisioned throughput in MiB/s; gp3's baseline is 125. */
    throughputMiBps: int(1, 4_000, 'MiB/s').optional(),
    /** Volume size; by default large enough for the data set, its WAL and what the phases write. */
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

export type StorageClassSpec = z.output<typeof StorageClassSchema>;

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

/** MiB/s a class's storage sustains for the estimate: its provisioned throughput, or a conservative figure. */
export function storageMiBps(cls: Pick<StorageClassSpec, 'kind' | 'throughputMiBps'>): number {
  if (cls.kind === 'ebs' || cls.kind === 'emulated-ebs') return cls.throughputMiBps ?? 125;
  // Instance-store NVMe writes GB/s; the machine's own disk is unknown: assume a modest SSD.
  return cls.kind === 'instance-store' ? 1000 : 200;
}
