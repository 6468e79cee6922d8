/**
 * One cluster: one Postgres on one host of one storage class.
 * provision → configure → load (checkpointed) → WAL archiving + base backup (durability on) → warm-up →
 * TPS run with diagnostics → bloat + VACUUM → replication backlog + drain; then, whatever happened, save the
 * results and tear the host down (workflows/compensation.ts).
 */
import { ApplicationFailure, isCancellation, workflowInfo } from '@temporalio/workflow';
import { z } from 'zod';
import { clusterBounds } from '../common/input/bounds';
import { latencyBreakdown } from '../common/results/breakdown';
import { FAILURE_TYPES, type SpecProblem } from '../common/core/errors';
import { hostIdFor } from '../common/core/ids';
import { tpsStall } from '../common/results/attempts';
import { labPostgresSettings, userPostgresSettings } from '../common/input/postgres-settings';
import type { ClusterResult, FailedAttempt } from '../common/results/result';
import type { PgbenchRun } from '../activities/host/pgbench';
import { InvalidSpecError, accountRows, classLimits, revalidateSpec, volumeBytes, type ExperimentSpec } from '../common/input/spec';
import { explainHostFailure, oomDuringAttempt, waitForAgent } from './agents';
import { runCompensated } from './compensation';
import { checkedWorkflowId, parseAtDoor, refuseAtDoor, underField, type DoorInfo } from './doors';
import { archiveAndBackUp, removeClusterBackups } from './durability';
import { failureMessage, isNonRetryable } from './failures';
import { ProgressBoard } from './progress';
import { hostCalls, providerCalls, resultCalls, teardownCalls } from './proxies';

export interface ClusterInput {
  runId: string;
  spec: ExperimentSpec;
  className: string;
  index: number;
  hostId: string;
}

/** Measured phases get this many attempts; each failed one is recorded in the result. */
const MEASURE_ATTEMPTS = 3;

/** The fields a cluster's input has; the spec is checked by revalidateSpec. */
const ClusterInputShape = z
  .object({ runId: z.string(), className: z.string(), index: z.number().int().min(0), hostId: z.string(), spec: z.unknown() })
  .strict();

/**
 * The cluster's door. Only experimentWorkflow starts clusters, after validating the spec and running its preflight,
 * and a client cannot forge a parent: a run without one is refused, and with one it must be the run it names, under
 * the workflow id and host id the experiment derives. The spec must still parse again unchanged (defence in depth).
 * The preflight is not run again here: it would add a command to every cluster (replay), and the parent ran it.
 */
export function clusterInputAtDoor(input: unknown, info: DoorInfo): ClusterInput {
  const subject = 'clusterWorkflow start';
  checkedWorkflowId(info);
  const parent = info.parent;
  if (!parent)
    refuseAtDoor(
      [{ path: 'parent', message: 'clusterWorkflow runs only as a child of experimentWorkflow, which validates the spec and runs its preflight (this run has no parent); start experimentWorkflow with the spec instead' }],
      subject,
    );
  const shape = parseAtDoor(ClusterInputShape, input, null, subject);
  const problems: SpecProblem[] = [];
  let spec: ExperimentSpec | undefined;
  try {
    spec = revalidateSpec(shape.spec);
  } catch (err) {
    if (!(err instanceof InvalidSpecError)) throw err;
    problems.push(...err.problems.map((p) => underField(p, 'spec')));
  }
  if (shape.runId !== parent.workflowId)
    problems.push({ path: 'runId', message: `${JSON.stringify(shape.runId)} is not the run that started this cluster (${JSON.stringify(parent.workflowId)}); the experiment passes its own workflow id` });
  const workflowId = clusterWorkflowId(shape.runId, shape.className, shape.index);
  if (info.workflowId !== workflowId)
    problems.push({ path: 'workflowId', message: `${JSON.stringify(info.workflowId)} is not this cluster's (${JSON.stringify(workflowId)}); the experiment names its clusters <run>/<class>-<index>` });
  const hostId = hostIdFor(shape.runId, shape.className, shape.index);
  if (shape.hostId !== hostId)
    problems.push({ path: 'hostId', message: `${JSON.stringify(shape.hostId)} is not this cluster's host (${JSON.stringify(hostId)}); the experiment derives it from the run, the class and the index` });
  if (spec && !Object.prototype.hasOwnProperty.call(spec.storageClasses, shape.className))
    problems.push({ path: 'className', message: `${JSON.stringify(shape.className)} is not a storage class of the spec; use one of ${Object.keys(spec.storageClasses).join(', ')}` });
  if (spec && shape.index >= spec.clustersPerClass)
    problems.push({ path: 'index', message: `${shape.index} is beyond the spec's ${spec.clustersPerClass} clusters per class; use 0 to ${spec.clustersPerClass - 1}` });
  if (problems.length || !spec) refuseAtDoor(problems, subject);
  return { ...shape, spec };
}

