/**
 * What both drill workflows share: input validation that fails fast, the hosts' requests and timeouts, waiting
 * for a host's agent, and tearing every host down.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ProviderName } from '../activities/control';
import { FAILURE_TYPES } from '../common/errors';
import type { FailoverDrillSpec, RestoreDrillSpec } from '../common/drill-spec';
import { InvalidSpecError } from '../common/spec';
import type { HostRecord, HostRequest } from '../infra/providers/host-provider';
import { failureMessage, isScheduleToStartTimeout } from './failures';
import { providerCalls, teardownCalls, type HostTimeouts, hostCalls } from './proxies';

type DrillSpec = RestoreDrillSpec | FailoverDrillSpec;

/** Validates a drill input, or fails the workflow at once (non-retryable) with every problem named. */
export function resolveOrFail<S>(resolve: (input: unknown) => S, input: unknown): S {
  try {
    return resolve(input ?? {});
  } catch (err) {
    if (err instanceof InvalidSpecError)
      throw ApplicationFailure.create({ message: err.message, type: FAILURE_TYPES.invalidSpec, nonRetryable: true, details: err.problems });
    throw err;
  }
}

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
  try {
    await hostCalls(request.hostId, timeouts).hello.describeHost({ hostId: request.hostId });
  } catch (err) {
    if (!isScheduleToStartTimeout(err)) throw err;
    const diagnosis = await providerCalls.diagnoseHost({ provider, hostId: request.hostId });
    throw ApplicationFailure.nonRetryable(
      `the agent of host ${request.hostId}${record.instanceId ? ` (instance ${record.instanceId})` : ''} did not start within ${timeouts.agentStartSeconds} s\n${diagnosis}`,
      FAILURE_TYPES.agentUnreachable,
    );
  }
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
