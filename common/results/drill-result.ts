/**
 * What a durability drill measured: the restore drill's RTO split, RPO and verification outcomes, and the failover
 * drill's write downtime and lost acknowledged commits per round. Saved as the drill's result.json (versioned) and
 * rendered into its report. Every figure here was measured by the drill.
 */
import type { BackupToolName } from '../input/backup-store';
import type { FailoverDrillSpec, PartitionDrillSpec, PowerCutDrillSpec, RestoreDrillSpec } from '../input/drill-spec';
import type { NetworkCutRecord, NetworkHealRecord, PowerCutRecord } from '../core/hosts';

export const DRILL_RESULT_SCHEMA_VERSION = 1;

/** A backup as the backup tool reports it. */
export interface BackupInfo {
  tool: string;
  toolVersion: string;
  label: string;
  type: string;
  startedAt: string;
  stoppedAt: string;
  /** Wall time of the backup command on the host. */
  seconds: number;
  /** Size of the database cluster that was backed up. */
  databaseBytes: number;
  /** What this backup stored in the repository, compressed (a delta: only what it added). */
  repositoryBytes: number;
  startLsn: string;
  stopLsn: string;
  /** First and last WAL segment the backup needs. */
  walStart: string;
  walStop: string;
}

/** The backup tool a drill ran, as it names itself (`wal-g --version`, `pgbackrest version`). */
export interface BackupToolRun {
  name: string;
  version: string;
}

/** The archive as seen at the failure point: how far behind the commits it was (the achieved RPO). */
export interface FailurePoint {
  at: string;
  currentLsn: string;
  lastArchivedWal: string | null;
  lastArchivedAt: string | null;
  /** Every WAL byte before this LSN was archived. */
  archivedThroughLsn: string | null;
  /** WAL bytes written but not archived. */
  archiveLagBytes: number;
  /** Age of the oldest committed marker row not yet archived (0 when every marker was archived). */
  archiveLagSeconds: number;
  /** Last marker id written, and the last one whose WAL was archived. */
  lastMarkerId: number;
  lastArchivedMarkerId: number;
  archiveFailures: number;
}

/** The recovery target: between two marker rows (time, LSN) or the end of the archive (latest). */
export interface RestoreTarget {
  type: RestoreDrillSpec['target'];
  time: string | null;
  lsn: string | null;
  /** The last marker row written before the target (every row up to it must be restored, none after). */
  lastIdBefore: number;
  /** Checksums of the chosen tables at the target (null for "latest": writes ran up to the failure). */
  checksums: Record<string, TableChecksum> | null;
}

export interface TableChecksum {
  rows: number;
  /** Order-independent sum of the first 64 bits of each row's md5, as text. */
  sum: string;
}

/** Wall-clock recovery time from an empty host: fetch (copy the backup), replay (WAL to the target), promote. */
export interface RestoreRto {
  fetchSeconds: number;
  replaySeconds: number;
  promoteSeconds: number;
  totalSeconds: number;
}

/** One verification of a restore: what was checked and what was found. */
export interface VerificationOutcome {
  ok: boolean;
  detail: string;
}

export interface RestoreVerification {
  ledger: VerificationOutcome & { expectedThroughId: number; presentRows: number; maxPresentId: number; missingIds: number[]; idsAfterTarget: number };
  checksums: VerificationOutcome & { tables: Record<string, { expected: TableChecksum | null; restored: TableChecksum }> };
  amcheck: VerificationOutcome & { problems: number };
  /** The tool's repository check (backup files are null when it checks WAL only, as WAL-G's wal-verify does). */
  backupVerify: RepositoryVerification;
  archiveContinuity: VerificationOutcome & { from: string; to: string; checked: number; missing: string[] };
}

/** The tool's own check of its repository: its detail line names the tool and the command; timed on the host. */
export interface RepositoryVerification extends VerificationOutcome {
  tool: string;
  walChecked: number;
  walInvalid: number;
  backupFilesChecked: number | null;
  backupFilesInvalid: number | null;
  /** Segments the tool found missing; null when it does not look for gaps (pgBackRest's verify). */
  missingWal: string[] | null;
  /** Wall time of the check (pgbackrest verify, wal-g wal-verify). */
  seconds: number;
}