export async function clusterWorkflow(rawInput: ClusterInput): Promise<ClusterResult> {
  const input = clusterInputAtDoor(rawInput, workflowInfo());
  const { spec, hostId, className, index, runId } = input;
  const provider = spec.provider;
  const board = new ProgressBoard(`Cluster ${hostId}`, runId);
  const timeouts = clusterBounds(spec);
  const host = hostCalls(hostId, timeouts);
  const storeKey = clusterWorkflowId(runId, className, index);
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
  /** OOM kills of the host's memory cgroup seen so far: an attempt that adds some was killed for memory. */
  let oomKills = 0;

  /** Enters a phase; a task of it that no agent takes means the host is dead, and the failure says so. */
  async function phase<T>(name: string, run: () => Promise<T>): Promise<T> {
    board.step(hostId, name);
    try {
      return await run();
    } catch (err) {
      throw isCancellation(err) ? err : await explainHostFailure(provider, hostId, err, timeouts);
    }
  }

  /**
   * Runs a measurement up to MEASURE_ATTEMPTS times, recording each failed attempt: one the host's OOM killer hit
   * is final (it would be killed again), and a kept result that `unusable` rejects (a stalled run) counts as failed.
   */
  async function measured<T>(name: string, run: () => Promise<T>, unusable: (r: T) => string | null = () => null): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let error: string;
      try {
        const r = await run();
        const why = unusable(r);
        if (why === null || attempt >= MEASURE_ATTEMPTS) return r;
        error = why;
      } catch (err) {
        if (isCancellation(err) || isNonRetryable(err)) throw err;
        const explained = await explainHostFailure(provider, hostId, err, timeouts);
        if (explained !== err) throw explained;
        const oom = await oomDuringAttempt(provider, hostId, oomKills, `${name} attempt ${attempt}`, spec.host.memoryLimitMiB);
        oomKills = oom.kills;
        if (oom.failure) throw oom.failure;
        if (attempt >= MEASURE_ATTEMPTS) throw err;
        error = failureMessage(err);
      }
      const failed: FailedAttempt = { phase: name, attempt, error, at: new Date().toISOString() };
      result.failedAttempts.push(failed);
      board.fail(`${hostId} ${name} attempt ${attempt}: ${error}`);
    }
  }

  function pgbench(label: string, durationSeconds: number, sampled = false): Promise<PgbenchRun> {
    const { clients, threads, script } = spec.workload;
    const sampler = sampled && spec.sampler.enabled ? { intervalMs: spec.sampler.intervalMs } : undefined;
    const stalled = (r: PgbenchRun) => {
      const stall = tpsStall(r.tpsSeries);
      return stall ? `stalled: no transaction completed in seconds ${stall.from}-${stall.to} (${stall.seconds} s); measured again` : null;
    };
    return measured(
      label,
      () =>
        host.measure.runPgbench.executeWithOptions({ summary: `pgbench ${label}: ${clients} clients, ${durationSeconds} s` }, [
          { hostId, label, scale: spec.data.scale, clients, threads, durationSeconds, script, sampler },
        ]),
      stalled,
    );
  }

  const plan = async () => {
    const record = await phase('provision', () => provisionCluster(input, result));
    await waitForAgent(provider, record, timeouts);
    await phase('configure', async () => {
      const pg = await host.setup.configurePostgres.executeWithOptions(
        { summary: `configure PostgreSQL: shared_buffers ${spec.postgres.sharedBuffersMiB} MiB, max_wal_size ${spec.postgres.maxWalSizeMiB} MiB` },
        [{ hostId, server: labPostgresSettings(spec, 'load'), user: userPostgresSettings(spec.postgres.settings) }],
      );
      result.postgresVersion = pg.postgresVersion;
    });
    await phase('load', () => loadAndVerify(spec, hostId, host, result));
    if (spec.durability.enabled)
      result.phases.durability = await phase('backup', () => archiveAndBackUp(host, hostId, storeKey, spec));
    else if (spec.postgres.directIo !== 'off')
      await phase('restart', () =>
        host.setup.configurePostgres.executeWithOptions({ summary: `restart with direct I/O (${spec.postgres.directIo}) for the measured phases` }, [
          { hostId, server: labPostgresSettings(spec), user: userPostgresSettings(spec.postgres.settings) },
        ]),
      );
    if (spec.workload.warmupSeconds > 0) await phase('warmup', () => pgbench('warmup', spec.workload.warmupSeconds));
    await phase('tps', async () => recordTpsRun(result, await pgbench('tps', spec.workload.durationSeconds, true)));
    if (spec.phases.vacuum.enabled) {
      const { bloatMB } = spec.phases.vacuum;
      result.phases.vacuum = await phase('vacuum', () =>
        measured('vacuum', () =>
          host.phase.runVacuumPhase.executeWithOptions({ summary: `${bloatMB} MB of dead tuples, then VACUUM (VERBOSE)` }, [{ hostId, bloatMB }]),
        ),
      );
    }
    if (spec.phases.backlog.enabled) {
      const { backlogMB } = spec.phases.backlog;
      const { clients, threads, script } = spec.workload;
      result.phases.backlog = await phase('backlog', () =>
        measured('backlog', () =>
          host.phase.runBacklogPhase.executeWithOptions({ summary: `${backlogMB} MB logical-replication backlog, then drain` }, [
            { hostId, backlogMB, scale: spec.data.scale, clients, threads, script },
          ]),
        ),
      );
    }
    result.status = 'ok';
  };

  const outcome = await runCompensated(board, plan, {
    failed(err, status) {
      result.status = status;
      result.error = failureMessage(err);
    },
    async save() {
      board.step(hostId, 'save results');
      result.finishedAt = new Date().toISOString();
      await resultCalls.saveClusterResult.executeWithOptions({ summary: `save the results of ${hostId} (${result.status})` }, [{ runId, result }]);
      return '';
    },
    async teardown() {
      board.step(hostId, 'teardown');
      const errors: string[] = [];
      await teardownCalls.teardownHost.executeWithOptions({ summary: `tear down ${hostId}` }, [{ provider, hostId }]).catch((err) => {
        errors.push(`teardown of ${hostId} failed: ${failureMessage(err)}`);
      });
      if (spec.durability.enabled) await removeClusterBackups(storeKey, spec).catch((err) => errors.push(`removing backups failed: ${failureMessage(err)}`));
      board.step(hostId, result.status === 'ok' && !errors.length ? 'done' : 'failed');
      return errors;
    },
  });
  if (outcome.failure) throw outcome.failure;
  if (outcome.errors.length) throw ApplicationFailure.nonRetryable(outcome.errors.join('\n'), FAILURE_TYPES.teardown);
  return result;
}

