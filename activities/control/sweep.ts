/**
 * The sweeper's control activities: every host each configured provider manages, and the state of the runs that
 * made them on this Temporal namespace. The decision itself is pure (common/sweep.ts), in the workflow.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { RunState, SweepCandidate } from '../../common/sweep';
import type { HostProvider } from '../../infra/providers/host-provider';

export interface SweepDeps {
  providers: { local: HostProvider; aws?: HostProvider };
  client?: Client;
}

export function createSweepActivities(deps: SweepDeps) {
  return {
    /** Hosts of every configured provider (local folders and cgroups; EC2 instances and volumes). */
    async listManagedHosts(): Promise<SweepCandidate[]> {
      const out: SweepCandidate[] = [];
      for (const provider of Object.values(deps.providers)) {
        if (!provider) continue;
        for (const h of await provider.list()) out.push({ provider: provider.name, ...h });
      }
      return out;
    },

    /**
     * Whether each run (the workflow id that made a host) is running, closed or unknown here. Any other error
     * fails the activity: the sweeper never removes a host because a lookup failed.
     */
    async describeRuns(input: { runIds: string[] }): Promise<Record<string, RunState>> {
      const client = deps.client;
      if (!client) throw new Error('the sweeper needs a Temporal client in the control activities (ControlDeps.client)');
      const states: Record<string, RunState> = {};
      for (const runId of input.runIds) {
        try {
          const d = await client.workflow.getHandle(runId).describe();
          states[runId] = d.status.name === 'RUNNING' ? 'running' : 'closed';
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
          states[runId] = 'unknown';
        }
      }
      return states;
    },
  };
}
