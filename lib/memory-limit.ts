/**
 * The one owner of a host's memory limit at run time (its memory cgroup; the provider sets it when it makes the
 * host, lib/cgroups.ts createHostCgroup). The limit stands for the instance's RAM in the measured phases, so that the
 * page cache holds the reference's share of the data. A data set's publish and restore are not measured, read the
 * whole set twice at once (the row checksums beside the base backup; the row checksums beside pg_amcheck) and end
 * cold (activities/host/load.ts startCold): they run with the limit lifted, so that both readers, and a restore's
 * checks after its fetch, find the pages in the page cache instead of going through the volume again (on a 768 MiB
 * host, 7 GiB through a modelled volume's server; docs/data-sets.md, "The memory limit lifted for a publish and a
 * restore"). A load keeps the limit: without it its rows stayed dirty and were written back in one burst. The limit is
 * set again when the preparation ends, whatever happens, and by the agent when it starts (one that died
 * mid-preparation left it lifted).
 *
 * A host without a memory cgroup (an EC2 instance: its RAM is the instance's) makes this a no-op.
 */
import path from 'node:path';
import type { HostConfig } from '../common/core/hosts';
import { writeCgroupFile } from './cgroups';
import { readKernelFile } from './lab-fs';
import { NestedLift } from './nested-lift';

/** What MemoryLimit reads of a host's config. */
export type MemoryLimitHost = Pick<HostConfig, 'cgroup' | 'limits'>;

/** Writes a host's memory limit (a seam for unit tests): a byte count, or null for none. */
export interface MemoryLimitFile {
  write(bytes: number | null): void;
}

/** The cgroup's limit file: v1 memory.limit_in_bytes (-1: none), v2 memory.max ("max": none). */
export function cgroupLimitFile(cg: { kind: 'v1' | 'v2'; memoryDir: string }): MemoryLimitFile {
  const name = cg.kind === 'v1' ? 'memory.limit_in_bytes' : 'memory.max';
  return {
    write(bytes) {
      writeCgroupFile(cg.memoryDir, name, bytes === null ? (cg.kind === 'v1' ? '-1' : 'max') : String(bytes));
      // The peak measured from here on is the measured phases' own, not the lifted preparation's (v1 resets on any
      // write). Only a figure for a diagnosis (lib/cgroups.ts memoryState): a kernel that refuses it fails nothing.
      if (bytes !== null && cg.kind === 'v1') {
        try {
          writeCgroupFile(cg.memoryDir, 'memory.max_usage_in_bytes', '0');
        } catch {
          // The limit is set; the peak stays the cgroup's whole life's.
        }
      }
    },
  };
}

/** How often, and how far apart, setting the limit again is tried while the kernel cannot yet reclaim below it. */
const APPLY_RETRY = { attempts: 20, ms: 250 };

export class MemoryLimit {
  /** The host's limit in bytes, or null where there is none to lift. */
  readonly limitBytes: number | null;
  private readonly file: MemoryLimitFile | null;
  /** The limit comes back when the last of nested preparations ends. */
  private readonly nested = new NestedLift(
    () => this.lift(),
    () => this.apply(),
  );

  constructor(
    host: MemoryLimitHost,
    file?: MemoryLimitFile,
    private readonly retry = APPLY_RETRY,
  ) {
    const mib = host.limits?.memoryLimitMiB ?? null;
    const cg = host.cgroup;
    this.limitBytes = mib && cg?.memoryDir ? mib * 2 ** 20 : null;
    this.file = this.limitBytes === null ? null : (file ?? cgroupLimitFile({ kind: cg!.kind, memoryDir: cg!.memoryDir! }));
  }

  /** Whether there is a limit that lift() removes. */
  get liftable(): boolean {
    return this.file !== null;
  }

  /** Removes the limit. */
  async lift(): Promise<void> {
    this.file?.write(null);
  }

  /**
   * Sets the limit (again); idempotent. Lowering it below the cgroup's usage makes the kernel reclaim the page cache
   * first; where v1 cannot yet (EBUSY: pages under writeback), it is tried again, then fails with the reason.
   */
  async apply(): Promise<void> {
    if (!this.file || this.limitBytes === null) return;
    for (let attempt = 1; ; attempt++) {
      try {
        this.file.write(this.limitBytes);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || attempt >= this.retry.attempts)
          throw new Error(`setting the host's memory limit of ${this.limitBytes / 2 ** 20} MiB failed (${attempt} attempts): ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, this.retry.ms));
      }
    }
  }

  /** Runs a data set's preparation without the limit, and sets it again whatever happens. Nested calls lift once. */
  withoutLimit<T>(prepare: () => Promise<T>): Promise<T> {
    return this.nested.during(prepare);
  }
}

/** The limit the kernel enforces now, in bytes (null: none, or no such file; v1 says "none" with a number near 2^63, v2 with "max"). */
export function enforcedMemoryLimit(cg: { kind: 'v1' | 'v2'; memoryDir: string }): number | null {
  try {
    const text = readKernelFile(path.join(cg.memoryDir, cg.kind === 'v1' ? 'memory.limit_in_bytes' : 'memory.max')).trim();
    const n = Number(text);
    return Number.isFinite(n) && n < 2 ** 60 ? n : null;
  } catch {
    return null;
  }
}
