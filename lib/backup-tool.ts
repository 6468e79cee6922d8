/**
 * What the drills and experiments need from a backup tool: an archive command for archive_command, a base backup,
 * a restore into an empty data folder at a recovery target, a check of the repository, and a look at the archived
 * WAL. Two implementations: WAL-G (lib/walg.ts) and pgBackRest (lib/pgbackrest.ts).
 */
import { chownLab } from './lab-fs';
import type { BackupCompression, BackupKind, BackupToolName, RecoveryTarget, ResolvedBackupStore } from '../common/input/backup-store';
import type { BackupInfo } from '../common/results/drill-result';
import type { HostConfig } from '../common/core/hosts';


/**
 * The repository check, as the tool does it. pgBackRest's verify reads back every archived WAL file and every
 * backup file; WAL-G's wal-verify checks that the archived WAL is continuous and on the right timeline.
 */
export interface RepositoryCheck {
  ok: boolean;
  /** The tool's own verdict words ("ok", "integrity OK, timeline OK"). */
  status: string;
  /** One line a person reads: the tool, what it checked and what it found. */
  detail: string;
  walChecked: number;
  walInvalid: number;
  /** Backup files read back and checked; null when the tool checks WAL only (WAL-G). */
  backupFilesChecked: number | null;
  backupFilesInvalid: number | null;
  /** Segments the tool itself found missing from the archive; null when it does not look for gaps (pgBackRest). */
  missingWal: string[] | null;
}

/** One archived WAL segment, by name, as the tool stores it. */
export interface ArchivedWal {
  segment: string;
  /** The tool's own name for the file (what removeArchivedSegment deletes). */
  file: string;
  bytes: number;
}

/** The host a tool runs on: its folders, its server, and the OS user that runs the tool (root agents). */
export interface BackupToolHost extends Pick<HostConfig, 'hostDir' | 'dataDir' | 'socketDir' | 'postgres'> {
  runAs: { uid?: number; gid?: number };
}

/** How the tool writes: the compression of archived WAL and base backups alike. */
export interface BackupToolSettings {
  compression: BackupCompression;
}

export interface BackupTool {
  readonly name: BackupToolName;
  version(): Promise<string>;
  /** Writes the tool's configuration for this host; idempotent. */
  configure(settings: BackupToolSettings): Promise<void>;
  /** Server settings that archive every completed WAL segment with the tool. */
  archiveSettings(archiveTimeoutSeconds: number): Record<string, string>;
  /** Creates the repository for this cluster (idempotent) and checks that the server's archiving reaches it. */
  initRepository(signal?: AbortSignal): Promise<void>;
  /** A base backup of the running server: everything, or what changed since the previous backup. */
  backup(kind: BackupKind, signal?: AbortSignal): Promise<BackupInfo>;
  /** Restores the newest backup into the host's (empty) data folder with recovery settings for the target; times the copy. */
  restore(target: RecoveryTarget, signal?: AbortSignal): Promise<{ backupLabel: string; seconds: number }>;
  /** Checks the repository; a restore will need every archived segment up to `throughSegment`. */
  checkRepository(throughSegment: string, signal?: AbortSignal): Promise<RepositoryCheck>;
  archivedWal(signal?: AbortSignal): Promise<ArchivedWal[]>;
  /** Deletes one archived segment (fault injection: proves a broken archive is caught). */
  removeArchivedSegment(wal: ArchivedWal): Promise<void>;
}

/** The user a tool runs as, as a file owner; null when it runs as the agent's own user. */
export function ownerOf(runAs: BackupToolHost['runAs']): { uid: number; gid: number } | null {
  return runAs.uid === undefined ? null : { uid: runAs.uid, gid: runAs.gid ?? runAs.uid };
}

/** Gives a file or folder to the OS user the tool runs as (root agents; otherwise the agent owns it already). */
export async function chownTo(file: string, runAs: BackupToolHost['runAs']): Promise<void> {
  const owner = ownerOf(runAs);
  if (owner) chownLab(file, owner);
}

/** Keys an S3 store is reached with, when the agent's environment holds them (locally; EC2 hosts use their role). */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/**
 * The keys of the agent's environment under the given names, or undefined when it has none: the tools never see the
 * agent's environment, so these go into their config files (0600, the Postgres user's), and from there to the
 * tool alone (archive_command's too).
 */
export function s3CredentialsFrom(env: NodeJS.ProcessEnv, names: { key: string; secret: string; token: string }): S3Credentials | undefined {
  const accessKeyId = env[names.key];
  const secretAccessKey = env[names.secret];
  if (!accessKeyId || !secretAccessKey) return undefined;
  const sessionToken = env[names.token];
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * What is wrong with a value for a tool's config file, or null when nothing is. pgBackRest's ini parser splits the
 * file at line ends, trims each line, takes a line starting with [ as a section and the first = of any other as its
 * key's end: a value written after its key is safe when it holds no control character (no line end) and no white
 * space at either end (trimmed away); = [ and # inside it are data. WAL-G's JSON needs no more, and the same rule
 * keeps a value one token wherever the tool passes it on (an S3 key, a path).
 */
export function configValueProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  if (value === '') return 'is empty';
  const control = CONTROL_CHARACTER.exec(value);
  if (control) return `contains a control character (${JSON.stringify(control[0])}); a config value is one line`;
  if (value !== value.trim()) return 'begins or ends with white space, which the tool would trim';
  return null;
}

/** Throws, before anything is written, naming every key of a tool's config whose value is not safe to write. */
export function checkConfigValues(tool: string, values: Record<string, unknown>): void {
  const problems = Object.entries(values).flatMap(([key, value]) => {
    const problem = configValueProblem(value);
    return problem ? [`${key} ${problem}`] : [];
  });
  if (problems.length) throw new Error(`${tool} config not written: ${problems.join('; ')}`);
}

/** A store's fields as the tools take them, checked as they come in (the endpoint before any URL parser tidies it). */
export function storeFields(store: ResolvedBackupStore): Record<string, string> {
  return store.kind === 'folder'
    ? { 'store.path': store.path }
    : { 'store.bucket': store.bucket, 'store.path': store.path, 'store.region': store.region, ...(store.endpoint !== undefined ? { 'store.endpoint': store.endpoint } : {}) };
}

/**
 * Recovery answers no query (the lab reads its progress from the server's log), so it runs without hot standby.
 * With it on, PostgreSQL refuses to recover a backup taken with more max_connections (or worker processes, WAL
 * senders, prepared transactions, locks per transaction) than this host's: "recovery aborted because of insufficient
 * parameter settings" (CheckRequiredParameterValues checks them only for hot standby). A set published by a 64-client
 * run (max_connections 84) then could not be restored for a 16-client run (36).
 */
export const RECOVERY_HOT_STANDBY = 'off';
