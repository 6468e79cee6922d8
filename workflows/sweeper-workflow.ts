/**
 * The sweeper: removes lab resources that no workflow will ever tear down: hosts whose run has closed (a terminated
 * workflow runs no compensation), is unknown to this namespace, or has outlived its expiry. A host whose run is
 * running and not expired is never touched. With dryRun it only reports what it would remove.
 */
import { continueAsNew, patched, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { z } from 'zod';
import { planSweep, runsToCheck, type SweepReport } from '../common/core/sweep';
import { PROVIDER_NAMES } from '../common/providers/registry';
import { checkedWorkflowId, continuationAtDoor, parseAtDoor, refuseAtDoor, type DoorInfo } from './doors';
import { forEachBounded } from './children';
import { failureMessage } from './failures';
import { sweepCalls } from './proxies';

export interface SweepInput {
  /** Report what would be removed; remove nothing. */
  dryRun?: boolean;
}

/** The patch that adds the removal of expired data sets at a sweep's end: sweeps begun before end without it. */
export const SWEEP_DATA_SETS_PATCH = 'sweep-data-sets';

/** Teardowns at once: a few, so a large leak is cleared quickly without a burst of API calls. */
const PARALLEL_TEARDOWNS = 4;
/**
 * Removals per workflow execution: a sweep of a large leak continues as new after this many (each removal costs a
 * few history events), carrying what it did so far and the hosts it could not remove, so they are not tried again.
 */
export const REMOVALS_PER_EXECUTION = 100;

/** The sweeper's whole input: `{}` or `{"dryRun": true}`, nothing else. */
const SweepInputSchema = z.object({ dryRun: z.boolean({ error: 'must be true or false' }).optional() }).strict();

const SweepDecisionSchema = z
  .object({
    kind: z.enum(['host', 'backup-store']).optional(),
    keep: z.boolean().optional(),
    provider: z.enum(PROVIDER_NAMES),
    hostId: z.string(),
    runId: z.string(),
    expiresAt: z.string().nullable(),
    resources: z.array(z.string()),
    foreign: z.boolean().optional(),
    ownerless: z.object({ madeAt: z.string(), oldestOpenRunStartedAt: z.string().nullable() }).strict().optional(),
    reason: z.string(),
  })
  .strict();

/** What one execution carries to the next (continue-as-new): only a real sweep continues, never a dry run. */
const SweepCarrySchema = z
  .object({
    dryRun: z.literal(false),
    checkedAt: z.iso.datetime({ error: 'must be an ISO date and time' }),
    removed: z.array(SweepDecisionSchema),
    kept: z.array(SweepDecisionSchema),
    failed: z.array(SweepDecisionSchema.extend({ error: z.string() })),
  })
  .strict();

/**
 * What a continued sweep carries, checked at the door: only in a run the lab continued, in its shape, and with a
 * start time not in the future (expiry is judged at checkedAt: a later one would make every host look expired).
 */
export function carriedAtDoor(raw: unknown, info: DoorInfo, now: number): SweepReport | undefined {
  const carried = continuationAtDoor(SweepCarrySchema, raw, 'carried', info);
  if (carried && Date.parse(carried.checkedAt) > now)
    refuseAtDoor([{ path: 'carried.checkedAt', message: `${carried.checkedAt} is in the future; a sweep carries the time it started` }], 'sweeperWorkflow continuation');
  return carried;
}

export async function sweeperWorkflow(rawInput: SweepInput = {}, rawCarried?: SweepReport): Promise<SweepReport> {
  checkedWorkflowId();
  const input = parseAtDoor(SweepInputSchema, rawInput ?? {}, null, 'sweeper input');
  const carried = carriedAtDoor(rawCarried, workflowInfo(), Date.now());
  const dryRun = input.dryRun ?? false;
  const checkedAt = carried?.checkedAt ?? new Date().toISOString();
  // Hosts first, then their runs: a host listed here was made by a run that already existed when we look it up.
  const hosts = await sweepCalls.listManagedHosts();
  const runIds = runsToCheck(hosts, checkedAt);
  const runs = runIds.length ? await sweepCalls.describeRuns({ runIds }) : {};
  const plan = planSweep(hosts, runs, checkedAt);
  const report: SweepReport = { dryRun, checkedAt, removed: [...(carried?.removed ?? [])], kept: plan.keep, failed: [...(carried?.failed ?? [])] };
  setCurrentDetails(`${dryRun ? 'Dry run: would remove' : 'Removing'} ${plan.remove.length} of ${hosts.length} hosts`);
  if (dryRun) return { ...report, removed: plan.remove };

  const failedBefore = new Set(report.failed.map((f) => f.hostId));
  const todo = plan.remove.filter((h) => !failedBefore.has(h.hostId));
  await forEachBounded(todo.slice(0, REMOVALS_PER_EXECUTION), PARALLEL_TEARDOWNS, async (host) => {
    try {
      if (host.kind === 'backup-store') await sweepCalls.removeBackupFolder({ folder: host.resources[0], sweptRun: host.runId });
      else await sweepCalls.teardownHost({ provider: host.provider, hostId: host.hostId, sweptRun: host.runId });
      report.removed.push(host);
    } catch (err) {
      report.failed.push({ ...host, error: failureMessage(err) });
    }
  });
  if (todo.length > REMOVALS_PER_EXECUTION) await continueAsNew<typeof sweeperWorkflow>(input, report);
  // Data sets past dataSets.keepDays, in the lab's default folder store and every S3 store the lab claimed a set in
  // (a spec's sub-folder store: datasets rm).
  if (patched(SWEEP_DATA_SETS_PATCH))
    await sweepCalls
      .removeExpiredDataSets({ store: { kind: 'folder' }, recordedS3Stores: true })
      .then((removed) => (report.dataSetsRemoved = removed))
      .catch((err) => (report.dataSetsFailed = failureMessage(err)));
  setCurrentDetails(`Removed ${report.removed.length} hosts, ${report.failed.length} failed, ${report.kept.length} kept`);
  return report;
}