/** A tool's timed repository check as a verification: its own detail line, which names the tool and what it checked. */
export function repositoryVerification(
  tool: string,
  c: Omit<RepositoryVerification, 'tool'>,
): RepositoryVerification {
  return {
    ok: c.ok,
    detail: c.detail,
    tool,
    walChecked: c.walChecked,
    walInvalid: c.walInvalid,
    backupFilesChecked: c.backupFilesChecked,
    backupFilesInvalid: c.backupFilesInvalid,
    missingWal: c.missingWal,
    seconds: c.seconds,
  };
}

/** What every drill result starts with. */
interface DrillResultHead<Kind extends string, Spec extends { name: string; preset?: string }> {
  schemaVersion: typeof DRILL_RESULT_SCHEMA_VERSION;
  kind: Kind;
  runId: string;
  name: string;
  preset: string | null;
  status: 'passed' | 'failed' | 'cancelled';
  /** One line a person reads first: what passed, or what failed and why. */
  verdict: string;
  startedAt: string;
  finishedAt: string;
  spec: Spec;
  postgresVersion: string | null;
}

/** A drill's result before it measured anything: failed until the drill says otherwise. */
export function drillResultHead<Kind extends string, Spec extends { name: string; preset?: string }>(
  kind: Kind,
  runId: string,
  spec: Spec,
): DrillResultHead<Kind, Spec> {
  return {
    schemaVersion: DRILL_RESULT_SCHEMA_VERSION,
    kind,
    runId,
    name: spec.name,
    preset: spec.preset ?? null,
    status: 'failed',
    verdict: '',
    startedAt: new Date().toISOString(),
    finishedAt: '',
    spec,
    postgresVersion: null,
  };
}

export interface RestoreDrillResult extends DrillResultHead<'restore-drill', RestoreDrillSpec> {
  hosts: { source: string; restore: string };
  /** Where the backups and archived WAL live (a folder or an s3:// URL). */
  backupStore: string | null;
  backupTool: BackupToolRun | null;
  /** The backup restored (with backup.kind "delta", the delta). */
  backup: BackupInfo | null;
  /** With backup.kind "delta": the full backup the delta was taken from. */
  fullBackup: BackupInfo | null;
  target: RestoreTarget | null;
  failurePoint: FailurePoint | null;
  /** The segment the drill removed from the archive, when asked to (inject.missingWalSegment). */
  injectedMissingSegment: string | null;
  rto: RestoreRto | null;
  /** Achieved RPO: the archive lag at the failure point; for "latest", also the marker rows actually lost. */
  rpo: { seconds: number; bytes: number; lostMarkers: number | null; lostWindowSeconds: number | null } | null;
  /** What recovery reported: where it stopped, or the FATAL that ended it. */
  recovery: { ok: boolean; detail: string; stoppedAt: string | null; lastTransactionAt: string | null } | null;
  verification: Partial<RestoreVerification>;
  errors: string[];
}

/** A standby's WAL position when the primary died: the most advanced one is promoted. */
export interface StandbyPosition {
  hostId: string;
  node: string;
  receiveLsn: string | null;
  replayLsn: string | null;
}

/** The writer's view of one failover: acknowledged commits and the write outage around the kill. */
export interface WriterOutcome {
  acknowledged: number;
  failedWrites: number;
  /** Writes whose outcome is unknown (the connection died after COMMIT was sent). */
  inDoubt: number;
  /** Acknowledged commits by the node that acknowledged them (absent from results written before it was kept). */
  acknowledgedByNode?: Record<string, number>;
  lastAckBeforeKillAt: string | null;
  firstAckAfterAt: string | null;
  /** The node that took the writes after the failover. */
  newPrimaryNode: string | null;
  /** Write downtime seen by the client: first ack on the new primary minus last ack on the old one. */
  outageSeconds: number | null;
}

