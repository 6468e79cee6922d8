/**
 * The sweeper's control activities: every host each configured provider manages, and the state of the runs that
 * made them on this Temporal namespace. The decision itself is pure (common/core/sweep.ts), in the workflow.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import path from 'node:path';
import type { RunState, SweepCandidate } from '../../common/core/sweep';
import { LabPathError, removeLabFile, removeLabTree } from '../../lib/lab-fs';
import { backupsDirFor } from '../../lib/lab-paths';
import type { HostProvider } from '../../infra/providers/host-provider';
import { backupLabelFile, listBackupFolders } from '../../lib/backup-stores';

export interface SweepDeps {
  providers: { local: HostProvider; aws?: HostProvider };
  client?: Client;
  /** The local hosts folder; runs' local backup stores sit beside it. */
  hostsDir: string;
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
      for (const { path: folder, label } of listBackupFolders(deps.hostsDir))
        out.push({
          kind: 'backup-store',
          provider: 'local',
          hostId: `backups/${path.basename(folder)}`,
          runId: label.runId,
          keep: label.keep,
          expiresAt: null,
          resources: [folder],
        });
      return out;
    },

    /** Deletes a local backup store the sweeper found orphaned (and its label): only a folder of the backups folder. */
    async removeBackupFolder(input: { folder: string }): Promise<void> {
      const base = backupsDirFor(deps.hostsDir);
      if (path.dirname(path.resolve(input.folder)) !== base)
        throw new LabPathError(`refused to remove ${input.folder}: not a backup store of the lab's backups folder ${base}`);
      const known = listBackupFolders(deps.hostsDir).some((b) => b.path === input.folder);
      if (!known) return; // Already gone, or not a lab backup folder: never delete anything else.
      await removeLabTree(input.folder);
      removeLabFile(backupLabelFile(input.folder));
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
