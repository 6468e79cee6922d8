/**
 * The backup tool on Debian's pgBackRest: a config file in the host folder (passed with --config), a repository
 * in the run's folder or S3 prefix, and every command run as the Postgres OS user (archive_command runs as that
 * user too, so it must own the logs, locks and the repository folder). pgBackRest runs with an allow-listed
 * environment: S3 keys of the agent's (PGBACKREST_REPO1_S3_KEY and friends) go into its 0600 config file.
 */
import path from 'node:path';
import {
  BACKUP_STANZA,
  DEFAULT_BACKUP_COMPRESSION,
  toolCompressionName,
  type BackupCompression,
  type BackupKind,
  type RecoveryTarget,
  type ResolvedBackupStore,
} from '../common/input/backup-store';
import type { BackupInfo } from '../common/results/drill-result';
import { LAB_ROLE } from '../common/core/names';
import { makeLabDir, removeLabFile, writeLabFile } from './lab-fs';
import { parseArchiveListing, parseInfo, parseVerify } from './parsers/pgbackrest';
import { runProcess, type RunOptions } from './process-runner';
import {
  checkConfigValues,
  ownerOf,
  s3CredentialsFrom,
  storeFields,
  type ArchivedWal,
  type BackupTool,
  type BackupToolHost,
  type BackupToolSettings,
  type RepositoryCheck,
  type S3Credentials,
  RECOVERY_HOT_STANDBY,
} from './backup-tool';

export interface PgbackrestConfigInput {
  stanza: string;
  store: ResolvedBackupStore;
  pg: { dataDir: string; socketDir: string; port: number };
  /** Folders the tool writes: logs, locks and the async spool. */
  logDir: string;
  lockDir: string;
  spoolDir: string;
  /** Keys for an S3 repository (repo1-s3-key-type shared); absent: the instance's role (auto, EC2). */
  s3Credentials?: S3Credentials;
  compression?: BackupCompression;
}

/**
 * pgbackrest.conf for one host. Pure: the config is a function of the store and the host's Postgres. Writes only its
 * own keys, and throws when a value is not safe on a line of pgBackRest's ini (configValueProblem).
 */
export function renderPgbackrestConfig(input: PgbackrestConfigInput): string {
  // The store's fields as given: the URL parser below would quietly drop a line end from the endpoint.
  checkConfigValues('pgBackRest', storeFields(input.store));
  const compressType = toolCompressionName('pgbackrest', input.compression ?? DEFAULT_BACKUP_COMPRESSION);
  const global: Record<string, string> = {};
  if (input.store.kind === 'folder') {
    global['repo1-type'] = 'posix';
    global['repo1-path'] = input.store.path;
  } else {
    global['repo1-type'] = 's3';
    global['repo1-path'] = input.store.path;
    global['repo1-s3-bucket'] = input.store.bucket;
    global['repo1-s3-region'] = input.store.region;
    global['repo1-s3-key-type'] = input.s3Credentials ? 'shared' : 'auto';
    if (input.s3Credentials) {
      global['repo1-s3-key'] = input.s3Credentials.accessKeyId;
      global['repo1-s3-key-secret'] = input.s3Credentials.secretAccessKey;
      if (input.s3Credentials.sessionToken) global['repo1-s3-token'] = input.s3Credentials.sessionToken;
    }
    if (input.store.endpoint) {
      const url = new URL(input.store.endpoint);
      if (url.protocol !== 'https:')
        throw new Error(`backup store endpoint ${input.store.endpoint}: pgBackRest talks to S3 over TLS only; use an https:// endpoint`);
      global['repo1-s3-endpoint'] = url.hostname;
      if (url.port) global['repo1-storage-port'] = url.port;
      // S3-compatible stores (MinIO, emulators) address buckets by path, not by host name.
      global['repo1-s3-uri-style'] = 'path';
    } else {
      global['repo1-s3-endpoint'] = `s3.${input.store.region}.amazonaws.com`;
    }
  }
  Object.assign(global, {
    // Two full backups are plenty for a drill; older ones (and their WAL) expire.
    'repo1-retention-full': '2',
    'compress-type': compressType,
    // An immediate checkpoint at backup start: drills measure restores, not the wait for a spread checkpoint.
    'start-fast': 'y',
    'log-path': input.logDir,
    'lock-path': input.lockDir,
    'spool-path': input.spoolDir,
    'log-level-console': 'warn',
    'log-level-file': 'info',
  });
  const stanza = {
    'pg1-path': input.pg.dataDir,
    'pg1-socket-path': input.pg.socketDir,
    'pg1-port': String(input.pg.port),
    'pg1-user': LAB_ROLE,
  };
  checkConfigValues('pgBackRest', { stanza: input.stanza, ...global, ...stanza });
  const section = (name: string, values: Record<string, string>) =>
    [`[${name}]`, ...Object.entries(values).map(([k, v]) => `${k}=${v}`)].join('\n');
  return `# Written by Storage Lab for this host; edit the drill spec, not this file.\n${section('global', global)}\n\n${section(input.stanza, stanza)}\n`;
}

