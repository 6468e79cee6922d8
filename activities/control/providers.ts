/**
 * Provider calls: make, tear down, kill and inspect hosts through the provider the run names (local folders and
 * cgroups, or EC2), and what Temporal knows of a host's agent.
 */
import { ApplicationFailure, log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { tsToDate } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { FAILURE_TYPES } from '../../common/core/errors';
import type { DeviceCounters, HostInspection, HostRecord, NetworkCutRecord, NetworkCutRequest, NetworkHealRecord, PowerCutRecord, ProviderName } from '../../common/core/hosts';
import type { VolumeStats } from '../../lib/volume';
import { hostTaskQueue } from '../../common/core/names';
import { providerOf } from '../../common/providers/registry';
import type { HostProvider } from '../../infra/providers/host-provider';
import { checkedClaimant, hostActor } from './owner';
import type { ControlDeps, HostRef, ProvisionInput } from './types';

/** The configured provider of that name; a run asking for one this worker lacks fails, saying how to add it. */
export function providerNamed(deps: Pick<ControlDeps, 'providers'>) {
  return (name: ProviderName): HostProvider => {
    const p = deps.providers[name];
    if (!p) {
      const setup = providerOf(name).setup;
      throw ApplicationFailure.nonRetryable(
        `provider "${name}" is not configured in this control worker${setup ? `; ${setup}` : ''}`,
        FAILURE_TYPES.unsupported,
      );
    }
    return p;
  };
}

export function createProviderActivities(deps: ControlDeps) {
  const provider = providerNamed(deps);
  return {
    /** Claims the host for the workflow that asks (refusing another run's), then makes it or finds it. */
    async provisionHost(input: ProvisionInput): Promise<HostRecord> {
      checkedClaimant(input.request.owner);
      return provider(input.provider).provision(input.request);
    },

    /**
     * Removes the host if the one who asks owns it (or the sweeper judged its run); another run's host is left alone
     * (an undo of a host the run never got: the provision that refused it said whose it is).
     */
    async teardownHost(input: HostRef): Promise<void> {
      const done = await provider(input.provider).teardown(input.hostId, hostActor(input));
      if (done.startsWith('left ')) log.info(done);
    },

    async killHost(input: HostRef): Promise<void> {
      await provider(input.provider).kill(input.hostId, hostActor(input));
    },

    /** Cuts the network between two groups of a run's hosts (the partition drill); made again, it replaces the cut. */
    async cutNetwork(input: { provider: ProviderName; cut: NetworkCutRequest }): Promise<NetworkCutRecord> {
      const p = provider(input.provider);
      if (!p.cutNetwork)
        throw ApplicationFailure.nonRetryable(`provider "${p.name}" cannot cut the network between its hosts; run the partition drill with provider "local"`, FAILURE_TYPES.unsupported);
      return p.cutNetwork(input.cut);
    },

    /**
     * Cuts a host's power (the power-cut drill): its modelled volume drops what it had not made durable, every process
     * of the host dies, the volume comes back on what was durable. Not idempotent (a retry would cut again, after the
     * writes the first cut dropped were gone): the drill calls it with one attempt.
     */
    async cutPower(input: HostRef): Promise<PowerCutRecord> {
      const p = provider(input.provider);
      if (!p.cutPower)
        throw ApplicationFailure.nonRetryable(`provider "${p.name}" has no device that can drop unsynced writes; run the power-cut drill with provider "local"`, FAILURE_TYPES.unsupported);
      const r = await p.cutPower(input.hostId, hostActor(input));
      return { hostId: r.hostId, cutAt: r.cutAt, backAt: r.backAt, droppedPages: r.droppedPages, droppedBytes: r.droppedBytes, before: deviceCounters(r.before), after: deviceCounters(r.after), seconds: r.seconds };
    },

    /** Removes the cut made around a host; idempotent (a provider that cannot cut has none to remove). */
    async healNetwork(input: HostRef): Promise<NetworkHealRecord> {
      const p = provider(input.provider);
      if (!p.healNetwork) return { removed: false, droppedPackets: null, healedAt: new Date().toISOString(), removeSeconds: 0 };
      return p.healNetwork(input.hostId);
    },

    /**
     * What is known of a host that stopped answering or whose attempt failed: the provider's view (processes, OOM
     * kills, instance state, log) and Temporal's: when the host's agent last polled its queue.
     */
    async inspectHost(input: HostRef): Promise<HostInspection & { lastPollAt: string | null }> {
      const inspection = await provider(input.provider).inspect(input.hostId, hostActor(input));
      return { ...inspection, lastPollAt: deps.client ? await lastPollAt(deps.client, hostTaskQueue(input.hostId)) : null };
    },
  };
}

/** The counters of a modelled device a power cut's record keeps (the history stays small: not the model's timings). */
export function deviceCounters(s: VolumeStats): DeviceCounters {
  return { writes: s.writes, writeBytes: s.writeBytes, flushes: s.flushes, volatileBytes: s.store.volatileBytes, cutPages: s.store.cutPages, errors: s.errors };
}

/** When a worker last polled an activity task queue, as the server remembers it (null: no poller seen lately). */
async function lastPollAt(client: Client, taskQueue: string): Promise<string | null> {
  const queue = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  const times = (queue.pollers ?? []).map((p) => (p.lastAccessTime ? tsToDate(p.lastAccessTime).getTime() : 0)).filter((t) => t > 0);
  return times.length ? new Date(Math.max(...times)).toISOString() : null;
}
