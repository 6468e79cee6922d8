/** storage-lab sweep: runs the sweeper workflow on the control worker and prints what it removed (or would). */
import { WORKFLOW_TYPES } from '../../common/core/names';
import type { SweepDecision } from '../../common/core/sweep';
import type { SweepReport } from '../../common/core/sweep';
import { controlTaskQueue } from '../../worker/env';
import { connectClient, workflowUrl } from '../connection';
import { timestampedId } from '../spec-input';

export interface SweepFlags {
  dryRun?: boolean;
}

export async function sweepCommand(flags: SweepFlags): Promise<SweepReport> {
  const lab = await connectClient();
  try {
    const workflowId = timestampedId('sweep');
    const handle = await lab.client.workflow.start(WORKFLOW_TYPES.sweeper, {
      taskQueue: controlTaskQueue(),
      workflowId,
      args: [{ dryRun: Boolean(flags.dryRun) }],
      workflowExecutionTimeout: '2 hours',
    });
    console.log(`Started ${workflowId} (waits for the control worker)\n  UI: ${workflowUrl(lab.namespace, workflowId)}`);
    const report = (await handle.result()) as SweepReport;
    printSweepReport(report);
    if (report.failed.length) process.exitCode = 1;
    return report;
  } finally {
    await lab.close();
  }
}

export function printSweepReport(report: SweepReport): void {
  const row = (h: SweepDecision) => `  ${h.provider.padEnd(5)} ${h.hostId.padEnd(28)} ${h.reason} [${h.resources.join(', ')}]`;
  const hosts = report.removed.filter((r) => r.kind !== 'backup-store');
  const stores = report.removed.filter((r) => r.kind === 'backup-store');
  console.log(report.dryRun ? `\nWould remove ${hosts.length} hosts (dry run):` : `\nRemoved ${hosts.length} hosts:`);
  for (const h of hosts) console.log(row(h));
  if (stores.length) {
    console.log(report.dryRun ? `Would remove ${stores.length} backup stores:` : `Removed ${stores.length} backup stores:`);
    for (const s of stores) console.log(row(s));
  }
  if (report.failed.length) {
    console.log(`Failed to remove ${report.failed.length} (the next sweep tries again):`);
    for (const h of report.failed) console.log(`${row(h)}\n    ${h.error.split('\n')[0]}`);
  }
  console.log(`Kept ${report.kept.length}:`);
  for (const h of report.kept) console.log(row(h));
}