/** Seconds a pgBackRest command may take before it is called hung (the backup and restore scale with the data). */
const COMMAND_TIMEOUT_MS = 6 * 3600_000;

export class PgBackRest implements BackupTool {
  readonly name = 'pgbackrest' as const;
  private readonly dir: string;
  readonly configFile: string;

  constructor(
    private readonly host: BackupToolHost,
    private readonly store: ResolvedBackupStore,
    private readonly stanza = BACKUP_STANZA,
  ) {
    this.dir = path.join(host.hostDir, 'pgbackrest');
    this.configFile = path.join(this.dir, 'pgbackrest.conf');
  }

  async version(): Promise<string> {
    const r = await this.run(['version'], {}, false);
    return r.stdout.trim().replace(/^pgBackRest\s+/, '');
  }

  async configure(settings: BackupToolSettings): Promise<void> {
    const logDir = path.join(this.host.hostDir, 'logs', 'pgbackrest');
    const lockDir = path.join(this.dir, 'lock');
    const spoolDir = path.join(this.dir, 'spool');
    for (const d of [this.dir, logDir, lockDir, spoolDir]) await this.ownedDir(d);
    if (this.store.kind === 'folder') await this.ownedDir(this.store.path);
    const text = renderPgbackrestConfig({
      stanza: this.stanza,
      store: this.store,
      pg: { dataDir: this.host.dataDir, socketDir: this.host.socketDir, port: this.host.postgres.port },
      logDir,
      lockDir,
      spoolDir,
      s3Credentials: s3CredentialsFrom(process.env, { key: 'PGBACKREST_REPO1_S3_KEY', secret: 'PGBACKREST_REPO1_S3_KEY_SECRET', token: 'PGBACKREST_REPO1_S3_TOKEN' }),
      compression: settings.compression,
    });
    // It may hold keys: the Postgres user's alone.
    writeLabFile(this.configFile, text, { mode: 0o600, owner: ownerOf(this.host.runAs) });
  }

  archiveSettings(archiveTimeoutSeconds: number): Record<string, string> {
    return {
      archive_mode: 'on',
      archive_command: `pgbackrest --config=${this.configFile} --stanza=${this.stanza} archive-push %p`,
      archive_timeout: `${archiveTimeoutSeconds}s`,
    };
  }

  async initRepository(signal?: AbortSignal): Promise<void> {
    await this.run(['stanza-create'], { signal });
    // check forces a WAL switch and waits until the segment is archived: archive_command works end to end.
    await this.run(['check'], { signal });
  }

