/**
 * A backup store resolved for one run: the spec's store (a folder, or an S3 bucket) plus the run's own prefix, so
 * every run's backups and archived WAL live apart. Holds no secret: hosts reach S3 with their own credentials.
 */
import type { SpecProblem } from '../core/errors';

export type ResolvedBackupStore =
  | { kind: 'folder'; /** Absolute folder every host of the run can reach. */ path: string }
  | { kind: 's3'; bucket: string; /** Key prefix of the run inside the bucket, starting with "/". */ path: string; region: string; endpoint?: string };

/** The backup tool's name for the cluster being backed up; one per repository, and each run has its own repository. */
export const BACKUP_STANZA = 'storage-lab';

/** Where the store is, for people: a folder path or an s3:// URL. */
export function backupStoreLocation(store: ResolvedBackupStore): string {
  return store.kind === 'folder' ? store.path : `s3://${store.bucket}${store.path}`;
}

/** Where recovery stops: at a time, at an LSN, or at the end of the archived WAL. */
export type RecoveryTarget = { type: 'time'; time: string } | { type: 'lsn'; lsn: string } | { type: 'latest' };

/** The backup tools a host can run: WAL-G (the reference's) and Debian's pgBackRest. */
export const BACKUP_TOOLS = ['wal-g', 'pgbackrest'] as const;
export type BackupToolName = (typeof BACKUP_TOOLS)[number];

/** Compression methods by one name for both tools (each tool spells some differently in its own config). */
export const BACKUP_COMPRESSIONS = ['lz4', 'zstd', 'lzma', 'gzip', 'bzip2', 'none'] as const;
export type BackupCompression = (typeof BACKUP_COMPRESSIONS)[number];
export const DEFAULT_BACKUP_COMPRESSION: BackupCompression = 'lz4';

/** Each tool's own name for each method it can write (WAL-G as built here: no brotli, which needs cgo). */
export const TOOL_COMPRESSION_NAMES: Record<BackupToolName, Partial<Record<BackupCompression, string>>> = {
  'wal-g': { lz4: 'lz4', zstd: 'zstd', lzma: 'lzma', none: 'none' },
  pgbackrest: { lz4: 'lz4', zstd: 'zst', gzip: 'gz', bzip2: 'bz2', none: 'none' },
};

/** The tool's name for a compression method; throws when the tool cannot write it. */
export function toolCompressionName(tool: BackupToolName, compression: BackupCompression): string {
  const name = TOOL_COMPRESSION_NAMES[tool][compression];
  if (!name) throw new Error(`${tool} writes ${Object.keys(TOOL_COMPRESSION_NAMES[tool]).join(', ')}; it cannot compress with ${compression}`);
  return name;
}

/** A base backup of everything (full) or of what changed since the previous backup (delta: pgBackRest's "incr"). */
export type BackupKind = 'full' | 'delta';

/** The default tool: WAL-G, the reference's (its production pattern archives WAL and base backups with it). */
export const DEFAULT_BACKUP_TOOL: BackupToolName = 'wal-g';

/** What a spec asks a backup tool for, and where in the spec each part comes from (for the messages). */
export interface BackupToolNeeds {
  tool: BackupToolName;
  compression: BackupCompression;
  /** The S3 endpoint the hosts reach the store at, when the store is S3 with one. */
  s3Endpoint?: string;
  fields: { tool: string; compression: string; endpoint: string };
}

/** Problems of asking a tool for what it cannot do; empty when it can. Pure: the spec rules call it. */
export function backupToolProblems(n: BackupToolNeeds): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const other = n.tool === 'wal-g' ? 'pgbackrest' : 'wal-g';
  if (!TOOL_COMPRESSION_NAMES[n.tool][n.compression]) {
    const can = Object.keys(TOOL_COMPRESSION_NAMES[n.tool]);
    const otherCan = Boolean(TOOL_COMPRESSION_NAMES[other][n.compression]);
    problems.push({
      path: n.fields.compression,
      message: `${n.tool} cannot compress with ${n.compression}; use ${can.join(', ')}${otherCan ? `, or set ${n.fields.tool} to "${other}"` : ''}`,
    });
  }
  if (n.tool === 'pgbackrest' && n.s3Endpoint && !/^https:\/\//i.test(n.s3Endpoint))
    problems.push({
      path: n.fields.endpoint,
      message: `pgBackRest talks to S3 over TLS only and ${n.s3Endpoint} is not https://; use an https:// endpoint or set ${n.fields.tool} to "wal-g" (it accepts plain HTTP)`,
    });
  return problems;
}
