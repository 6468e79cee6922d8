/**
 * storage-lab schedule create|list|pause|unpause|trigger|delete: Temporal Schedules that start lab workflows
 * (nightly regressions, experiments, drills, the sweeper). The server keeps the calendar; the worker has no cron.
 * Overlap policy SKIP: a night whose previous run is still going is skipped, never stacked.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleExecutionActionResult,
} from '@temporalio/client';
import { checkDrillWithTools, checkExperimentWithTools } from '../../lib/spec-checks';
import { resolveFailoverDrill, resolvePartitionDrill, resolvePowerCutDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { formatSpecProblems } from '../../common/core/errors';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { NIGHTLY_PRESET, verdictOptionProblems } from '../../common/input/regression-options';
import { controlTaskQueue } from '../../worker/env';
import { connectClient, workflowUrl, type LabClient } from '../connection';
import { resolveDiagnoseInput } from '../../common/input/diagnose';
import { UserError } from '../errors';
import { printTable } from '../table';
import { buildInput, refuseToolProblems, resolveOrUserError, validateInput, type SpecFlags } from '../spec-input';

/** Workflows a schedule can start, by the name the CLI takes. */
export const SCHEDULABLE_WORKFLOWS = {
  nightly: WORKFLOW_TYPES.nightlyRegression,
  experiment: WORKFLOW_TYPES.experiment,
  'restore-drill': WORKFLOW_TYPES.restoreDrill,
  'failover-drill': WORKFLOW_TYPES.failoverDrill,
  'partition-drill': WORKFLOW_TYPES.partitionDrill,
  'power-cut-drill': WORKFLOW_TYPES.powerCutDrill,
  sweep: WORKFLOW_TYPES.sweeper,
  diagnose: WORKFLOW_TYPES.diagnose,
} as const;
export type SchedulableWorkflow = keyof typeof SCHEDULABLE_WORKFLOWS;

/** How long a missed action (server down at 02:00) may still be taken late. */
const CATCHUP_WINDOW = '1 hour';

export interface ScheduleCreateFlags extends SpecFlags {
  cron: string;
  workflow: string;
  note?: string;
  paused?: boolean;
}

/**
 * What a schedule of `workflow` starts: the workflow type and its one input object, checked where we can (the
 * spec's rules, then the real tools on this machine), so a schedule never fires a run that is refused at once.
 */
export async function scheduledAction(flags: ScheduleCreateFlags): Promise<{ workflowType: string; input: Record<string, unknown> }> {
  const names = Object.keys(SCHEDULABLE_WORKFLOWS);
  if (!names.includes(flags.workflow))
    throw new UserError(`--workflow ${flags.workflow}: unknown; use one of: ${names.join(', ')}`);
  const workflow = flags.workflow as SchedulableWorkflow;
  const input = buildInput(flags);
  if (workflow === 'nightly') {
    const { regression, ...experiment } = input;
    const spec = validateInput({ preset: NIGHTLY_PRESET, ...experiment });
    const problems = verdictOptionProblems(regression);
    if (problems.length) throw new UserError(formatSpecProblems(problems));
    await refuseToolProblems(checkExperimentWithTools(spec, 'cli'));
  } else if (workflow === 'experiment') {
    await refuseToolProblems(checkExperimentWithTools(validateInput(input), 'cli'));
  } else if (workflow === 'restore-drill' || workflow === 'failover-drill' || workflow === 'partition-drill' || workflow === 'power-cut-drill') {
    const resolve = { 'restore-drill': resolveRestoreDrill, 'failover-drill': resolveFailoverDrill, 'partition-drill': resolvePartitionDrill, 'power-cut-drill': resolvePowerCutDrill }[workflow];
    const spec = resolveOrUserError(() => resolve(input));
    await refuseToolProblems(checkDrillWithTools(spec, 'cli'), `${workflow.replace('-', ' ')} spec`);
  } else if (workflow === 'diagnose') {
    // The workflow's own rules (a password would sit in the schedule's action for anyone who can read it).
    resolveOrUserError(() => resolveDiagnoseInput(input));
  }
  return { workflowType: SCHEDULABLE_WORKFLOWS[workflow], input };
}

/** Schedule ids name the runs they start (<id>-<time>), so they follow the same rules as run names. */
export function checkScheduleName(name: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name))
    throw new UserError(`schedule name "${name}": use letters, digits, dots, dashes and underscores (max 63), e.g. nightly-gp3`);
}

async function withLab<T>(fn: (lab: LabClient) => Promise<T>): Promise<T> {
  const lab = await connectClient();
  try {
    return await fn(lab);
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) throw new UserError(`no schedule "${err.scheduleId}" on ${lab.address} (namespace ${lab.namespace}); see "storage-lab schedule list"`);
    throw err;
  } finally {
    await lab.close();
  }
}

