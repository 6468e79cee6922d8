/**
 * Who may act on a resource the lab names from a run (a host, a backup store): the owner record its first activity
 * writes atomically (lib/claims.ts), and the check every later activity on it makes. Pure, shared by workflows
 * (which say who they are) and activities (which compare). docs/threat-model.md lists every resource with its claim.
 */

/**
 * The workflow that acts for a run on its resources: its workflow id, and the run id of its first execution (the same
 * across continue-as-new and retries, so a failover drill's later executions keep their hosts; a new run under a
 * closed run's workflow id is another owner). Workflows take it from workflowInfo(), never from their input.
 */
export interface Claimant {
  workflowId: string;
  execution: string;
}

/** What a resource's owner record says: who made it, for which run, and what it is. */
export interface OwnerRecord extends Claimant {
  kind: 'host' | 'backup-store' | 'data-set';
  /** The host id, or the backup store's location. */
  resource: string;
  /** The run the resource is named after (the experiment's id for its clusters' hosts). */
  runId: string;
  /** A host's storage class (or a drill's role) and index. */
  className?: string;
  index?: number;
  claimedAt: string;
}

/** Whether the claimant is the record's owner. */
export function ownedBy(record: Pick<OwnerRecord, 'workflowId' | 'execution'>, claimant: Claimant): boolean {
  return record.workflowId === claimant.workflowId && record.execution === claimant.execution;
}

/** A claimant in words, for messages. */
export function describeClaimant(c: Claimant & { runId?: string }): string {
  return `${c.runId !== undefined && c.runId !== c.workflowId ? `run ${JSON.stringify(c.runId)}, ` : ''}workflow ${JSON.stringify(c.workflowId)} (execution ${c.execution})`;
}

/** The refusal of a claimant on another run's resource: both runs named, and why nothing was touched. */
export function ownerRefusal(what: string, record: OwnerRecord, claimant: Claimant & { runId?: string }, action: string): string {
  return (
    `${what} belongs to ${describeClaimant(record)}, claimed at ${record.claimedAt}; ${describeClaimant(claimant)} may not ${action} it: refused, nothing of it touched. ` +
    'Two runs never share a resource: start the run under another workflow id'
  );
}

/** The index of a host id `<tag>-<class>-<index>`, or undefined when it has none. */
export function hostIndexOf(hostId: string): number | undefined {
  const m = /-(\d+)$/.exec(hostId);
  return m ? Number(m[1]) : undefined;
}
