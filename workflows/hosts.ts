/**
 * Hosts as every workflow asks for them (a cluster's, a drill's): one request builder, and provisioning that
 * registers the hosts' undo first and waits for each host's agent.
 */
import type { HostRecord, HostRequest, ProviderName } from '../common/core/hosts';
import type { HostTimeouts } from '../common/input/bounds';
import { classLimits, type StorageClassSpec } from '../common/input/spec';
import { sectionsOf, type ProviderSections } from '../common/providers/registry';
import { waitForAgent } from './agents';
import { currentClaimant } from './owner';
import type { UndoStack } from './compensation';
import { providerCalls } from './proxies';

/** What every host request takes from its run's spec (an experiment's or a drill's), its provider's section among them. */
export interface RunSpec extends ProviderSections {
  name: string;
  expiresAfterHours: number;
  host: { instanceType: string };
  postgres: { version?: number };
}

/** What one host of a run needs, beyond its run's spec. */
export interface HostShape {
  storageClass: StorageClassSpec;
  memoryLimitMiB: number;
  /** Bytes the volume must hold. */
  volumeBytes: number;
  /** The run's backups go to S3. */
  s3Backups: boolean;
  /** Hosts of one scope share a database password (a drill's peers); none: the host has its own. */
  passwordScope?: string;
  /** The host's volume keeps what a power cut drops (HostRequest.powerCuts): the power-cut drill's hosts only. */
  powerCuts?: boolean;
}

/** What the provider is asked for: host `hostId` of a run, in role (class) `className`. */
export function hostRequest(spec: RunSpec, runId: string, hostId: string, className: string, shape: HostShape): HostRequest {
  const { passwordScope, powerCuts, ...host } = shape;
  return {
    runId,
    hostId,
    experiment: spec.name,
    className,
    storageClass: host.storageClass,
    memoryLimitMiB: host.memoryLimitMiB,
    instanceType: spec.host.instanceType,
    volumeBytes: host.volumeBytes,
    expiresAt: new Date(Date.now() + spec.expiresAfterHours * 3600_000).toISOString(),
    postgresVersion: spec.postgres.version,
    // The run's section of its provider (names of secrets, never their values), under the provider's name.
    ...sectionsOf(spec),
    ...(passwordScope ? { passwordScope } : {}),
    s3Backups: host.s3Backups,
    powerCuts: powerCuts === true,
    // The host's owner record names this workflow; every later activity on the host must come from it.
    owner: currentClaimant(),
  };
}

/**
 * Provisions hosts together (or finds them: a killed host's agent is started again), each waiting for its agent;
 * their undo is registered first, as one step. When an agent never polls, fails with what the provider can tell.
 */
export async function provisionHosts(undo: UndoStack, provider: ProviderName, requests: HostRequest[], timeouts: HostTimeouts): Promise<HostRecord[]> {
  undo.hosts(provider, requests.map((r) => r.hostId));
  return Promise.all(requests.map((request) => provisionAndWait(provider, request, timeouts)));
}

async function provisionAndWait(provider: ProviderName, request: HostRequest, timeouts: HostTimeouts): Promise<HostRecord> {
  const limits = classLimits(request.storageClass);
  const record = await providerCalls.provisionHost.executeWithOptions(
    {
      summary: `provision ${request.className} host ${request.hostId}: ${request.storageClass.kind}${limits ? ` at ${limits.iops} IOPS, ${limits.throughputMiBps} MiB/s` : ''}, ${request.memoryLimitMiB} MiB`,
    },
    [{ provider, request }],
  );
  await waitForAgent(provider, record, timeouts);
  return record;
}