export async function scheduleCreateCommand(name: string, flags: ScheduleCreateFlags): Promise<void> {
  checkScheduleName(name);
  const { workflowType, input } = await scheduledAction(flags);
  await withLab(async (lab) => {
    try {
      await lab.client.schedule.create({
        scheduleId: name,
        spec: { cronExpressions: [flags.cron] },
        action: { type: 'startWorkflow', workflowType, taskQueue: controlTaskQueue(), workflowId: name, args: [input] },
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW },
        // The cron as typed: the server keeps only its parsed calendar.
        memo: { cron: flags.cron, workflow: flags.workflow },
        state: { paused: Boolean(flags.paused), note: flags.note },
      });
    } catch (err) {
      if (err instanceof ScheduleAlreadyRunning)
        throw new UserError(`schedule "${name}" exists; delete it first ("storage-lab schedule delete ${name}") or pick another name`);
      // The SDK turns the server's InvalidArgument into a TypeError; the input was checked above, so it is the cron.
      if (err instanceof TypeError) throw new UserError(`--cron '${flags.cron}': the server rejected it: ${err.message}`);
      throw err;
    }
    const description = await lab.client.schedule.getHandle(name).describe();
    console.log(`Created schedule ${name}: ${flags.workflow} (${workflowType}) at '${flags.cron}' (UTC), overlap policy SKIP`);
    console.log(`  input: ${JSON.stringify(input)}`);
    const next = description.info.nextActionTimes[0];
    if (next) console.log(`  next run: ${next.toISOString()}${flags.paused ? ' (paused)' : ''}`);
  });
}

export async function scheduleListCommand(): Promise<void> {
  await withLab(async (lab) => {
    const rows: string[][] = [];
    for await (const listed of lab.client.schedule.list()) {
      // The list comes from the visibility store, which lags the schedule by seconds (a run just triggered is
      // missing from its recent actions); describe() reads the schedule itself.
      const s = await lab.client.schedule.getHandle(listed.scheduleId).describe().catch((err: unknown) => {
        if (err instanceof ScheduleNotFoundError) return undefined; // deleted since it was listed
        throw err;
      });
      if (!s) continue;
      const memo = s.memo as { cron?: string; workflow?: string } | undefined;
      const last = s.info.recentActions.at(-1);
      rows.push([
        s.scheduleId,
        memo?.workflow ?? (s.action?.type === 'startWorkflow' ? s.action.workflowType : '?'),
        memo?.cron ?? '(not made by storage-lab)',
        s.state.paused ? `paused${s.state.note ? `: ${s.state.note}` : ''}` : 'active',
        s.info.nextActionTimes[0]?.toISOString() ?? '–',
        last ? `${last.action.workflow.workflowId} at ${last.takenAt.toISOString()}` : '–',
      ]);
    }
    if (rows.length === 0) {
      console.log(`no schedules in namespace ${lab.namespace}; create one with "storage-lab schedule create NAME --cron '0 2 * * *' --preset nightly"`);
      return;
    }
    printTable(['NAME', 'WORKFLOW', 'CRON (UTC)', 'STATE', 'NEXT RUN', 'LAST RUN'], rows);
  });
}

export async function schedulePauseCommand(name: string, opts: { note?: string }): Promise<void> {
  await withLab(async (lab) => {
    await lab.client.schedule.getHandle(name).pause(opts.note ?? 'paused with storage-lab schedule pause');
    console.log(`paused schedule ${name}`);
  });
}

export async function scheduleUnpauseCommand(name: string, opts: { note?: string }): Promise<void> {
  await withLab(async (lab) => {
    await lab.client.schedule.getHandle(name).unpause(opts.note ?? 'unpaused with storage-lab schedule unpause');
    console.log(`unpaused schedule ${name}`);
  });
}

export async function scheduleDeleteCommand(name: string): Promise<void> {
  await withLab(async (lab) => {
    await lab.client.schedule.getHandle(name).delete();
    console.log(`deleted schedule ${name} (runs it started are not touched)`);
  });
}

/** Starts a run now (with the schedule's SKIP policy) and prints it; says so when a run was still going. */
export async function scheduleTriggerCommand(name: string): Promise<string | null> {
  return withLab(async (lab) => {
    const handle = lab.client.schedule.getHandle(name);
    const before = await handle.describe();
    const seen = new Set(before.info.recentActions.map((a) => a.action.workflow.workflowId));
    await handle.trigger(ScheduleOverlapPolicy.SKIP);
    // The server takes the action asynchronously: wait for it to show up.
    for (let i = 0; i < 50; i++) {
      const now = await handle.describe();
      const started = now.info.recentActions.find((a) => !seen.has(a.action.workflow.workflowId));
      if (started) {
        const id = started.action.workflow.workflowId;
        console.log(`Started ${id}\n  UI: ${workflowUrl(lab.namespace, id)}\n  follow it with: storage-lab status ${id}`);
        return id;
      }
      if (now.info.numActionsSkippedOverlap > before.info.numActionsSkippedOverlap) {
        console.log(`Skipped: schedule ${name} still has a run going (${running(now.info.runningActions)}); overlap policy SKIP`);
        return null;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`schedule ${name} was triggered but no run showed up within 10 s; see "storage-lab schedule list"`);
  });
}

function running(actions: ScheduleExecutionActionResult[]): string {
  return actions.map((a) => a.workflow.workflowId).join(', ') || 'none listed';
}
