/**
 * Hosts' agents, as every workflow that provisions hosts sees them: waiting for a new host's agent, and turning a
 * host that stopped answering (or an attempt the host's memory limit killed) into a failure that names the host,
 * when it was last heard from, and why when the provider knows.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ProviderName } from '../common/core/hosts';
import { FAILURE_TYPES } from '../common/core/errors';
import type { HostRecord } from '../common/core/hosts';
import { isScheduleToStartTimeout } from './failures';
import { currentClaimant } from './owner';
import { hostCalls, providerCalls, type HostTimeouts } from './proxies';

/** Waits for the host's agent; when it never polls, fails with what the provider can tell about the host. */
export async function waitForAgent(provider: ProviderName, record: HostRecord, timeouts: HostTimeouts): Promise<void> {
  const { hostId } = record;
  try {
    await hostCalls(hostId, timeouts).hello.describeHost({ hostId });
  } catch (err) {
    if (!isScheduleToStartTimeout(err)) throw err;
    const inspection = await providerCalls.inspectHost({ provider, hostId, owner: currentClaimant() });
    throw ApplicationFailure.nonRetryable(
      `the agent of host ${hostId}${record.instanceId ? ` (instance ${record.instanceId})` : ''} did not start within ${timeouts.agentStartSeconds} s\n${inspection.text}`,
      FAILURE_TYPES.agentUnreachable,
    );
  }
}

/**
 * A host activity's failure as the workflow reports it. A task no agent picked up within the host's silence bound
 * means the host is dead: a final failure naming it, its last poll and the provider's view (processes, OOM kills,
 * instance state). Any other failure is returned as it is.
 */
export async function explainHostFailure(provider: ProviderName, hostId: string, err: unknown, timeouts: HostTimeouts): Promise<unknown> {
  if (!isScheduleToStartTimeout(err)) return err;
  const d = await providerCalls.inspectHost({ provider, hostId, owner: currentClaimant() });
  const oom = d.oomKills ? `; the host's memory limit killed ${d.oomKills} process${d.oomKills === 1 ? '' : 'es'} (OOM)` : '';
  return ApplicationFailure.nonRetryable(
    `host ${hostId} stopped answering: no agent took its next task within ${timeouts.deadAfterSeconds} s (host.deadAfterSeconds); last heard from ${d.lastPollAt ?? 'never (no poll in the server\'s memory)'}${oom}\n${d.text}`,
    FAILURE_TYPES.hostGone,
  );
}

/**
 * After a failed attempt on a host that still answers: did the host's memory limit kill something during it?
 * Returns the new OOM count and, when it grew, a final failure naming the OOM (the same workload would be killed again).
 */
export async function oomDuringAttempt(
  provider: ProviderName,
  hostId: string,
  killsBefore: number,
  what: string,
  memoryLimitMiB: number,
): Promise<{ kills: number; failure: ApplicationFailure | null }> {
  const d = await providerCalls.inspectHost({ provider, hostId, owner: currentClaimant() });
  const kills = d.oomKills ?? killsBefore;
  if (kills <= killsBefore) return { kills, failure: null };
  return {
    kills,
    failure: ApplicationFailure.nonRetryable(
      `OOM: the memory limit of host ${hostId} (host.memoryLimitMiB = ${memoryLimitMiB}) killed ${kills - killsBefore} process${kills - killsBefore === 1 ? '' : 'es'} during ${what}; lower workload.clients (or what each transaction holds, such as work_mem) or raise host.memoryLimitMiB\n${d.text}`,
      FAILURE_TYPES.outOfMemory,
    ),
  };
}
