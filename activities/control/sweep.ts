/**
 * The sweeper's control activities: every host each configured provider manages, and the state of the runs that
 * made them on this Temporal namespace. The decision itself is pure (common/core/sweep.ts), in the workflow.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import path from 'node:path';
import type { RunState, SweepCandidate } from '../../common/core/sweep';
import { LabPathError, removeLabFile, removeLabTree } from '../../lib/lab-fs';
import { backupsDirFor } from '../../lib/lab-paths';
import { backupLabelFile, listBackupFolders } from '../../lib/backup-stores';
import { ownedByAnotherRun } from '../../lib/claims';
import type { ConfiguredProviders } from './types';

export interface SweepDeps {
  providers: ConfiguredProviders;
  client?: Client;
  /** The local hosts folder; runs' local backup stores sit beside it. */
  hostsDir: string;
}

export function createSweepActivities(deps: SweepDeps) {
  return {
    /**
     * Hosts of every configured provider (local folders and cgroups; EC2 instances and volumes) and the local backup
     * stores; for a folder without an owner record, when it was made and when the oldest run still open started
     * (looked up after the listing, so a run that made a listed folder is among the open runs or has closed).
     */
    async listManagedHosts(): Promise<SweepCandidate[]> {
      const out: SweepCandidate[] = [];
      const madeAt = new Map<SweepCandidate, string>();
      for (const provider of Object.values(deps.providers)) {
        if (!provider) continue;
        for (const { madeAt: made, ...h } of await provider.list()) {
          const c: SweepCandidate = { provider: provider.name, ...h };
          out.push(c);
          if (made && !h.runId) madeAt.set(c, made);
        }
      }
      for (const { path: folder, label, madeAt: made } of listBackupFolders(deps.hostsDir)) {
        const c: SweepCandidate = {
          kind: 'backup-store',
          provider: 'local',
          hostId: `backups/${path.basename(folder)}`,
          runId: label?.runId ?? '',
          keep: label?.keep ?? false,
          expiresAt: null,
          resources: [folder],
        };
        out.push(c);
        if (made) madeAt.set(c, made);
      }
      if (madeAt.size) {
        const oldest = await oldestOpenRun(deps.client);
        for (const [c, made] of madeAt) c.ownerless = { madeAt: made, oldestOpenRunStartedAt: oldest };
      }
      return out;
    },

    /**
     * Deletes a local backup store the sweeper found orphaned (and its label): only a folder of the backups folder,
     * and only while its label still names the run the sweeper judged (none, for a folder without one).
     */
    async removeBackupFolder(input: { folder: string; sweptRun?: string }): Promise<void> {
      const base = backupsDirFor(deps.hostsDir);
      if (path.dirname(path.resolve(input.folder)) !== base)
        throw new LabPathError(`refused to remove ${input.folder}: not a backup store of the lab's backups folder ${base}`);
      const known = listBackupFolders(deps.hostsDir).find((b) => b.path === input.folder);
      if (!known) return; // Already gone, or not a lab backup folder: never delete anything else.
      const runId = known.label?.runId ?? '';
      if (input.sweptRun !== undefined && runId !== input.sweptRun)
        throw ownedByAnotherRun(`the backup store ${input.folder} now belongs to run ${JSON.stringify(runId)}, not to run ${JSON.stringify(input.sweptRun)} that the sweeper judged; not removed`);
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

/**
 * When the oldest workflow still open in the namespace started (null: none open). Any error fails the listing: a
 * folder without an owner record is never removed because a lookup failed.
 */
async function oldestOpenRun(client: Client | undefined): Promise<string | null> {
  if (!client) throw new Error('the sweeper needs a Temporal client in the control activities (ControlDeps.client)');
  let oldest: number | null = null;
  for await (const wf of client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
    const at = wf.startTime.getTime();
    if (oldest === null || at < oldest) oldest = at;
  }
  return oldest === null ? null : new Date(oldest).toISOString();
}
