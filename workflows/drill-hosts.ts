/**
 * What both drill workflows share: the hosts' requests and timeouts, provisioning with a wait for the host's agent,
 * and tearing every host down.
 */
import type { ProviderName } from '../activities/control';
import type { FailoverDrillSpec, RestoreDrillSpec } from '../common/drill-spec';
import type { HostRecord, HostRequest } from '../infra/providers/host-provider';
import { waitForAgent } from './agents';
import { failureMessage } from './failures';
import { providerCalls, teardownCalls, type HostTimeouts } from './proxies';

type DrillSpec = RestoreDrillSpec | FailoverDrillSpec;

/** Timeouts of a drill's host activities: `measureSeconds` bounds its longest single step. */
export function drillTimeouts(spec: DrillSpec, measureSeconds: number): HostTimeouts {
  return {
    agentStartSeconds: spec.provider === 'aws' ? 15 * 60 : 120,
    loadHours: 2,
    measureSeconds: Math.ceil(measureSeconds) + 600,
    phaseSeconds: Math.ceil(measureSeconds) + 600,
  };
}

/** What the provider is asked for: one host of the drill, sharing the drill's database password with its peers. */
export function drillHostRequest(spec: DrillSpec, runId: string, hostId: string, role: string, volumeBytes: number): HostRequest {
  return {
    runId,
    hostId,
    experiment: spec.name,
    className: role,
    storageClass: spec.storageClass,
    memoryLimitMiB: spec.host.memoryLimitMiB,
    instanceType: spec.host.instanceType,
    volumeBytes,
    expiresAt: new Date(Date.now() + spec.expiresAfterHours * 3600_000).toISOString(),
    postgresVersion: spec.postgres.version,
    aws: spec.aws,
    passwordScope: runId,
  };
}

/**
 * Provisions a host (or finds it: a killed host's agent is started again) and waits for its agent; when the agent
 * never polls, fails with what the provider can tell about the host.
 */
export async function provisionAndWait(provider: ProviderName, request: HostRequest, timeouts: HostTimeouts): Promise<HostRecord> {
  const record = await providerCalls.provisionHost.executeWithOptions(
    { summary: `provision ${request.className} host ${request.hostId}: ${request.storageClass.kind}, ${request.memoryLimitMiB} MiB` },
    [{ provider, request }],
  );
  await waitForAgent(provider, record, timeouts);
  return record;
}

/** Tears every host down (each one even when another fails); returns what failed. */
export async function teardownAll(provider: ProviderName, hostIds: string[]): Promise<string[]> {
  const errors: string[] = [];
  await Promise.all(
    hostIds.map((hostId) =>
      teardownCalls.teardownHost({ provider, hostId }).catch((err) => errors.push(`teardown of ${hostId} failed: ${failureMessage(err)}`)),
    ),
  );
  return errors;
}