  async backup(kind: BackupKind, signal?: AbortSignal): Promise<BackupInfo> {
    const started = Date.now();
    // A delta is pgBackRest's "incr" (changes since the previous backup of any type); with no full backup yet it makes one.
    await this.run([kind === 'full' ? '--type=full' : '--type=incr', 'backup'], { signal });
    const seconds = (Date.now() - started) / 1000;
    const info = parseInfo((await this.run(['info', '--output=json'], { signal })).stdout, this.stanza);
    const last = info.backups[info.backups.length - 1];
    if (!last) throw new Error(`pgbackrest backup finished but info lists no backup for stanza ${this.stanza}`);
    return {
      tool: this.name,
      toolVersion: await this.version(),
      label: last.label,
      type: last.type,
      startedAt: last.startedAt,
      stoppedAt: last.stoppedAt,
      seconds,
      databaseBytes: last.databaseBytes,
      repositoryBytes: last.repositoryBytes,
      startLsn: last.startLsn,
      stopLsn: last.stopLsn,
      walStart: last.walStart,
      walStop: last.walStop,
    };
  }

  async restore(target: RecoveryTarget, signal?: AbortSignal): Promise<{ backupLabel: string; seconds: number }> {
    await this.ownedDir(this.host.dataDir, 0o700);
    const info = parseInfo((await this.run(['info', '--output=json'], { signal })).stdout, this.stanza);
    const targetArgs =
      target.type === 'time'
        ? ['--type=time', `--target=${target.time}`, '--target-action=promote']
        : target.type === 'lsn'
          ? ['--type=lsn', `--target=${target.lsn}`, '--target-action=promote']
          : ['--type=default'];
    // The restored server must not push its new timeline into the source's archive.
    // Nor take queries while it recovers: a backup of a server with more connections recovers too (RECOVERY_HOT_STANDBY).
    const r = await this.run([...targetArgs, '--archive-mode=off', `--recovery-option=hot_standby=${RECOVERY_HOT_STANDBY}`, 'restore'], { signal });
    return { backupLabel: info.backups[info.backups.length - 1]?.label ?? 'unknown', seconds: r.durationMs / 1000 };
  }

  async checkRepository(_throughSegment: string, signal?: AbortSignal): Promise<RepositoryCheck> {
    const v = parseVerify((await this.run(['verify', '--output=text', '--verbose'], { signal })).stdout);
    const sum = (xs: { checked: number; valid: number }[], f: 'checked' | 'invalid') =>
      xs.reduce((s, x) => s + (f === 'checked' ? x.checked : x.checked - x.valid), 0);
    const counts = {
      walChecked: sum(v.archives, 'checked'),
      walInvalid: sum(v.archives, 'invalid'),
      backupFilesChecked: sum(v.backups, 'checked'),
      backupFilesInvalid: sum(v.backups, 'invalid'),
    };
    return {
      ok: v.status === 'ok',
      status: v.status,
      detail: `pgbackrest verify: status ${v.status}; ${counts.walChecked} WAL files checked (${counts.walInvalid} invalid), ${counts.backupFilesChecked} backup files checked (${counts.backupFilesInvalid} invalid)`,
      ...counts,
      // verify reads back the files that exist; a segment that is not there is not its concern.
      missingWal: null,
    };
  }

  async archivedWal(signal?: AbortSignal): Promise<ArchivedWal[]> {
    const r = await this.run(['repo-ls', '--recurse', '--output=json', 'archive'], { signal });
    return parseArchiveListing(r.stdout).map((s) => ({ segment: s.segment, file: s.path, bytes: s.bytes }));
  }

  async removeArchivedSegment(wal: ArchivedWal): Promise<void> {
    if (this.store.kind !== 'folder') throw new Error('removing an archived segment is supported for a folder store only');
    removeLabFile(path.join(this.store.path, 'archive', wal.file));
  }

  private async run(args: string[], opts: Pick<RunOptions, 'signal'> = {}, withStanza = true) {
    const common = withStanza ? [`--config=${this.configFile}`, `--stanza=${this.stanza}`] : [];
    return runProcess('pgbackrest', [...common, ...args], {
      ...this.host.runAs,
      cwd: this.host.hostDir,
      timeoutMs: COMMAND_TIMEOUT_MS,
      signal: opts.signal,
    });
  }

  /** A folder the Postgres OS user owns (it runs archive_command, restores and writes the tool's logs). */
  private async ownedDir(dir: string, mode = 0o750): Promise<void> {
    makeLabDir(dir, { mode, owner: ownerOf(this.host.runAs) });
  }
}
