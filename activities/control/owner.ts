/**
 * Who a control activity acts for: the owner a workflow names (workflowInfo(), never its input), checked against the
 * workflow the server says scheduled the activity; or the sweeper, for the run it judged.
 */
import { Context } from '@temporalio/activity';
import type { Claimant } from '../../common/core/claims';
import type { HostActor } from '../../common/core/hosts';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { ownedByAnotherRun } from '../../lib/claims';

/** The workflow that scheduled the running activity, as the server says; null outside an activity (tests). */
function caller(): { workflowId: string; workflowType?: string } | null {
  try {
    const info = Context.current().info;
    return info.workflowExecution ? { workflowId: info.workflowExecution.workflowId, workflowType: info.workflowType } : null;
  } catch {
    return null;
  }
}

/** The owner an activity's input names, refused when the workflow that scheduled it is another. */
export function checkedClaimant(owner: Claimant | undefined): Claimant | undefined {
  const c = caller();
  if (owner && c && c.workflowId !== owner.workflowId)
    throw ownedByAnotherRun(`an activity of workflow ${JSON.stringify(c.workflowId)} named workflow ${JSON.stringify(owner.workflowId)} as the owner it acts for: refused`);
  return owner;
}

/** Who acts on a host: its owner (checked), the sweeper (only the sweeper workflow sweeps), or nobody named (older requests). */
export function hostActor(input: { owner?: Claimant; sweptRun?: string }): HostActor | undefined {
  if (input.sweptRun !== undefined) {
    const c = caller();
    if (c && c.workflowType !== WORKFLOW_TYPES.sweeper)
      throw ownedByAnotherRun(`workflow ${JSON.stringify(c.workflowId)} (${c.workflowType}) asked to remove a host as the sweeper: refused`);
    return { sweptRun: input.sweptRun };
  }
  const owner = checkedClaimant(input.owner);
  return owner ? { owner } : undefined;
}
