/** Waiting for a host's agent, shared by every workflow that provisions hosts. */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ProviderName } from '../activities/control';
import { FAILURE_TYPES } from '../common/errors';
import type { HostRecord } from '../infra/providers/host-provider';
import { isScheduleToStartTimeout } from './failures';
import { hostCalls, providerCalls, type HostTimeouts } from './proxies';

/** Waits for the host's agent; when it never polls, fails with what the provider can tell about the host. */
export async function waitForAgent(provider: ProviderName, record: HostRecord, timeouts: HostTimeouts): Promise<void> {
  const { hostId } = record;
  try {
    await hostCalls(hostId, timeouts).hello.describeHost({ hostId });
  } catch (err) {
    if (!isScheduleToStartTimeout(err)) throw err;
    const diagnosis = await providerCalls.diagnoseHost({ provider, hostId });
    throw ApplicationFailure.nonRetryable(
      `the agent of host ${hostId}${record.instanceId ? ` (instance ${record.instanceId})` : ''} did not start within ${timeouts.agentStartSeconds} s\n${diagnosis}`,
      FAILURE_TYPES.agentUnreachable,
    );
  }
}
