/**
 * Who a workflow is, as the owner records of the hosts and stores it makes name it (common/core/claims.ts): its own
 * workflow id and its first execution's run id, from the server's info, never from its input.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { Claimant } from '../common/core/claims';

/** This workflow as a claimant: the same in every execution of a continued run (a failover drill keeps its hosts). */
export function currentClaimant(): Claimant {
  const info = workflowInfo();
  return { workflowId: info.workflowId, execution: info.firstExecutionRunId };
}
