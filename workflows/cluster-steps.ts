/**
 * The cluster's steps (workflows/cluster-workflow.ts runs them in order): provisioning, configuration, the
 * resumable load, the measurements (the TPS run, each phase) with their recorded attempts, and the save of the result.
 */
import { ApplicationFailure, isCancellation } from '@temporalio/workflow';
import type { PgbenchRun } from '../activities/host/pgbench';
import { FAILURE_TYPES } from '../common/core/errors';
import { clusterBounds, type HostTimeouts } from '../common/input/bounds';
import { labPostgresSettings, userPostgresSettings } from '../common/input/postgres-settings';
import { accountRows } from '../common/input/data-size';
import { dataSetsOff } from '../common/input/data-set';
import { classWorkload, phaseContext, volumeBytes, type ExperimentSpec } from '../common/input/spec';
import { tpsStall } from '../common/results/attempts';
import { latencyBreakdown } from '../common/results/breakdown';
import type { Phase } from '../common/phases/kit';
import type { ClusterResult } from '../common/results/result';
import { explainHostFailure, oomDuringAttempt } from './agents';
import { clusterWorkflowId, type ClusterInput } from './cluster-door';
import { UndoStack } from './compensation';
import { failureMessage, isNonRetryable } from './failures';
import { hostRequest, provisionHosts } from './hosts';
import type { ProgressBoard } from './progress';
import { hostCalls, phaseCall, resultCalls, type HostCalls } from './proxies';

/** Measured steps (the TPS run, the phases) get this many attempts; each failed one is recorded in the result. */
const MEASURE_ATTEMPTS = 3;

/** One cluster's run as its steps see it: its input, its host's calls, the result they fill in, what it made. */
export interface ClusterRun {
  input: ClusterInput;
  spec: ExperimentSpec;
  hostId: string;
  board: ProgressBoard;
  timeouts: HostTimeouts;
  host: HostCalls;
  result: ClusterResult;
  undo: UndoStack;
  /** The cluster's own prefix of the backup store: its workflow id. */
  storeKey: string;
  /** OOM kills of the host's memory cgroup seen so far: an attempt that adds some was killed for memory. */
  oomKills: number;
}

/** A cluster's run before its first step: a result that says failed until the plan finishes. */
export function clusterRun(input: ClusterInput, board: ProgressBoard): ClusterRun {
  const { spec, hostId, className, index, runId } = input;
  const timeouts = clusterBounds(spec);
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
  const storeKey = clusterWorkflowId(runId, className, index);
  return { input, spec, hostId, board, timeouts, host: hostCalls(hostId, timeouts), result, undo: new UndoStack(), storeKey, oomKills: 0 };
}

/** Enters a step; a task of it that no agent takes means the host is dead, and the failure says so. */
export async function step<T>(c: ClusterRun, name: string, run: () => Promise<T>): Promise<T> {
  c.board.step(c.hostId, name);
  try {
    return await run();
  } catch (err) {
    throw isCancellation(err) ? err : await explainHostFailure(c.spec.provider, c.hostId, err, c.timeouts);
  }
}

/** Asks the provider for the cluster's host (its class's storage and limits); records whether they are emulated. */
export async function provisionCluster(c: ClusterRun): Promise<void> {
  const { spec, input, hostId } = c;
  const cls = spec.storageClasses[input.className];
  const request = hostRequest(spec, input.runId, hostId, input.className, {
    storageClass: cls,
    memoryLimitMiB: cls.memoryLimitMiB ?? spec.host.memoryLimitMiB,
    volumeBytes: volumeBytes(spec),
    // A local host reaches an S3 store with the keys its agent is started with: for backups, and for data sets there.
    s3Backups: spec.durability.backupStore.kind === 's3' && (spec.durability.enabled || dataSetsOff(spec) === null),
  });
  const [record] = await provisionHosts(c.undo, spec.provider, [request], c.timeouts);
  c.result.emulated = record.emulated;
  c.result.emulationNote = record.emulationNote;
}

/** Configures and starts Postgres with the load's settings. */
export async function configure(c: ClusterRun): Promise<void> {
  const { spec, hostId } = c;
  const pg = await c.host.setup.configurePostgres.executeWithOptions(
    { summary: `configure PostgreSQL: shared_buffers ${spec.postgres.sharedBuffersMiB} MiB, max_wal_size ${spec.postgres.maxWalSizeMiB} MiB` },
    [{ hostId, server: labPostgresSettings(spec, 'load'), user: userPostgresSettings(spec.postgres.settings) }],
  );
  c.result.postgresVersion = pg.postgresVersion;
}

