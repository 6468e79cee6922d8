/**
 * Control-plane activities: they run in the control worker (task queue "storage-lab"): provider calls, the
 * results store, results and report. Built by a factory that receives their dependencies.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import os from 'node:os';
import { runCost } from '../../common/cost';
import type { DrillSummary } from '../../common/drill-result';
import { FAILURE_TYPES } from '../../common/errors';
import type { ClusterResult, ExperimentResult } from '../../common/result';
import type { ExperimentSpec } from '../../common/spec';
import type { HostDiagnosis, HostProvider, HostRecord, HostRequest } from '../../infra/providers/host-provider';
import { hostTaskQueue } from '../../common/names';
import { tsToDate } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { aggregate, drillChecks, type EnvironmentInfo } from './aggregate';
import { writeReports } from './report';
import type { ResultsStore } from './results-store';
import { createSweepActivities } from './sweep';
import { createDrillControlActivities } from './drills';
import { createPreflightActivities } from './preflight';
import { historyEntry, RunHistory } from './history';
import { createRegressionActivities } from './regression';
import { createDiagnoseActivities } from '../diagnose';
import { runPredictions } from './predictions';

export interface ControlDeps {
  providers: { local: HostProvider; aws?: HostProvider };
  results: ResultsStore;
  /** Folder the local provider puts hosts in (free-space preflight). */
  hostsDir: string;
  /** Looks runs up for the sweeper. */
  client?: Client;
}

export type ProviderName = 'local' | 'aws';

export interface ProvisionInput {
  provider: ProviderName;
  request: HostRequest;
}

export interface HostRef {
  provider: ProviderName;
  hostId: string;
}

export interface ResultsSummary {
  location: string;
  status: ExperimentResult['status'];
  medianTps: Record<string, number | null>;
  ratios: ExperimentResult['ratios'];
  failedChecks: string[];
}

export function createControlActivities(deps: ControlDeps) {
  const provider = (name: ProviderName): HostProvider => {
    const p = deps.providers[name];
    if (!p)
      throw ApplicationFailure.nonRetryable(
        `provider "${name}" is not configured in this control worker; for AWS start it with STORAGE_LAB_AWS=1 (see README "Running on AWS")`,
        FAILURE_TYPES.unsupported,
      );
    return p;
  };

  return {
    ...createRegressionActivities(deps),
    ...createPreflightActivities(deps, provider),

    async provisionHost(input: ProvisionInput): Promise<HostRecord> {
      return provider(input.provider).provision(input.request);
    },

    async teardownHost(input: HostRef): Promise<void> {
      await provider(input.provider).teardown(input.hostId);
    },

    async killHost(input: HostRef): Promise<void> {
      await provider(input.provider).kill(input.hostId);
    },

    /**
     * What is known of a host that stopped answering or whose attempt failed: the provider's view (processes, OOM
     * kills, instance state, log) and Temporal's: when the host's agent last polled its queue.
     */
    async diagnoseHost(input: HostRef): Promise<HostDiagnosis & { lastPollAt: string | null }> {
      const diagnosis = await provider(input.provider).diagnose(input.hostId);
      return { ...diagnosis, lastPollAt: deps.client ? await lastPollAt(deps.client, hostTaskQueue(input.hostId)) : null };
    },

    /** Saved before anything is provisioned, so a later run (or the sweeper) knows what this one meant to create. */
    async saveSpec(input: { runId: string; spec: ExperimentSpec }): Promise<string> {
      await deps.results.put(input.runId, 'spec.json', JSON.stringify(input.spec, null, 2));
      return deps.results.location(input.runId);
    },

    /** A cluster's results, saved before its host is torn down. */
    async saveClusterResult(input: { runId: string; result: ClusterResult }): Promise<void> {
      await deps.results.put(input.runId, `clusters/${input.result.hostId}.json`, JSON.stringify(input.result, null, 2));
    },

    /** Aggregates every saved cluster result into result.json and renders the report. */
    async writeResults(input: {
      runId: string;
      spec: ExperimentSpec;
      startedAt: string;
      cancelled: boolean;
      /** Summaries of the durability drills the experiment ran (spec.durability.drills). */
      drills?: DrillSummary[];
    }): Promise<ResultsSummary> {
      const keys = await deps.results.list(input.runId, 'clusters');
      const clusters: ClusterResult[] = [];
      for (const key of keys) {
        const text = await deps.results.get(input.runId, key);
        if (text) clusters.push(JSON.parse(text) as ClusterResult);
      }
      const result = aggregate({
        runId: input.runId,
        spec: input.spec,
        clusters,
        startedAt: input.startedAt,
        finishedAt: new Date().toISOString(),
        environment: environmentInfo(input.spec.provider),
        cancelled: input.cancelled,
      });
      if (input.spec.provider === 'aws') result.cost = runCost(input.spec, clusters);
      result.predictions = await runPredictions(deps.results, result);
      if (input.drills?.length) {
        result.drills = input.drills.map((d) => ({ ...d, location: d.location || deps.results.location(d.runId) }));
        result.checks.push(...drillChecks(input.drills));
      }
      await deps.results.put(input.runId, 'result.json', JSON.stringify(result, null, 2));
      await writeReports(deps.results, input.runId, result);
      // Indexed by preset and environment, so later runs can be compared with this one.
      await new RunHistory(deps.results).record(historyEntry(result));
      return {
        location: deps.results.location(input.runId),
        status: result.status,
        medianTps: Object.fromEntries(Object.entries(result.classes).map(([k, v]) => [k, v.medianTps])),
        ratios: result.ratios,
        failedChecks: result.checks.filter((c) => !c.ok && c.severity !== 'warning').map((c) => `${c.name} (${c.scope}): ${c.detail}`),
      };
    },

    ...createSweepActivities(deps),
    ...createDrillControlActivities(deps),
    ...createDiagnoseActivities(deps),
  };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;

export function environmentInfo(provider: string): EnvironmentInfo {
  return { cpus: os.cpus().length, memoryMiB: Math.round(os.totalmem() / 2 ** 20), kernel: os.release(), provider };
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
