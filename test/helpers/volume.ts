/**
 * A modelled volume for a test, made as the local provider makes one (lib/volume.ts): the server outside any host
 * cgroup, a direct-I/O loop device over its image, optionally ext4 mounted; and removed in bounded time whatever
 * state the test left it in (a cut power, a killed server).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ModelledVolume } from '../../common/core/hosts';
import type { DeviceModelName, VolumeServerParams } from '../../common/model/devices';
import { attachVolumeLoop, detachLoop, formatAndMount, loopsBackedBy, unmount, type LoopDevice } from '../../lib/block-devices';
import { modelledVolumeSupport, startVolumeServer, stopVolumeServer, VolumeControl } from '../../lib/volume';

export interface TestVolume {
  volume: ModelledVolume;
  control: VolumeControl;
  loop: LoopDevice;
  /** Where ext4 is mounted (with `filesystem`), else null. */
  mount: string | null;
  /** Detaches the loop device, stops the server, removes the mounts. */
  remove(): Promise<void>;
}

/** Whether this machine can make modelled volumes (root, /dev/fuse, the built server); the reason when not. */
export const volumeSupport = modelledVolumeSupport();

/** Makes a volume of `sizeBytes` in `dir` (the host folder's role), its model named `model` with `params`. */
export async function createTestVolume(
  dir: string,
  opts: { params: VolumeServerParams; model?: DeviceModelName; sizeBytes?: number; filesystem?: boolean; modelOff?: boolean; backing?: 'ram' | 'file'; powerCuts?: boolean; serve?: 'loop' | 'go-fuse' },
): Promise<TestVolume> {
  if (!volumeSupport.ok) throw new Error(volumeSupport.reason);
  const volume = await startVolumeServer({
    binary: volumeSupport.binary,
    hostDir: dir,
    sizeBytes: opts.sizeBytes ?? 1024 * 2 ** 20,
    params: opts.params,
    model: opts.model ?? opts.params.name,
    backing: opts.backing ?? 'ram',
    modelOff: opts.modelOff,
    powerCuts: opts.powerCuts ?? true,
    serve: opts.serve,
  });
  const control = new VolumeControl(volume.socket);
  let loop: LoopDevice | null = null;
  const mount = opts.filesystem ? path.join(dir, 'volume') : null;
  const remove = async () => {
    if (mount) await unmount(mount).catch(() => undefined);
    if (loop) await detachLoop(loop.device);
    for (const l of await loopsBackedBy(dir)) await detachLoop(l.device);
    await stopVolumeServer(volume);
  };
  try {
    loop = await attachVolumeLoop(volume.image);
    await control.attach(loop.name);
    if (mount) {
      mkdirSync(mount, { recursive: true });
      await formatAndMount(loop.device, mount);
    }
    return { volume, control, loop, mount, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
