/**
 * Durability for an experiment cluster (spec.durability.enabled): once the data is loaded, WAL archiving through
 * the backup tool (archive_command, archive_timeout from the spec) and a full base backup, so the measured runs
 * that follow pay what a durable production cluster pays. The backups go to the cluster's own prefix of the
 * spec's backup store, removed after the host (the cluster registers its undo).
 */
import type { BackupInfo, BackupToolRun } from '../common/results/drill-result';
import { backupStoreLocation } from '../common/input/backup-store';
import { labPostgresSettings, userPostgresSettings } from '../common/input/postgres-settings';
import type { ExperimentSpec } from '../common/input/spec';
import { currentClaimant } from './owner';
import { providerCalls, type HostCalls } from './proxies';

export interface ClusterDurability {
  backupStore: string;
  /** The tool that archives the WAL and took the backup, as it names itself. */
  backupTool: BackupToolRun;
  archiveTimeoutSeconds: number;
  backup: BackupInfo;
}

/** Turns archiving on (a restart when archive_mode changes) and takes the base backup; `storeKey` names the prefix. */
export async function archiveAndBackUp(
  host: HostCalls,
  hostId: string,
  storeKey: string,
  spec: ExperimentSpec,
): Promise<ClusterDurability> {
  const { archiveTimeoutSeconds, backupStore, tool, compression } = spec.durability;
  const store = await providerCalls.prepareBackupStore({ runId: storeKey, store: backupStore, owner: currentClaimant() });
  const archiving = await host.setup.configureBackups({ hostId, store, tool, compression });
  // The host writes archive_command itself, from the tool it just configured; the measured steps' settings stay.
  await host.setup.configurePostgres.executeWithOptions({ summary: `archive WAL with ${archiving.tool} ${archiving.version} (archive_timeout ${archiveTimeoutSeconds} s)` }, [
    { hostId, server: labPostgresSettings(spec), user: userPostgresSettings(spec.postgres.settings), archiving: { archiveTimeoutSeconds } },
  ]);
  await host.setup.initBackupRepository({ hostId, store, tool });
  const backup = await host.setup.takeBackup.executeWithOptions({ summary: `full base backup to ${backupStoreLocation(store)} with ${tool}` }, [
    { hostId, store, tool, kind: 'full' },
  ]);
  return { backupStore: backupStoreLocation(store), backupTool: { name: archiving.tool, version: archiving.version }, archiveTimeoutSeconds, backup };
}
