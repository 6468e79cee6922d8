/**
 * The results store's activities: a run's spec before anything is made, each cluster's results before its host goes,
 * the aggregated result.json with its reports and history entry, and the drills' own results.
 */
import { Context } from '@temporalio/activity';
import os from 'node:os';
import { runCost } from '../../common/input/cost';
import { providerOf } from '../../common/providers/registry';
import type { PowerCutDrillSpec, ReplicaDrillSpec, RestoreDrillSpec } from '../../common/input/drill-spec';
import type { ExperimentSpec } from '../../common/input/spec';
import type { DrillResult, DrillSummary, RestoreToolComparison } from '../../common/results/drill-result';
import type { ClusterResult, ResultsSummary } from '../../common/results/result';
import { aggregate, drillChecks, type EnvironmentInfo } from '../../analysis/aggregate';
import { historyEntry, RunHistory } from '../../analysis/history';
import { runPredictions } from '../../analysis/predictions';
import { writeReports } from '../../analysis/report';
import { renderDrillMarkdown, renderToolComparisonMarkdown } from '../../analysis/report/drills-markdown';
import { claimRunExecution } from '../../lib/results-store';
import type { Claimant } from '../../common/core/claims';
import { checkedClaimant } from './owner';
import type { ControlDeps } from './types';

export function createResultsActivities(deps: Pick<ControlDeps, 'results'>) {
  return {
    /**
     * Saved before anything is provisioned, so a later run (or the sweeper) knows what this one meant to create; it
     * claims the run's folder for this execution (`execution`: the first of a chain that continues as new), so a run
     * under a finished run's id fails here, before any host.
     */
    async saveSpec(input: { runId: string; spec: ExperimentSpec | RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec; owner?: Claimant }): Promise<string> {
      await claimRunExecution(deps.results, input.runId, callingExecution(input.owner));
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
      // A provider that prices its hosts (its cost model): the estimate and the measured figure.
      if (providerOf(input.spec.provider).cost) result.cost = runCost(input.spec, clusters);
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

    /**
     * Claims a run's results folder for its workflow at the run's start (a drill's, a comparison's), as saveSpec does
     * an experiment's: a run under another run's id, or a finished run's, fails here before it makes anything.
     */
    async claimRunResults(input: { runId: string; owner?: Claimant }): Promise<string> {
      await claimRunExecution(deps.results, input.runId, callingExecution(input.owner));
      return deps.results.location(input.runId);
    },

    /** A tool comparison's result.json and report.md (the drills saved their own); returns where they are. */
    async saveToolComparison(input: { runId: string; comparison: RestoreToolComparison; owner?: Claimant }): Promise<string> {
      await claimRunExecution(deps.results, input.runId, callingExecution(input.owner));
      await deps.results.put(input.runId, 'result.json', JSON.stringify(input.comparison, null, 2));
      await deps.results.put(input.runId, 'report.md', renderToolComparisonMarkdown(input.comparison));
      return deps.results.location(input.runId);
    },

    /** The drill's result.json and report.md; returns where they are. */
    async saveDrillResult(input: { runId: string; result: DrillResult; owner?: Claimant }): Promise<string> {
      await claimRunExecution(deps.results, input.runId, callingExecution(input.owner));
      await deps.results.put(input.runId, 'result.json', JSON.stringify(input.result, null, 2));
      await deps.results.put(input.runId, 'report.md', renderDrillMarkdown(input.result));
      return deps.results.location(input.runId);
    },
  };
}

/** This machine, as a result records where it ran. */
export function environmentInfo(provider: string): EnvironmentInfo {
  return { cpus: os.cpus().length, memoryMiB: Math.round(os.totalmem() / 2 ** 20), kernel: os.release(), provider };
}

/**
 * The workflow execution this activity runs for, which claims the run's results folder: the first execution's run id
 * the workflow names (the same across a failover drill's continue-as-new), checked against the workflow that
 * scheduled the activity; else (a request made before owners were named) the calling execution's run id.
 */
export function callingExecution(owner?: Claimant): string {
  const execution = Context.current().info.workflowExecution;
  if (!execution) throw new Error('a results activity runs for a workflow: this one has no workflow execution');
  return checkedClaimant(owner)?.execution ?? execution.runId;
}
