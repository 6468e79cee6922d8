/**
 * What the AWS tests share: a moto server with a network, an instance profile and a bucket; the control worker's
 * AWS side built on it (the production Ec2Provider and S3 results store); the hosts' requests as the cluster
 * workflow makes them; and, for workflow tests only, a provider whose EC2 side runs on moto while the host
 * itself is a local one (moto boots no machine), so the whole path but the VM runs.
 */
import type { FailoverDrillSpec, RestoreDrillSpec } from '../../common/input/drill-spec';
import { volumeBytes, type ExperimentSpec } from '../../common/input/spec';
import { resolveSpec } from '../../common/input/resolve';
import type { Ec2Provider } from '../../infra/providers/aws/ec2-provider';
import type { HostActor, HostInspection, HostRecord, HostRequest, ManagedHost } from '../../common/core/hosts';
import type { HostProvider } from '../../infra/providers/host-provider';
import { LocalProvider } from '../../infra/providers/local/local-provider';
import { PROJECT_ROOT, type LabPaths } from '../../lib/lab-paths';
import path from 'node:path';
import { serverAddress } from './temporal';
import { planClusters } from '../../workflows/experiment-workflow';
import { awsControlSetup, type AwsEnv } from '../../worker/aws-setup';
import type { AwsClients } from '../../lib/aws-clients';
import { DEFAULT_AWS_POLICY, type AwsPolicy } from '../../infra/providers/aws/policy';
import { startMoto, type Moto, type MotoNetwork } from './moto';

export const TEST_BUCKET = 'storage-lab-test';
export const TEST_PROFILE = 'storage-lab-host';

export interface AwsTestbed {
  moto: Moto;
  network: MotoNetwork;
  env: AwsEnv;
  /** The control worker's AWS side on moto, as worker/aws-setup.ts builds it (short polls); `policy` replaces the testbed's. */
  setup(opts?: { clients?: AwsClients; owner?: { address: string; namespace: string }; policy?: AwsPolicy }): ReturnType<typeof awsControlSetup>;
}

export async function startAwsTestbed(): Promise<AwsTestbed> {
  const moto = await startMoto();
  try {
    const network = await moto.createNetwork();
    await moto.createInstanceProfile(TEST_PROFILE);
    await moto.createBucket(TEST_BUCKET);
    // The operator allows the owner of the image moto hands out (Debian's account has no image in moto).
    const policy: AwsPolicy = { ...DEFAULT_AWS_POLICY, imageOwners: [network.imageOwnerId] };
    const env: AwsEnv = { region: 'us-east-1', endpoint: moto.endpoint, bucket: TEST_BUCKET, resultsPrefix: 'storage-lab/results', policy };
    return {
      moto,
      network,
      env,
      setup: (opts = {}) =>
        awsControlSetup(
          { ...env, policy: opts.policy ?? policy },
          opts.owner ?? { address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233', namespace: 'default' },
          opts.clients ?? moto.clients,
          { pollMs: 100, instanceMinutes: 1, volumeMinutes: 1 },
        ),
    };
  } catch (err) {
    await moto.stop();
    throw err;
  }
}

/** An experiment input on AWS with two classes (instance-store NVMe, gp3 above its baseline), at ci sizes. */
export function awsInput(network: MotoNetwork, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return overlay({
    preset: 'ci',
    name: 'aws-test',
    provider: 'aws',
    storageClasses: { 'local-disk': null, nvme: { kind: 'instance-store' }, gp3: { kind: 'ebs', iops: 4000, throughputMiBps: 250 } },
    compare: { baseline: 'gp3', candidate: 'nvme' },
    aws: {
      region: 'us-east-1',
      imageId: network.imageId,
      subnetId: network.subnetId,
      securityGroupIds: [network.securityGroupId],
      instanceProfileName: TEST_PROFILE,
      temporalAddress: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      temporalNamespace: 'default',
      resultsBucket: TEST_BUCKET,
    },
  }, overrides) as Record<string, unknown>;
}

/** Objects merge key by key; anything else (null included: resolveSpec then removes the key) replaces. */
function overlay(base: unknown, over: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(base) || !isObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = overlay(base[k], v);
  return out;
}

/** Overrides for a run with the NVMe class only. */
export const NVME_ONLY = { storageClasses: { gp3: null }, compare: null };

/** The host requests of a run, as the cluster workflow makes them. */
export function hostRequests(spec: ExperimentSpec, runId: string, expiresAt = new Date(Date.now() + 3600_000).toISOString()): HostRequest[] {
  return planClusters(spec, runId).map((c) => ({
    runId,
    hostId: c.hostId,
    experiment: spec.name,
    className: c.className,
    storageClass: spec.storageClasses[c.className],
    memoryLimitMiB: spec.host.memoryLimitMiB,
    instanceType: spec.host.instanceType,
    volumeBytes: volumeBytes(spec),
    expiresAt,
    postgresVersion: spec.postgres.version,
    aws: spec.aws,
  }));
}

/** Resolves an AWS input into a spec. */
export function awsSpec(network: MotoNetwork, overrides: Record<string, unknown> = {}): ExperimentSpec {
  return resolveSpec(awsInput(network, overrides));
}

/** A local provider on a lab's hosts folder, as the control worker makes it, for hosts a test makes itself. */
export function localProviderFor(paths: LabPaths): LocalProvider {
  return new LocalProvider({
    hostsDir: paths.hostsDir,
    agentEnv: { TEMPORAL_ADDRESS: serverAddress(), TEMPORAL_NAMESPACE: 'default' },
    supervisorScript: path.join(PROJECT_ROOT, 'dist', 'worker', 'host-supervisor.js'),
  });
}

/**
 * Test only: the EC2 side of each host through the real Ec2Provider on moto, the host itself (folder, Postgres,
 * agent) from the local provider, since moto starts no machine. Teardown removes both.
 */
export class Ec2WithLocalHosts implements HostProvider {
  readonly name = 'aws' as const;

  constructor(
    readonly ec2: Ec2Provider,
    readonly local: LocalProvider,
  ) {}

  async provision(req: HostRequest): Promise<HostRecord> {
    const instance = await this.ec2.provision(req);
    const host = await this.local.provision({ ...req, storageClass: { kind: 'local-disk', emulation: 'preferred' } });
    return {
      ...host,
      provider: 'aws',
      kind: instance.kind,
      instanceId: instance.instanceId,
      emulated: false,
      emulationNote: 'test: EC2 on moto, the host a local process',
    };
  }

  async teardown(hostId: string, actor?: HostActor): Promise<string> {
    await this.local.teardown(hostId, actor);
    return this.ec2.teardown(hostId, actor);
  }

  kill(hostId: string, actor?: HostActor): Promise<void> {
    return this.local.kill(hostId, actor);
  }

  list(): Promise<ManagedHost[]> {
    return this.ec2.list();
  }

  async inspect(hostId: string, actor?: HostActor): Promise<HostInspection> {
    const [ec2, local] = [await this.ec2.inspect(hostId, actor), await this.local.inspect(hostId, actor)];
    return { oomKills: local.oomKills, text: `${ec2.text}\n${local.text}` };
  }

  preflight(spec: ExperimentSpec) {
    return this.ec2.preflight(spec);
  }

  preflightDrill(kind: 'restore' | 'failover', spec: RestoreDrillSpec | FailoverDrillSpec) {
    return this.ec2.preflightDrill(kind, spec);
  }
}