export interface FailoverRound {
  round: number;
  killedHost: string;
  killedNode: string;
  /** When the drill asked the provider to kill the host (the writer's last ack on it can come a few ms later). */
  killedAt: string;
  standbys: StandbyPosition[];
  promotedHost: string;
  promotedNode: string;
  repointedHost: string;
  promoteSeconds: number;
  writer: WriterOutcome;
  /** RTO: write downtime from the last acknowledged commit before the kill to the first one after promotion. */
  rtoSeconds: number | null;
  /** Acknowledged ids (this round and every earlier one) missing on the new primary: must be 0 under ANY 1. */
  lostCommits: number;
  lostSample: number[];
  acknowledgedTotal: number;
  /** In-doubt writes that did land on the new primary. */
  inDoubtPresent: number;
  oldPrimary: { action: 'rewound' | 'rebuilt' | 'left down'; seconds: number | null; detail: string };
  /** With the archive on: the new primary's first segment on its new timeline, archived during the round. */
  archivedOnNewTimeline?: string;
  ok: boolean;
  error?: string;
}

/** The failover drill's continuous archive: where it went, the base backup beneath it, and the tool's check after the rounds. */
export interface FailoverArchive {
  backupStore: string;
  backupTool: BackupToolRun;
  backup: BackupInfo | null;
  /** The last segment the check covers: the final primary's, after a switch that closed it. */
  throughSegment: string | null;
  /** Timelines the archive spans: 1 + one per promotion. */
  timeline: number | null;
  check: RepositoryVerification | null;
}

export interface FailoverDrillResult extends DrillResultHead<'failover-drill', FailoverDrillSpec> {
  mode: FailoverDrillSpec['mode'];
  synchronousStandbyNames: string | null;
  hosts: { client: string; nodes: Record<string, string> };
  /** Null when backup.enabled is false. */
  archive: FailoverArchive | null;
  rounds: FailoverRound[];
  summary: { rounds: number; lostCommits: number; rtoSecondsMedian: number | null; rtoSecondsMax: number | null };
  errors: string[];
}

/** The old primary after a partition: whether it was still a primary, whether it took a write, and how it came back. */
export interface FencedPrimary {
  /** synchronous_standby_names as the old primary had it when the cut was healed (what decided its commits' fate). */
  synchronousStandbyNames: string | null;
  /** Whether it still took writes (not in recovery) after the heal, and its WAL position and timeline then. */
  stillPrimary: boolean | null;
  currentLsn: string | null;
  timeline: number | null;
  /**
   * A write sent to it after the heal, from the client host: `hung` (not acknowledged within the probe's seconds: its
   * commits wait for a synchronous standby that follows another primary now), `refused` (an error, read-only),
   * `unreachable`, or `acknowledged` (it was not fenced: a split brain).
   */
  fence: { outcome: 'hung' | 'refused' | 'unreachable' | 'acknowledged'; seconds: number; detail: string };
  /** How it came back: pg_rewind, or a fresh clone when the rewind could not run; then streaming from the new primary. */
  action: 'rewound' | 'rebuilt' | 'left down';
  seconds: number | null;
  detail: string;
  streaming: boolean;
}

