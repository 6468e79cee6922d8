/**
 * Control-plane activities: they run in the control worker (task queue "storage-lab"): provider calls, the
 * results store, results and report. Built by a factory that receives their dependencies.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import os from 'node:os';
import path from 'node:path';
import { statfsSync } from 'node:fs';
import { awsRunProblems } from '../../common/aws';
import { runCost } from '../../common/cost';
import type { DrillSummary } from '../../common/drill-result';
import { FAILURE_TYPES } from '../../common/errors';
import type { ClusterResult, ExperimentResult } from '../../common/result';
import { volumeBytes, type ExperimentSpec } from '../../common/spec';
import type { HostProvider, HostRecord, HostRequest } from '../../infra/providers/host-provider';
import { detectCgroups } from '../../infra/providers/local/cgroups';
import { findPostgresBinDir, installedPostgresMajors } from '../../infra/postgres-binaries';
import { traversableByOthers } from '../../infra/lab-paths';
import { aggregate, type EnvironmentInfo } from './aggregate';
import { writeReports } from './report';
import type { ResultsStore } from './results-store';
import { createSweepActivities } from './sweep';
import { createDrillControlActivities } from './drills';
import { historyEntry, RunHistory } from './history';
import { createRegressionActivities } from './regression';

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
    /**
     * Checks that this environment can run the spec before anything is created: a failure names the field and
     * the fix, and is not retried.
     */
    async preflight(input: { spec: ExperimentSpec }): Promise<{ warnings: string[] }> {
      const { spec } = input;
      const problems: string[] = [];
      const warnings: string[] = [];
      provider(spec.provider);
      if (spec.provider === 'local') {
        if (!findPostgresBinDir(spec.postgres.version))
          problems.push(
            `postgres.version: PostgreSQL ${spec.postgres.version ?? ''} is not installed here (installed: ${installedPostgresMajors().join(', ') || 'none'}); install it (infra/bootstrap.sh) or remove postgres.version`,
          );
        if (process.getuid?.() === 0 && !traversableByOthers(deps.hostsDir))
          problems.push(
            `hosts folder ${deps.hostsDir}: the postgres user cannot reach it (a parent folder lacks o+x); set STORAGE_LAB_HOSTS_DIR to a folder it can reach, for example under /var/lib`,
          );
        const cgroups = detectCgroups();
        for (const [name, cls] of Object.entries(spec.storageClasses)) {
          if (cgroups.kind) continue;
          if (cls.emulation === 'required')
            problems.push(
              `storageClasses.${name}.emulation: I/O and memory limits cannot be enforced here (${cgroups.reason}); run as root on a machine with cgroups, or set emulation to "preferred" to run unemulated`,
            );
          else warnings.push(`storage class ${name} will run not emulated: ${cgroups.reason}`);
        }
        const parallel = Math.min(spec.maxParallelClusters, spec.clustersPerClass * Object.keys(spec.storageClasses).length);
        const memoryNeeded = parallel * spec.host.memoryLimitMiB;
        const memoryMiB = Math.floor(os.totalmem() / 2 ** 20);
        if (memoryNeeded > memoryMiB * 0.8)
          problems.push(
            `host.memoryLimitMiB: ${parallel} hosts at once x ${spec.host.memoryLimitMiB} MiB = ${memoryNeeded} MiB, more than 80 % of this machine's ${memoryMiB} MiB; lower host.memoryLimitMiB or maxParallelClusters`,
          );
        const diskNeeded = parallel * volumeBytes(spec);
        const free = freeBytes(deps.hostsDir);
        if (free !== null && diskNeeded > free)
          problems.push(
            `data.scale: ${parallel} hosts at once need about ${(diskNeeded / 2 ** 30).toFixed(1)} GiB but ${deps.hostsDir} has ${(free / 2 ** 30).toFixed(1)} GiB free; lower data.scale or maxParallelClusters`,
          );
      }
      if (spec.provider === 'aws') problems.push(...awsRunProblems(spec).map((p) => `${p.path}: ${p.message}`));
      // The provider's own checks (the account's subnet, image, instance type) once the spec itself is complete.
      const checked = problems.length ? undefined : await provider(spec.provider).preflight?.(spec);
      problems.push(...(checked?.problems ?? []));
      warnings.push(...(checked?.warnings ?? []));
      if (problems.length)
        throw ApplicationFailure.nonRetryable(
          `This environment cannot run the spec:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
          FAILURE_TYPES.preflight,
          problems,
        );
      return { warnings };
    },

    async provisionHost(input: ProvisionInput): Promise<HostRecord> {
      return provider(input.provider).provision(input.request);
    },

    async teardownHost(input: HostRef): Promise<void> {
      await provider(input.provider).teardown(input.hostId);
    },

    async killHost(input: HostRef): Promise<void> {
      await provider(input.provider).kill(input.hostId);
    },

    async diagnoseHost(input: HostRef): Promise<string> {
      return provider(input.provider).diagnose(input.hostId);
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
      if (input.drills?.length) {
        result.drills = input.drills.map((d) => ({ ...d, location: d.location || deps.results.location(d.runId) }));
        for (const d of input.drills)
          result.checks.push({ name: `${d.kind} passes`, scope: 'durability', ok: d.status === 'passed', detail: d.verdict });
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
  };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;

export function environmentInfo(provider: string): EnvironmentInfo {
  return { cpus: os.cpus().length, memoryMiB: Math.round(os.totalmem() / 2 ** 20), kernel: os.release(), provider };
}

function freeBytes(dir: string): number | null {
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      const s = statfsSync(d);
      return s.bavail * s.bsize;
    } catch {
      if (d === '/') return null;
    }
  }
}