/** The resumable load, then (when the spec asks) count(*) and count(distinct aid) against the rows asked for. */
export async function loadAndVerify(c: ClusterRun, opts: { freeze?: boolean } = {}): Promise<void> {
  const { spec, hostId, host, result } = c;
  const { scale, chunkRows, loadWriters } = spec.data;
  const load = await host.load.loadData.executeWithOptions(
    { summary: `load scale ${scale}: ${accountRows(scale).toLocaleString('en-US')} rows in chunks of ${chunkRows.toLocaleString('en-US')}, ${loadWriters} writers${opts.freeze ? ', then VACUUM (FREEZE, ANALYZE)' : ''}` },
    [{ hostId, scale, chunkRows, writers: loadWriters, ...(opts.freeze ? { freeze: true } : {}) }],
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
}

/** Restarts Postgres with the measured steps' settings (direct I/O), when no backup step did. */
export async function restartWithDirectIo(c: ClusterRun): Promise<void> {
  const { spec, hostId } = c;
  await c.host.setup.configurePostgres.executeWithOptions({ summary: `restart with direct I/O (${spec.postgres.directIo}) for the measured steps` }, [
    { hostId, server: labPostgresSettings(spec), user: userPostgresSettings(spec.postgres.settings) },
  ]);
}

/** A pgbench run of the spec's workload, measured (a stalled run counts as a failed attempt); `sampled` adds the sampler. */
export function pgbench(c: ClusterRun, label: string, durationSeconds: number, sampled = false): Promise<PgbenchRun> {
  const { spec, hostId } = c;
  const { clients, threads, script } = classWorkload(spec, c.input.className);
  const sampler = sampled && spec.sampler.enabled ? { intervalMs: spec.sampler.intervalMs } : undefined;
  const stalled = (r: PgbenchRun) => {
    const stall = tpsStall(r.tpsSeries);
    return stall ? `stalled: no transaction completed in seconds ${stall.from}-${stall.to} (${stall.seconds} s); measured again` : null;
  };
  return measured(
    c,
    label,
    () =>
      c.host.measure.runPgbench.executeWithOptions({ summary: `pgbench ${label}: ${clients} clients, ${durationSeconds} s` }, [
        { hostId, label, scale: spec.data.scale, clients, threads, durationSeconds, script, sampler },
      ]),
    stalled,
  );
}

/** The TPS run with the sampler: its figures, its sampler readings and the latency breakdown, as the result keeps them. */
export async function tpsRun(c: ClusterRun): Promise<void> {
  const { diagnostics, ...run } = await pgbench(c, 'tps', c.spec.workload.durationSeconds, true);
  const { result } = c;
  result.tpsRun = run;
  result.tps = run.tps;
  result.latencyMs = run.latencyMs;
  result.tpsSeries = run.tpsSeries;
  if (diagnostics) {
    result.diagnostics = diagnostics;
    result.breakdownMs = latencyBreakdown(run.latencyMs.mean, diagnostics.waitEvents) ?? undefined;
  }
}

/**
 * A phase after the TPS run (common/phases/registry.ts), when the spec runs it: its module makes the step (the host
 * activity, its input, summary and bound), the workflow measures it like every measured step and keeps its result
 * under the phase's name.
 */
export async function runPhase(c: ClusterRun, phase: Phase): Promise<void> {
  const s = phase.step(c.spec.phases, phaseContext(c.spec, c.input.className), c.hostId);
  if (!s) return;
  const result = await step(c, phase.name, () => measured(c, phase.name, () => phaseCall(c.hostId, s, c.timeouts)));
  Object.assign(c.result.phases, { [phase.name]: result });
}

/** Saves the cluster's result (the compensation's save: whatever happened, before the teardown). */
export async function saveClusterResult(c: ClusterRun): Promise<string> {
  const { board, hostId, result } = c;
  board.step(hostId, 'save results');
  result.finishedAt = new Date().toISOString();
  await resultCalls.saveClusterResult.executeWithOptions({ summary: `save the results of ${hostId} (${result.status})` }, [{ runId: c.input.runId, result }]);
  return '';
}

/**
 * Runs a measurement up to MEASURE_ATTEMPTS times, recording each failed attempt: one the host's OOM killer hit
 * is final (it would be killed again), and a kept result that `unusable` rejects (a stalled run) counts as failed.
 */
async function measured<T>(c: ClusterRun, name: string, run: () => Promise<T>, unusable: (r: T) => string | null = () => null): Promise<T> {
  const { spec, hostId } = c;
  for (let attempt = 1; ; attempt++) {
    let error: string;
    try {
      const r = await run();
      const why = unusable(r);
      if (why === null || attempt >= MEASURE_ATTEMPTS) return r;
      error = why;
    } catch (err) {
      if (isCancellation(err) || isNonRetryable(err)) throw err;
      const explained = await explainHostFailure(spec.provider, hostId, err, c.timeouts);
      if (explained !== err) throw explained;
      const oom = await oomDuringAttempt(spec.provider, hostId, c.oomKills, `${name} attempt ${attempt}`, spec.host.memoryLimitMiB);
      c.oomKills = oom.kills;
      if (oom.failure) throw oom.failure;
      if (attempt >= MEASURE_ATTEMPTS) throw err;
      error = failureMessage(err);
    }
    c.result.failedAttempts.push({ phase: name, attempt, error, at: new Date().toISOString() });
    c.board.fail(`${hostId} ${name} attempt ${attempt}: ${error}`);
  }
}
