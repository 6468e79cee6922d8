/**
 * The host activities of the durability drills (and of experiments that archive WAL): backups through the backup
 * tool, the restore drill's writes and checks, replication and the failover drill's writer. Merged into the host
 * agent's activities by createHostActivities.
 */
import type { RecoveryTarget } from '../../common/input/backup-store';
import type { HostDeps, HostInput } from './deps';
import type { BackupCompression, BackupKind } from '../../common/input/backup-store';
import {
  checkArchive,
  checkRepository,
  configureBackups,
  initBackupRepository,
  recoverFromBackup,
  removeArchivedSegment,
  restoreBackup,
  takeBackup,
  type BackupStoreInput,
  type RecoverInput,
} from './backup';
import { archiveCurrentSegment, markTarget, verifyRestore, waitForArchive, writeHistory, type VerifyRestoreInput, type WriteHistoryInput } from './restore-drill';
import { countLostCommits, createFailoverLedger, probeOldPrimary, runFailoverWriter, type CutWindow, type DrillNode, type WriterInput } from './failover-writer';
import {
  cloneStandby,
  promoteStandby,
  rejoinAsStandby,
  setReplication,
  standbyPosition,
  waitForStandbys,
  type PeerAddress,
  type ReplicationSettings,
} from './replication';
import type { RestoreTarget } from '../../common/results/drill-result';
import { checkClusterAfterPowerCut, countAfterPowerCut, recoverAfterPowerCut } from './power-cut';

export function createDrillHostActivities(deps: HostDeps) {
  return {
    configureBackups: (input: BackupStoreInput & { compression?: BackupCompression }) => configureBackups(deps, input),
    initBackupRepository: (input: BackupStoreInput) => initBackupRepository(deps, input),
    takeBackup: (input: BackupStoreInput & { kind?: BackupKind }) => takeBackup(deps, input),
    restoreBackup: (input: BackupStoreInput & { target: RecoveryTarget }) => restoreBackup(deps, input),
    recoverFromBackup: (input: RecoverInput) => recoverFromBackup(deps, input),
    checkArchive: (input: BackupStoreInput & { from: string; to: string }) => checkArchive(deps, input),
    checkRepository: (input: BackupStoreInput & { throughSegment: string }) => checkRepository(deps, input),
    removeArchivedSegment: (input: BackupStoreInput & { after: string; upTo: string }) => removeArchivedSegment(deps, input),
    writeHistory: (input: WriteHistoryInput) => writeHistory(deps, input),
    markTarget: (input: HostInput & { type: RestoreTarget['type']; tables: string[] }) => markTarget(deps, input),
    archiveCurrentSegment: (input: HostInput & { timeoutSeconds: number }) => archiveCurrentSegment(deps, input),
    waitForArchive: (input: HostInput & { lsn: string; timeoutSeconds: number }) => waitForArchive(deps, input),
    verifyRestore: (input: VerifyRestoreInput) => verifyRestore(deps, input),
    cloneStandby: (input: HostInput & { primary: PeerAddress; node: string }) => cloneStandby(deps, input),
    setReplication: (input: HostInput & ReplicationSettings) => setReplication(deps, input),
    standbyPosition: (input: HostInput) => standbyPosition(deps, input),
    promoteStandby: (input: HostInput) => promoteStandby(deps, input),
    rejoinAsStandby: (input: HostInput & { primary: PeerAddress; node: string }) => rejoinAsStandby(deps, input),
    waitForStandbys: (input: HostInput & { nodes: string[]; sync: boolean; timeoutSeconds: number }) => waitForStandbys(deps, input),
    createFailoverLedger: (input: HostInput) => createFailoverLedger(deps, input),
    runFailoverWriter: (input: WriterInput) => runFailoverWriter(deps, input),
    countLostCommits: (input: HostInput & { primary: PeerAddress; rounds: number[]; afterCut?: CutWindow }) => countLostCommits(deps, input),
    probeOldPrimary: (input: HostInput & { node: DrillNode; round: number; id: number; waitSeconds: number }) => probeOldPrimary(deps, input),
    recoverAfterPowerCut: (input: HostInput & { timeoutSeconds: number }) => recoverAfterPowerCut(deps, input),
    checkClusterAfterPowerCut: (input: HostInput & { timeoutSeconds: number }) => checkClusterAfterPowerCut(deps, input),
    countAfterPowerCut: (input: HostInput & { primary: PeerAddress; rounds: number[] }) => countAfterPowerCut(deps, input),
  };
}
