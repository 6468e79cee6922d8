/**
 * Block devices for local hosts: a loop device with direct I/O over a modelled volume's image (so the image is never
 * cached outside the host's memory limit and every block I/O reaches the volume's server), an ext4 file system on
 * it, and the lookups that name a device the way /proc/diskstats and the cgroup I/O files do.
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

/**
 * Attaches a loop device with direct I/O over a modelled volume's image (on the volume server's FUSE mount), so every
 * block I/O of the volume reaches the server as one request (the server caps the device's requests at its largest
 * FUSE request when told of the device: VolumeControl.attach).
 */
export async function attachVolumeLoop(image: string): Promise<LoopDevice> {
  const attached = await runProcess('losetup', ['--find', '--show', '--direct-io=on', image]);
  const loop = describeLoop(attached.stdout.trim());
  if (!loopDirectIo(loop.name)) {
    await detachLoop(loop.device);
    throw new Error(`${loop.device} over ${image} did not take direct I/O: the host's page cache would be counted twice`);
  }
  return loop;
}

/**
 * Makes ext4 on a volume's device and mounts it. Inode tables and journal are initialised now, not lazily in the
 * background during a measurement; no discard at mkfs (a fresh volume holds nothing to discard).
 */
export async function formatAndMount(device: string, mountPoint: string): Promise<void> {
  await runProcess('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0,nodiscard', device]);
  await mountVolume(device, mountPoint);
}

/**
 * Mounts a volume's ext4 (after a power cut: its journal is replayed here). With `discard`, a file's blocks go back to
 * the volume when it is deleted (a drained backlog's WAL), so a volume held in RAM gives that memory back.
 */
export async function mountVolume(device: string, mountPoint: string): Promise<void> {
  await runProcess('mount', ['-o', 'noatime,discard', device, mountPoint]);
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

/** Unmounts (if mounted), retrying every 250 ms for up to `busyMs` while the kernel still holds it busy. */
export async function unmount(mountPoint: string, busyMs = 5_000): Promise<void> {
  for (let attempt = 0; isMounted(mountPoint); attempt++) {
    try {
      await runProcess('umount', [mountPoint]);
    } catch (e) {
      if (attempt * 250 >= busyMs) throw e;
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

/**
 * Detaches a loop device and waits (bounded) until the kernel has let go of its backing file: a device still open
 * (a process just closing it) refuses, or detaches only when closed, and a FUSE mount under it could then not go.
 */
export async function detachLoop(device: string): Promise<void> {
  const name = path.basename(device);
  const attached = () => existsSync(`/sys/block/${name}/loop/backing_file`);
  for (let attempt = 0; attached(); attempt++) {
    await runProcess('losetup', ['--detach', `/dev/${name}`], { okExitCodes: [0, 1] });
    if (!attached()) return;
    if (attempt >= 50) throw new Error(`${device} is still attached after 10 s of detaching (still open?)`);
    await new Promise((r) => setTimeout(r, 200));
  }
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
