/**
 * What both drill workflows share: the hosts' requests and bounds, provisioning with a wait for the host's agent,
 * and tearing every host down.
 */
import { ApplicationFailure, upsertSearchAttributes } from '@temporalio/workflow';
import type { ProviderName } from '../common/core/hosts';
import type { HostTimeouts } from '../common/input/bounds';
import type { DrillSummary } from '../common/results/drill-result';
import type { FailoverDrillSpec, RestoreDrillSpec } from '../common/input/drill-spec';
import { FAILURE_TYPES } from '../common/core/errors';
import type { HostRecord, HostRequest } from '../common/core/hosts';
import { waitForAgent } from './agents';
import type { PlanOutcome } from './compensation';
import { failureMessage } from './failures';
import type { ProgressBoard } from './progress';
import { providerCalls, teardownCalls } from './proxies';
import { searchAttributes } from './search-attributes';

type DrillSpec = RestoreDrillSpec | FailoverDrillSpec;

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
    // The restore drill always backs up; the failover drill unless backup.enabled is false.
    s3Backups: ('enabled' in spec.backup ? spec.backup.enabled : true) && spec.backup.store.kind === 's3',
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
  await waitForAgent(provider, record, timeouts);
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

/**
 * How a drill ends once it has compensated: its status on the board and in the search attributes, then its
 * failure raised (a drill that did not pass fails its workflow, with the verdict), or its summary returned.
 */
export function finishDrill(
  board: ProgressBoard,
  outcome: PlanOutcome<void>,
  kind: DrillSummary['kind'],
  runId: string,
  result: { status: DrillSummary['status']; verdict: string },
  figures: DrillSummary['figures'],
): DrillSummary {
  upsertSearchAttributes(searchAttributes({ status: result.status }));
  board.setPhase(result.status);
  if (outcome.failure) throw outcome.failure;
  if (result.status !== 'passed')
    throw ApplicationFailure.nonRetryable(`${kind.replace("-", " ")} ${runId} failed: ${result.verdict}\nresults: ${outcome.location}`, FAILURE_TYPES.verification);
  return { runId, kind, status: result.status, verdict: result.verdict, location: outcome.location, figures };
}
