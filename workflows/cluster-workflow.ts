/**
 * One cluster: one Postgres on one host of one storage class.
 * provision → configure → load (checkpointed) → WAL archiving + base backup (durability on) → warm-up →
 * TPS run with diagnostics → bloat + VACUUM → replication backlog + drain → save results → teardown.
 * Teardown is a compensation that always runs (failure, cancel) in a non-cancellable scope, after results are saved.
 */
import { ApplicationFailure, CancellationScope, isCancellation } from '@temporalio/workflow';
import { latencyBreakdown } from '../common/breakdown';
import { FAILURE_TYPES } from '../common/errors';
import { postgresSettings } from '../common/postgres-settings';
import type { ClusterResult, FailedAttempt } from '../common/result';
import type { PgbenchRun } from '../activities/host/pgbench';
import { accountRows, classLimits, volumeBytes, type ExperimentSpec } from '../common/spec';
import { waitForAgent } from './agents';
import { archiveAndBackUp, removeClusterBackups } from './durability';
import { failureMessage, isNonRetryable } from './failures';
import { ProgressBoard } from './progress';
import { hostCalls, providerCalls, resultCalls, teardownCalls, type HostTimeouts } from './proxies';

export interface ClusterInput {
  runId: string;
  spec: ExperimentSpec;
  className: string;
  index: number;
  hostId: string;
  /** The experiment workflow to report progress to. */
  parentWorkflowId?: string;
}

/** Measured phases get this many attempts; each failed one is recorded in the result. */
const MEASURE_ATTEMPTS = 3;

/** Timeouts that follow from the spec: the load's bound grows with the data, a run's with its duration. */
export function hostTimeouts(spec: ExperimentSpec): HostTimeouts {
  const rows = spec.data.scale * 100_000;
  return {
    agentStartSeconds: spec.provider === 'aws' ? 15 * 60 : 120,
    // At worst ~20,000 rows/s (a throttled volume), and never under 2 hours.
    loadHours: Math.max(2, Math.ceil(rows / 20_000 / 3600)),
    measureSeconds: Math.max(spec.workload.durationSeconds, spec.workload.warmupSeconds) + 600,
    // At worst ~1 MB/s made or moved on a throttled volume, plus a pre-VACUUM of the TPS run's dead tuples.
    phaseSeconds: 1800 + 2 * Math.ceil(Math.max(spec.phases.vacuum.bloatMB, spec.phases.backlog.backlogMB)),
  };
}

