/** A modelled gp3 host's I/O cap as unit tests see it (lib/io-cap.ts): its host, and a model switch that records. */
import type { IoCapHost, ModelSwitch } from '../../lib/io-cap';
import { gp3Model, serverParams } from '../../common/model/devices';

export const GP3: IoCapHost = {
  kind: 'emulated-ebs',
  emulated: true,
  volume: {
    model: 'gp3',
    params: serverParams(gp3Model()),
    fuseDir: '/lab/hosts/h1/volume-fuse',
    image: '/lab/hosts/h1/volume-fuse/volume.img',
    socket: '/lab/hosts/h1/volume.sock',
    pidFile: '/lab/hosts/h1/volume-server.pid',
    log: '/lab/hosts/h1/volume-server.log',
    backing: 'ram',
    sizeBytes: 2 ** 30,
  },
};

/** A volume server's model switch that records what it was told (and can fail), and a volume's I/O through it. */
export function recorder(fail?: { on: boolean; error: string }): ModelSwitch & { calls: string[]; io(): void } {
  const calls: string[] = [];
  let on = true;
  let admitted = 0;
  return {
    calls,
    async setModel(next: boolean) {
      if (fail && fail.on === next) throw new Error(fail.error);
      calls.push(next ? 'model on' : 'model off');
      on = next;
    },
    async modelledIos() {
      return admitted;
    },
    /** One read or write reaching the volume: the model admits it while it is on. */
    io() {
      if (on) admitted++;
    },
  };
}
