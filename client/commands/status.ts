/** storage-lab status RUN and watch RUN. */
import { WorkflowFailedError } from '@temporalio/client';
import { connectClient, workflowUrl } from '../connection';
import { UserError, workflowFailure } from '../errors';

/** Statuses of a run that ended without its result. */
const ENDED_BADLY = new Set(['FAILED', 'TIMED_OUT', 'TERMINATED', 'CANCELLED']);
import { describeStep, readProgress, watchWorkflow } from '../progress-view';

export async function statusCommand(runId: string): Promise<void> {
  const lab = await connectClient();
  try {
    const handle = lab.client.workflow.getHandle(runId);
    const description = await handle.describe().catch(() => {
      throw new UserError(`no run ${runId} on ${lab.address} (namespace ${lab.namespace})`);
    });
    console.log(`${runId}: ${description.status.name} (started ${description.startTime.toISOString()})`);
    console.log(`  UI: ${workflowUrl(lab.namespace, runId)}`);
    const progress = await readProgress(lab.client, runId);
    if (progress) {
      console.log(`  ${progress.stage}: ${progress.percent} %`);
      for (const c of Object.values(progress.clusters)) {
        const since = c.steps?.at(-1)?.at ?? c.at;
        console.log(`  ${c.hostId.padEnd(22)} ${String(progress.hostPercent[c.hostId] ?? 0).padStart(5)} %  ${describeStep(c)} (since ${since})`);
      }
      for (const f of progress.failures) console.log(`  failure: ${f}`);
    }
    for (const a of description.raw.pendingActivities ?? [])
      console.log(`  pending activity ${a.activityType?.name} attempt ${a.attempt}${a.lastFailure ? `, last failure: ${a.lastFailure.message}` : ''}`);
    // A run that ended badly says why, also when it ended before any cluster reported (a preflight's refusal).
    if (ENDED_BADLY.has(description.status.name)) {
      const why = await handle.result().then(
        () => null,
        (err: unknown) => (err instanceof WorkflowFailedError ? workflowFailure(err) : err instanceof Error ? err.message : String(err)),
      );
      if (why) console.log(`  why: ${why}`);
    }
  } finally {
    await lab.close();
  }
}

export async function watchCommand(runId: string): Promise<void> {
  const lab = await connectClient();
  try {
    const result = await watchWorkflow(lab.client, lab.client.workflow.getHandle(runId));
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await lab.close();
  }
}