/** One partition: the primary cut off from its standbys, a standby promoted, what the old primary acknowledged meanwhile. */
export interface PartitionRound {
  round: number;
  isolatedHost: string;
  isolatedNode: string;
  /** The cut as the provider made it, and whether the writer was cut off the old primary too. */
  cut: NetworkCutRecord & { cutWriter: boolean };
  heal: NetworkHealRecord | null;
  /** WAL positions of the standbys when the promotion was decided (detectionSeconds after the cut). */
  standbys: StandbyPosition[];
  promotedHost: string;
  promotedNode: string;
  repointedHost: string;
  promoteSeconds: number;
  writer: WriterOutcome;
  /** RTO: from the cut to the first commit the promoted standby acknowledged. */
  rtoSeconds: number | null;
  /**
   * Commits the old primary acknowledged after the cut was in place (the writer's acknowledgement after the packet
   * filter answered). Under ANY 1 at most one per writer connection: a commit a standby confirmed just before.
   */
  acknowledgedAfterCut: number;
  /** Commits it acknowledged while the rules were being loaded (tens of ms; before or after they took effect). */
  acknowledgedWhileCutting: number;
  /** Of both, the ones the new primary does not hold: acknowledged by a primary that had been replaced (split brain). */
  splitBrainCommits: number;
  splitBrainSample: { id: number; lsn: string | null }[];
  /** The LSN of the last commit the old primary acknowledged before the cut (the writer's record), and whether the promoted standby had received it. */
  lastAckedLsnBeforeCut: string | null;
  promotedHeldLastAck: boolean | null;
  /** Acknowledged ids (this round and every earlier one) missing on the new primary: must be 0 under ANY 1. */
  lostCommits: number;
  lostSample: number[];
  acknowledgedTotal: number;
  inDoubtPresent: number;
  oldPrimary: FencedPrimary;
  archivedOnNewTimeline?: string;
  ok: boolean;
  error?: string;
}

export interface PartitionDrillResult extends DrillResultHead<'partition-drill', PartitionDrillSpec> {
  /** What the first primary's synchronous_standby_names was set to (ANY 1 of the standbys). */
  synchronousStandbyNames: string | null;
  hosts: { client: string; nodes: Record<string, string> };
  archive: FailoverArchive | null;
  rounds: PartitionRound[];
  summary: {
    rounds: number;
    lostCommits: number;
    splitBrainCommits: number;
    acknowledgedAfterCut: number;
    rtoSecondsMedian: number | null;
    rtoSecondsMax: number | null;
    /** How each old primary came back, counted: "rewound" 9, "rebuilt" 1. */
    oldPrimaries: Record<string, number>;
  };
  errors: string[];
}

/** The settings that decide what a power cut may take, as the primary's server reported them. */
export interface DurabilitySettings {
  fsync: string;
  synchronous_commit: string;
  full_page_writes: string;
  wal_sync_method: string;
  data_checksums: string;
}

/** The cluster checked (after its set-up, and after each cut's crash recovery). */
export interface PowerCutClusterCheck {
  amcheck: { exitCode: number; ok: boolean; problems: number; relations: string[]; detail: string };
  dataChecksums: boolean | null;
  /** Pages whose checksum failed when the server read them since its start, over every database (pg_stat_database). */
  checksumFailures: number | null;
  settings: DurabilitySettings | null;
}

/** PostgreSQL started again on what the cut left: its crash recovery by the server's log. */
export interface PowerCutRecovery {
  started: boolean;
  /** Seconds from pg_ctl start to accepting connections: crash recovery's time. */
  seconds: number;
  crashRecovery: boolean;
  redoSeconds: number | null;
  redoDoneLsn: string | null;
  /** The FATAL or PANIC that stopped it, when it did not come back. */
  fatal: string | null;
  detail: string;
  /** A postmaster.pid the cut left naming no process (never flushed), removed before the start; absent when none was. */
  lockFile?: string;
}

/** One power cut: writes on the primary, the cut at a random moment, crash recovery, then the count and the checks. */
export interface PowerCutRound {
  round: number;
  host: string;
  /** Seconds of writing before the cut: drawn from powerCut.seed between earliestSeconds and latestSeconds. */
  cutAfterSeconds: number;
  /** The cut as the provider made it: what the device dropped, its counters just before and once back. */
  cut: PowerCutRecord;
  writer: { acknowledged: number; failedWrites: number; inDoubt: number; lastAckBeforeCutAt: string | null; stopReason: string };
  recovery: PowerCutRecovery;
  /** Acknowledged ids (this round and every earlier one) missing after crash recovery; null when they could not be counted. */
  lostCommits: number | null;
  lostSample: number[];
  acknowledgedTotal: number;
  /** In-doubt writes (their connection died with the power) that did land. */
  inDoubtPresent: number;
  /** Why the count could not be made (the ledger's table gone, the server not answering). */
  countError: string | null;
  /** pg_amcheck and the checksums after recovery; null when the server did not come back. */
  check: PowerCutClusterCheck | null;
  ok: boolean;
  error?: string;
}

