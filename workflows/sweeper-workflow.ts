/**
 * The sweeper: removes lab resources that no workflow will ever tear down: hosts whose run has closed (a terminated
 * workflow runs no compensation), is unknown to this namespace, or has outlived its expiry. A host whose run is
 * running and not expired is never touched. With dryRun it only reports what it would remove.
 */
import { continueAsNew, setCurrentDetails } from '@temporalio/workflow';
import { planSweep, runsToCheck, type SweepDecision } from '../common/sweep';
import { forEachBounded } from './experiment-workflow';
import { failureMessage } from './failures';
import { sweepCalls } from './proxies';

export interface SweepInput {
  /** Report what would be removed; remove nothing. */
  dryRun?: boolean;
}

export interface SweepReport {
  dryRun: boolean;
  checkedAt: string;
  /** Removed (or, in a dry run, to be removed), with the reason. */
  removed: SweepDecision[];
  kept: SweepDecision[];
  /** Hosts whose removal failed; the next sweep tries them again. */
  failed: (SweepDecision & { error: string })[];
}

/** Teardowns at once: a few, so a large leak is cleared quickly without a burst of API calls. */
const PARALLEL_TEARDOWNS = 4;
/**
 * Removals per workflow execution: a sweep of a large leak continues as new after this many (each removal costs a
 * few history events), carrying what it did so far and the hosts it could not remove, so they are not tried again.
 */
export const REMOVALS_PER_EXECUTION = 100;

export async function sweeperWorkflow(input: SweepInput = {}, carried?: SweepReport): Promise<SweepReport> {
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
      if (host.kind === 'backup-store') await sweepCalls.removeBackupFolder({ folder: host.resources[0] });
      else await sweepCalls.teardownHost({ provider: host.provider, hostId: host.hostId });
      report.removed.push(host);
    } catch (err) {
      report.failed.push({ ...host, error: failureMessage(err) });
    }
  });
  if (todo.length > REMOVALS_PER_EXECUTION) await continueAsNew<typeof sweeperWorkflow>(input, report);
  setCurrentDetails(`Removed ${report.removed.length} hosts, ${report.failed.length} failed, ${report.kept.length} kept`);
  return report;
}
