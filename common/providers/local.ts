/**
 * The local provider's workflow-safe half, the embedded default: hosts are processes on this machine, each in its
 * own folder and cgroups with a memory limit, on the machine's disk or a modelled volume (docs/storage-emulation.md).
 * They run this machine's PostgreSQL and tools, share a folder or an S3 bucket for backups, and can be cut off from
 * each other (the partition drill). It has no spec section and nothing to price. The hosts themselves are made,
 * listed, killed and removed by infra/providers/local/. Pure and workflow-safe.
 */
import { LOCAL_CLIENT_MAJOR } from '../input/postgres-versions';
import { defineProvider } from './kit';

export const localProvider = defineProvider({
  name: 'local',
  where: 'here',
  onThisMachine: true,
  storageKinds: ['local-disk', 'emulated-ebs', 'nvme'],
  backupStores: ['folder', 's3'],
  // A local host is known by the lab's host id alone.
  instanceIdPattern: null,
  // A process starts.
  agentStartSeconds: 120,
  deadAfterSeconds: 180,
  // Debian 12's client tools drive the newer server-only binaries the bootstrap installs (postgres-versions.ts).
  clientToolsMajor: LOCAL_CLIENT_MAJOR,
  // nftables on this machine tells the hosts' connections apart by their cgroups (lib/network-cut.ts).
  cutsNetwork: true,
  section: null,
  setup: null,
});