/** Asks the provider for the cluster's host (its class's storage and limits); records whether they are emulated. */
async function provisionCluster(input: ClusterInput, result: ClusterResult) {
  const { spec, runId, hostId, className } = input;
  const cls = spec.storageClasses[className];
  const limits = classLimits(cls);
  const summary = `provision ${hostId}: ${cls.kind}${limits ? ` at ${limits.iops} IOPS, ${limits.throughputMiBps} MiB/s` : ''}, ${spec.host.memoryLimitMiB} MiB`;
  const record = await providerCalls.provisionHost.executeWithOptions({ summary }, [
    {
      provider: spec.provider,
      request: {
        runId,
        hostId,
        experiment: spec.name,
        className,
        storageClass: cls,
        memoryLimitMiB: cls.memoryLimitMiB ?? spec.host.memoryLimitMiB,
        instanceType: spec.host.instanceType,
        volumeBytes: volumeBytes(spec),
        expiresAt: new Date(Date.now() + spec.expiresAfterHours * 3600_000).toISOString(),
        postgresVersion: spec.postgres.version,
        aws: spec.aws,
        s3Backups: spec.durability.enabled && spec.durability.backupStore.kind === 's3',
      },
    },
  ]);
  result.emulated = record.emulated;
  result.emulationNote = record.emulationNote;
  return record;
}

/** The checkpointed load, then (when the spec asks) count(*) and count(distinct aid) against the rows asked for. */
async function loadAndVerify(spec: ExperimentSpec, hostId: string, host: ReturnType<typeof hostCalls>, result: ClusterResult): Promise<void> {
  const { scale, chunkRows, loadWriters } = spec.data;
  const load = await host.load.loadData.executeWithOptions(
    { summary: `load scale ${scale}: ${accountRows(scale).toLocaleString('en-US')} rows in chunks of ${chunkRows.toLocaleString('en-US')}, ${loadWriters} writers` },
    [{ hostId, scale, chunkRows, writers: loadWriters }],
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

/** The TPS run's figures, its diagnostics and the latency breakdown, as the result keeps them. */
function recordTpsRun(result: ClusterResult, { diagnostics, ...run }: PgbenchRun): void {
  result.tpsRun = run;
  result.tps = run.tps;
  result.latencyMs = run.latencyMs;
  result.tpsSeries = run.tpsSeries;
  if (diagnostics) {
    result.diagnostics = diagnostics;
    result.breakdownMs = latencyBreakdown(run.latencyMs.mean, diagnostics.waitEvents) ?? undefined;
  }
}

/** The workflow id of cluster `index` of a class within a run. */
export function clusterWorkflowId(runId: string, className: string, index: number): string {
  return `${runId}/${className}-${index}`;
}
