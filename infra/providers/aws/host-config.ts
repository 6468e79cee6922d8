/**
 * Writes an EC2 host's host.json at boot (called by user-data.sh): the part the provider knew at launch plus
 * what only the instance knows: its private address, instance id, the block device under the data folder and
 * the PostgreSQL binaries the bootstrap installed.
 *   node host-config.js <base.json> <out host.json> <private-ip> <instance-id> [postgres major]
 */
import path from 'node:path';
import { readOperatorFile, registerLabRoot, writeLabFile } from '../../../lib/lab-fs';
import { findPostgresBinDir } from '../../../lib/postgres-binaries';
import type { HostConfig } from '../../../common/core/hosts';
import { deviceOfPath } from '../../../lib/block-devices';

/** Facts about the instance, found at boot. */
export interface InstanceFacts {
  privateIp: string;
  instanceId: string;
  device: string | null;
  pgBinDir: string;
}

/** The full host config from the launch-time part and the boot-time facts. */
export function completeHostConfig(base: HostConfig, facts: InstanceFacts): HostConfig {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(facts.privateIp)) throw new Error(`not an IPv4 address: "${facts.privateIp}"`);
  return {
    ...base,
    instanceId: facts.instanceId,
    postgres: { ...base.postgres, host: facts.privateIp },
    device: facts.device,
    pgBinDir: facts.pgBinDir,
  };
}

function main(argv: string[]): void {
  const [baseFile, outFile, privateIp, instanceId, major] = argv;
  if (!baseFile || !outFile || !privateIp || !instanceId)
    throw new Error('usage: host-config <base.json> <out host.json> <private-ip> <instance-id> [postgres major]');
  const base = JSON.parse(readOperatorFile(baseFile).toString('utf8')) as HostConfig;
  const pgBinDir = findPostgresBinDir(major ? Number(major) : undefined);
  if (!pgBinDir) throw new Error(`PostgreSQL ${major ?? ''} server binaries not found under /usr/lib/postgresql`);
  const config = completeHostConfig(base, {
    privateIp,
    instanceId,
    device: deviceOfPath(path.dirname(base.dataDir)),
    pgBinDir,
  });
  // The one file this boot step writes, where user-data.sh asks for it.
  registerLabRoot(outFile);
  writeLabFile(outFile, JSON.stringify(config, null, 2), { atomic: true });
  console.log(`host.json: ${config.hostId} at ${privateIp}:${config.postgres.port}, data on ${config.device ?? '?'}`);
}

if (require.main === module) main(process.argv.slice(2));