export interface PowerCutDrillResult extends DrillResultHead<'power-cut-drill', PowerCutDrillSpec> {
  hosts: { client: string; primary: string };
  /** The primary's durability settings and a check before the first cut (the checks can pass on this cluster). */
  baseline: PowerCutClusterCheck | null;
  rounds: PowerCutRound[];
  summary: {
    rounds: number;
    /** The largest count of any round (each round's count covers every earlier round's commits too). */
    lostCommits: number | null;
    roundsWithLoss: number;
    acknowledgedTotal: number;
    /** Rounds whose server did not come back from crash recovery. */
    notRecovered: number;
    amcheckProblems: number;
    /** Rounds whose pg_amcheck did not come out clean (problems found, or it could not check). */
    amcheckFailedRounds: number;
    checksumFailures: number;
    droppedPages: number;
    droppedBytes: number;
    recoverySecondsMedian: number | null;
    recoverySecondsMax: number | null;
  };
  errors: string[];
}

export type DrillResult = RestoreDrillResult | FailoverDrillResult | PartitionDrillResult | PowerCutDrillResult;

/** What a drill workflow returns: the verdict and the headline figures (the full result is in result.json). */
export interface DrillSummary {
  runId: string;
  kind: DrillResult['kind'];
  status: DrillResult['status'];
  verdict: string;
  location: string;
  figures: Record<string, number | string | null>;
}

/** One tool's restore drill in a comparison: the headline figures from the drill's own summary. */
export interface ToolComparisonRow {
  tool: BackupToolName;
  toolVersion: string | null;
  /** The drill's own run (its result.json and report.md are there). */
  drillRunId: string;
  status: DrillSummary['status'];
  verdict: string;
  location: string;
  /** What the backup stored (compressed; a delta: what it added), of how big a database. */
  backupBytes: number | null;
  databaseBytes: number | null;
  backupSeconds: number | null;
  fetchSeconds: number | null;
  replaySeconds: number | null;
  promoteSeconds: number | null;
  rtoSeconds: number | null;
  rpoSeconds: number | null;
  rpoBytes: number | null;
  /** The tool's repository check (pgbackrest verify, wal-g wal-verify). */
  verifySeconds: number | null;
}

/** `storage-lab drill restore --compare-tools`: the same restore drill with each tool, one after the other. */
export interface RestoreToolComparison {
  schemaVersion: typeof DRILL_RESULT_SCHEMA_VERSION;
  kind: 'restore-tool-comparison';
  runId: string;
  preset: string | null;
  status: 'passed' | 'failed' | 'cancelled';
  verdict: string;
  startedAt: string;
  finishedAt: string;
  /** The drill input both ran with (each with its own backup.tool). */
  input: Record<string, unknown>;
  rows: ToolComparisonRow[];
  errors: string[];
}

/** A row from a drill's summary (figures as restoreDrillWorkflow returns them). */
export function comparisonRow(tool: BackupToolName, drillRunId: string, summary: DrillSummary): ToolComparisonRow {
  const f = summary.figures;
  const num = (k: string) => (typeof f[k] === 'number' ? (f[k] as number) : null);
  return {
    tool,
    toolVersion: typeof f.toolVersion === 'string' ? f.toolVersion : null,
    drillRunId,
    status: summary.status,
    verdict: summary.verdict,
    location: summary.location,
    backupBytes: num('backupBytes'),
    databaseBytes: num('databaseBytes'),
    backupSeconds: num('backupSeconds'),
    fetchSeconds: num('fetchSeconds'),
    replaySeconds: num('replaySeconds'),
    promoteSeconds: num('promoteSeconds'),
    rtoSeconds: num('rtoSeconds'),
    rpoSeconds: num('rpoSeconds'),
    rpoBytes: num('rpoBytes'),
    verifySeconds: num('verifySeconds'),
  };
}