export async function clusterWorkflow(input: ClusterInput): Promise<ClusterResult> {
  const { spec, hostId, className, index, runId } = input;
  const provider = spec.provider;
  const board = new ProgressBoard(`Cluster ${hostId}`, runId, 1, input.parentWorkflowId);
  const host = hostCalls(hostId, hostTimeouts(spec));
  const result: ClusterResult = {
    hostId,
    className,
    index,
    status: 'failed',
    emulated: false,
    startedAt: new Date().toISOString(),
    finishedAt: '',
    failedAttempts: [],
    phases: {},
  };

  /** Runs a measurement up to MEASURE_ATTEMPTS times, recording each failed attempt. */
  async function measured<T>(phase: string, run: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (err) {
        if (isCancellation(err) || isNonRetryable(err) || attempt >= MEASURE_ATTEMPTS) throw err;
        const failed: FailedAttempt = { phase, attempt, error: failureMessage(err), at: new Date().toISOString() };
        result.failedAttempts.push(failed);
        board.fail(`${hostId} ${phase} attempt ${attempt}: ${failed.error}`);
      }
    }
  }

  function pgbench(label: string, durationSeconds: number, sampled = false): Promise<PgbenchRun> {
    return measured(label, () =>
      host.measure.runPgbench.executeWithOptions({ summary: `pgbench ${label}: ${spec.workload.clients} clients, ${durationSeconds} s` }, [
        {
          hostId,
          label,
          scale: spec.data.scale,
          clients: spec.workload.clients,
          threads: spec.workload.threads,
          durationSeconds,
          script: spec.workload.script,
          sampler: sampled && spec.sampler.enabled ? { intervalMs: spec.sampler.intervalMs } : undefined,
        },
      ]),
    );
  }

  let failure: unknown;
  try {
    board.step(hostId, 'provision');
    const cls = spec.storageClasses[className];
    const limits = classLimits(cls);
    const summary = `provision ${hostId}: ${cls.kind}${limits ? ` at ${limits.iops} IOPS, ${limits.throughputMiBps} MiB/s` : ''}, ${spec.host.memoryLimitMiB} MiB`;
    const record = await providerCalls.provisionHost.executeWithOptions({ summary }, [
      {
        provider,
        request: {
          runId,
          hostId,
          experiment: spec.name,
          className,
          storageClass: cls,
          memoryLimitMiB: spec.host.memoryLimitMiB,
          instanceType: spec.host.instanceType,
          volumeBytes: volumeBytes(spec),
          expiresAt: new Date(Date.now() + spec.expiresAfterHours * 3600_000).toISOString(),
          postgresVersion: spec.postgres.version,
          aws: spec.aws,
        },
      },
    ]);
    result.emulated = record.emulated;
    result.emulationNote = record.emulationNote;
    await waitForAgent(provider, record, hostTimeouts(spec));

    board.step(hostId, 'configure');
    const pg = await host.setup.configurePostgres.executeWithOptions(
      { summary: `configure PostgreSQL: shared_buffers ${spec.postgres.sharedBuffersMiB} MiB, max_wal_size ${spec.postgres.maxWalSizeMiB} MiB` },
      [{ hostId, settings: postgresSettings(spec) }],
    );
    result.postgresVersion = pg.postgresVersion;

    board.step(hostId, 'load');
    const load = await host.load.loadData.executeWithOptions(
      { summary: `load scale ${spec.data.scale}: ${accountRows(spec.data.scale).toLocaleString('en-US')} rows in chunks of ${spec.data.chunkRows.toLocaleString('en-US')}, ${spec.data.loadWriters} writers` },
      [{ hostId, scale: spec.data.scale, chunkRows: spec.data.chunkRows, writers: spec.data.loadWriters }],
    );
    if (spec.data.verifyRows) {
      const counted = await host.setup.verifyAccounts.executeWithOptions({ summary: 'verify: count(*) and count(distinct aid)' }, [{ hostId }]);
      load.verified = { rows: counted.rows, distinctAids: counted.distinctAids };
      if (counted.rows !== load.rows || counted.distinctAids !== load.rows)
        throw ApplicationFailure.nonRetryable(
          `load verification failed on ${hostId}: count(*) = ${counted.rows}, count(distinct aid) = ${counted.distinctAids}, expected ${load.rows}`,
          FAILURE_TYPES.verification,
        );
    }
    result.load = load;
    result.rows = load.rows;
    result.loadSeconds = load.loadSeconds;

    if (spec.durability.enabled) {
      board.step(hostId, 'backup');
      result.phases.durability = await archiveAndBackUp(host, hostId, clusterWorkflowId(runId, className, index), spec, postgresSettings(spec));
    }

    if (spec.workload.warmupSeconds > 0) {
      board.step(hostId, 'warmup');
      await pgbench('warmup', spec.workload.warmupSeconds);
    }

    board.step(hostId, 'tps');
    const { diagnostics, ...run } = await pgbench('tps', spec.workload.durationSeconds, true);
    result.tpsRun = run;
    result.tps = run.tps;
    result.latencyMs = run.latencyMs;
    result.tpsSeries = run.tpsSeries;
    if (diagnostics) {
      result.diagnostics = diagnostics;
      result.breakdownMs = latencyBreakdown(run.latencyMs.mean, diagnostics.waitEvents) ?? undefined;
    }

    if (spec.phases.vacuum.enabled) {
      board.step(hostId, 'vacuum');
      const { bloatMB } = spec.phases.vacuum;
      result.phases.vacuum = await measured('vacuum', () =>
        host.phase.runVacuumPhase.executeWithOptions({ summary: `${bloatMB} MB of dead tuples, then VACUUM (VERBOSE)` }, [
          { hostId, bloatMB },
        ]),
      );
    }
    if (spec.phases.backlog.enabled) {
      board.step(hostId, 'backlog');
      const { backlogMB } = spec.phases.backlog;
      result.phases.backlog = await measured('backlog', () =>
        host.phase.runBacklogPhase.executeWithOptions({ summary: `${backlogMB} MB logical-replication backlog, then drain` }, [
          {
            hostId,
            backlogMB,
            scale: spec.data.scale,
            clients: spec.workload.clients,
            threads: spec.workload.threads,
            script: spec.workload.script,
          },
        ]),
      );
    }
    result.status = 'ok';
  } catch (err) {
    failure = err;
    result.status = isCancellation(err) ? 'cancelled' : 'failed';
    result.error = failureMessage(err);
    board.fail(`${hostId}: ${result.error}`);
  }

  // Compensation: results first (nothing measured is lost), then teardown, whatever happened above.
  await CancellationScope.nonCancellable(async () => {
    result.finishedAt = new Date().toISOString();
    try {
      await resultCalls.saveClusterResult.executeWithOptions({ summary: `save the results of ${hostId} (${result.status})` }, [{ runId, result }]);
    } catch (err) {
      failure ??= err;
      board.fail(`${hostId}: saving results failed: ${failureMessage(err)}`);
    }
    board.step(hostId, 'teardown');
    await teardownCalls.teardownHost.executeWithOptions({ summary: `tear down ${hostId}` }, [{ provider, hostId }]);
    if (spec.durability.enabled) await removeClusterBackups(clusterWorkflowId(runId, className, index), spec);
    board.step(hostId, 'done');
  });
  if (failure) throw failure;
  return result;
}

/** The workflow id of cluster `index` of a class within a run. */
export function clusterWorkflowId(runId: string, className: string, index: number): string {
  return `${runId}/${className}-${index}`;
}

