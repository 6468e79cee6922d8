/**
 * Block devices for local hosts: a file-backed loop device with direct I/O (so the backing file is not cached
 * outside the host's memory limit), an ext4 file system on it, and the lookups that name a device the way
 * /proc/diskstats and the cgroup I/O files do.
 */
import { existsSync, statSync, readlinkSync } from 'node:fs';
import { readKernelFile } from './lab-fs';
import path from 'node:path';
import { runProcess } from './process-runner';

/** A loop device attached to a backing file. */
export interface LoopDevice {
  device: string; // /dev/loopN
  name: string; // loopN, as in /proc/diskstats
  majMin: string;
}

/** Attaches a sparse backing file of `sizeBytes` as a direct-I/O loop device, formats and mounts it. */
export async function createLoopVolume(backingFile: string, mountPoint: string, sizeBytes: number): Promise<LoopDevice> {
  await runProcess('truncate', ['-s', String(sizeBytes), backingFile]);
  const attached = await runProcess('losetup', ['--find', '--show', '--direct-io=on', backingFile]);
  const device = attached.stdout.trim();
  const loop = describeLoop(device);
  // Initialise inode tables and journal now, not lazily in the background during the measurement.
  await runProcess('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0', device]);
  await runProcess('mount', ['-o', 'noatime', device, mountPoint]);
  return loop;
}

/** Names and numbers of a loop device. */
export function describeLoop(device: string): LoopDevice {
  const name = path.basename(device);
  return { device, name, majMin: readKernelFile(`/sys/block/${name}/dev`).trim() };
}

/** A block device's MAJ:MIN (as the cgroup I/O files name it) from /sys/class/block/<dev>/dev, or null. */
export function deviceMajMin(device: string | null): string | null {
  const file = device ? `/sys/class/block/${device}/dev` : null;
  return file && existsSync(file) ? readKernelFile(file).trim() : null;
}

/** Whether direct I/O is on for a loop device (1 in sysfs). */
export function loopDirectIo(name: string): boolean {
  const file = `/sys/block/${name}/loop/dio`;
  return existsSync(file) && readKernelFile(file).trim() === '1';
}

/** Loop devices whose backing file lies under `dir` (for teardown and the sweeper). */
export async function loopsBackedBy(dir: string): Promise<{ device: string; backingFile: string }[]> {
  const out = await runProcess('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE']);
  if (!out.stdout.trim()) return [];
  const parsed = JSON.parse(out.stdout) as { loopdevices: { name: string; 'back-file': string | null }[] };
  return parsed.loopdevices
    .filter((d) => d['back-file'] && path.resolve(d['back-file'].replace(/ \(deleted\)$/, '')).startsWith(dir + path.sep))
    .map((d) => ({ device: d.name, backingFile: d['back-file'] as string }));
}

/** Unmounts (if mounted), retrying while the kernel still holds it busy. */
export async function unmount(mountPoint: string): Promise<void> {
  for (let attempt = 0; isMounted(mountPoint); attempt++) {
    try {
      await runProcess('umount', [mountPoint]);
    } catch (e) {
      if (attempt >= 20) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export function isMounted(mountPoint: string): boolean {
  const target = path.resolve(mountPoint);
  return readKernelFile('/proc/self/mounts')
    .split('\n')
    .some((line) => line.split(' ')[1] === target);
}

export async function detachLoop(device: string): Promise<void> {
  await runProcess('losetup', ['--detach', device], { okExitCodes: [0, 1] });
}

/**
 * The whole-disk block device (as named in /proc/diskstats) that holds `dir`, or null when it cannot be told
 * (an overlay or network file system). Partitions map to their parent disk's name only if the disk has none.
 */
export function deviceOfPath(dir: string): string | null {
  const dev = statSync(dir).dev;
  const majMin = `${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}`;
  const sysLink = `/sys/dev/block/${majMin}`;
  if (!existsSync(sysLink)) return null;
  return path.basename(readlinkSync(sysLink));
}
