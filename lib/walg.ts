/**
 * The backup tool on WAL-G (v3.0.8, built into the tools cache by infra/bootstrap.sh): a JSON config in the host
 * folder (passed with --config), WAL and base backups in the run's folder (WALG_FILE_PREFIX) or S3 prefix
 * (WALG_S3_PREFIX), every command run as the Postgres OS user (archive_command and restore_command run as that user
 * too). WAL-G runs with an allow-listed environment, as does the server whose archive_command runs it: AWS keys in
 * the agent's environment go into the config (0600, the Postgres user's); with none there, the instance's role on EC2.
 */
import { stat } from 'node:fs/promises';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { backupStoreLocation, toolCompressionName, type BackupCompression, type BackupKind, type RecoveryTarget, type ResolvedBackupStore } from '../common/input/backup-store';
import type { BackupInfo } from '../common/results/drill-result';
import { formatLsn, lastArchivedSegment, parseLsn, parseSegmentName, segmentEndLsn } from '../common/core/lsn';
import { LAB_ROLE } from '../common/core/names';
import { appendLabFile, copyLabFile, makeLabDir, writeLabFile } from './lab-fs';
import { labPaths, traversableByOthers } from './lab-paths';
import {
  archivedSegments,
  parseBackupList,
  parseBackupPushName,
  parseBackupSentinel,
  parseStorageListing,
  parseWalgVersion,
  parseWalVerify,
  walgBackupInfo,
  walVerifyCheck,
} from './parsers/walg';
import { quoteLiteral, withConnection } from './pg';
import { runProcess, type RunOptions } from './process-runner';
import {
  checkConfigValues,
  chownTo,
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

/** WAL-G's folders inside a store (its own names: utility.BaseBackupPath and utility.WalPath). */
const BACKUPS_FOLDER = 'basebackups_005';
const WAL_FOLDER = 'wal_005';

/** backup-push and backup-fetch may take this long before they are called hung (they scale with the data). */
const DATA_COMMAND_TIMEOUT_MS = 6 * 3600_000;
/** Every other command reads or writes a few small objects: seconds normally, so this long means a hung store. */
const METADATA_COMMAND_TIMEOUT_MS = 10 * 60_000;
/** How long the first archived segment may take to reach the store (pgBackRest's check waits as long: archive-timeout). */
const ARCHIVE_CHECK_TIMEOUT_MS = 60_000;

/** Where WAL-G is installed: the tools cache (the bootstrap builds it there), else the first wal-g on PATH; null when none. */
export function findWalg(env: NodeJS.ProcessEnv = process.env): string | null {
  const candidates = [path.join(labPaths(env).cacheBin, 'wal-g'), ...(env.PATH ?? '').split(':').filter(Boolean).map((d) => path.join(d, 'wal-g'))];
  return (
    candidates.find((file) => {
      try {
        accessSync(file, constants.X_OK);
        return statSync(file).isFile();
      } catch {
        return false;
      }
    }) ?? null
  );
}

export interface WalgConfigInput {
  store: ResolvedBackupStore;
  pg: { dataDir: string; socketDir: string; port: number };
  compression: BackupCompression;
  /** Keys for an S3 store (AWS_ACCESS_KEY_ID and friends in the config); absent: the instance's role. */
  s3Credentials?: S3Credentials;
}

/**
 * WAL-G's settings for one host (written as JSON, read with --config). Pure: a function of the store and the server.
 * Throws when a value is not safe to write (configValueProblem), before anything is written.
 */
export function renderWalgConfig(input: WalgConfigInput): Record<string, string> {
  checkConfigValues('WAL-G', storeFields(input.store));
  const method = toolCompressionName('wal-g', input.compression);
  const config: Record<string, string> = {};
  if (input.store.kind === 'folder') {
    config.WALG_FILE_PREFIX = input.store.path;
  } else {
    config.WALG_S3_PREFIX = `s3://${input.store.bucket}${input.store.path}`;
    config.AWS_REGION = input.store.region;
    if (input.store.endpoint) {
      config.AWS_ENDPOINT = input.store.endpoint;
      // S3-compatible stores (MinIO, emulators) address buckets by path, not by host name.
      config.AWS_S3_FORCE_PATH_STYLE = 'true';
    }
    if (input.s3Credentials) {
      config.AWS_ACCESS_KEY_ID = input.s3Credentials.accessKeyId;
      config.AWS_SECRET_ACCESS_KEY = input.s3Credentials.secretAccessKey;
      if (input.s3Credentials.sessionToken) config.AWS_SESSION_TOKEN = input.s3Credentials.sessionToken;
    }
  }
  Object.assign(config, {
    WALG_COMPRESSION_METHOD: method,
    // backup-push without --full makes a delta of the previous backup, a full one after six deltas in a row.
    WALG_DELTA_MAX_STEPS: '6',
    // An archived segment is never replaced by different bytes of the same name (a retried push of the same file is fine).
    WALG_PREVENT_WAL_OVERWRITE: 'true',
    // wal-push keeps its "uploaded ahead" marks under PGDATA's pg_wal; without it, in /tmp/walg_data, shared by every
    // host on the machine, where one cluster's mark for segment N makes another's wal-push of its own N skip the upload.
    PGDATA: input.pg.dataDir,
    // wal-push uploads the next ready segments too; left to Postgres to mark them done, pg_stat_archiver still counts
    // every segment (the drills read the archive lag there), and their own wal-push returns at once.
    PG_READY_RENAME: 'false',
    // backup-push and wal-verify (without --lsn) connect to the host's server over its socket.
    PGHOST: input.pg.socketDir,
    PGPORT: String(input.pg.port),
    PGUSER: LAB_ROLE,
    PGDATABASE: 'postgres',
  });
  checkConfigValues('WAL-G', config);
  return config;
}

/** Server settings a restored data folder starts with: fetch WAL with WAL-G, stop at the target, promote; archive nothing; no hot standby. */
export function walgRecoverySettings(restoreCommand: string, target: RecoveryTarget): Record<string, string> {
  const settings: Record<string, string> = { restore_command: restoreCommand };
  if (target.type === 'time') settings.recovery_target_time = target.time;
  if (target.type === 'lsn') settings.recovery_target_lsn = target.lsn;
  if (target.type !== 'latest') settings.recovery_target_action = 'promote';
  // The restored server must not push its new timeline into the source's archive.
  settings.archive_mode = 'off';
  settings.hot_standby = RECOVERY_HOT_STANDBY;
  return settings;
}

/**
 * wal-verify's --lsn for "every segment up to and including this one": WAL-G starts its backward scan at the segment
 * before the one that holds lsn - 1, so lsn - 1 must be the first byte of the next segment.
 */
export function walVerifyStartLsn(throughSegment: string): string {
  return formatLsn(parseLsn(segmentEndLsn(throughSegment)) + 1n);
}

/** A word for a POSIX shell (archive_command and restore_command run through /bin/sh). */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export class WalG implements BackupTool {
  readonly name = 'wal-g' as const;
  private readonly dir: string;
  readonly configFile: string;
  /** The binary the Postgres OS user runs: the installed one, or a copy in the host folder when it cannot reach that. */
  readonly binary: string | null;

  constructor(
    private readonly host: BackupToolHost,
    private readonly store: ResolvedBackupStore,
    private readonly installed: string | null = findWalg(),
  ) {
    this.dir = path.join(host.hostDir, 'wal-g');
    this.configFile = path.join(this.dir, 'walg.json');
    const foreignUser = host.runAs.uid !== undefined && host.runAs.uid !== process.getuid?.();
    this.binary = installed && foreignUser && !reachableByOthers(installed) ? path.join(this.dir, 'wal-g') : installed;
  }

  async version(): Promise<string> {
    return parseWalgVersion((await this.run(['--version'], {}, false)).stdout).version;
  }

  async configure(settings: BackupToolSettings): Promise<void> {
    await this.ownedDir(this.dir);
    if (this.store.kind === 'folder') await this.ownedDir(this.store.path);
    const installed = this.requireInstalled();
    // A tools cache below a private folder (/root) is out of the Postgres user's reach: it runs a copy here.
    if (this.binary !== installed && !(await sameFile(installed, this.binary!))) {
      copyLabFile(installed, this.binary!);
      await chownTo(this.binary!, this.host.runAs);
    }
    const pg = { dataDir: this.host.dataDir, socketDir: this.host.socketDir, port: this.host.postgres.port };
    const s3Credentials = s3CredentialsFrom(process.env, { key: 'AWS_ACCESS_KEY_ID', secret: 'AWS_SECRET_ACCESS_KEY', token: 'AWS_SESSION_TOKEN' });
    const config = renderWalgConfig({ store: this.store, pg, compression: settings.compression, s3Credentials });
    // It may hold keys: the Postgres user's alone.
    writeLabFile(this.configFile, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, owner: ownerOf(this.host.runAs) });
  }

  archiveSettings(archiveTimeoutSeconds: number): Record<string, string> {
    return { archive_mode: 'on', archive_command: `${this.command()} wal-push %p`, archive_timeout: `${archiveTimeoutSeconds}s` };
  }

  async initRepository(signal?: AbortSignal): Promise<void> {
    // WAL-G creates its folders on first write; check it can write there, then that archive_command reaches it.
    await this.run(['st', 'check', 'write'], { signal });
    await this.checkArchiving(signal);
  }

  async backup(kind: BackupKind, signal?: AbortSignal): Promise<BackupInfo> {
    const r = await this.run(['backup-push', ...(kind === 'full' ? ['--full'] : []), this.host.dataDir], { signal, timeoutMs: DATA_COMMAND_TIMEOUT_MS });
    const name = parseBackupPushName(r.stderr);
    const sentinel = parseBackupSentinel((await this.run(['st', 'cat', `${BACKUPS_FOLDER}/${name}_backup_stop_sentinel.json`], { signal })).stdout);
    // A delta asked for with no backup before it is a full backup: the result says what WAL-G made.
    return { tool: this.name, toolVersion: await this.version(), seconds: r.durationMs / 1000, ...walgBackupInfo(name, sentinel) };
  }

  async restore(target: RecoveryTarget, signal?: AbortSignal): Promise<{ backupLabel: string; seconds: number }> {
    await this.ownedDir(this.host.dataDir, 0o700);
    const backups = parseBackupList((await this.run(['backup-list', '--detail', '--json'], { signal })).stdout);
    const newest = backups[backups.length - 1];
    if (!newest) throw new Error(`no WAL-G backup in ${backupStoreLocation(this.store)} to restore`);
    // Fetched by name, not LATEST: the label reported is the backup restored.
    const r = await this.run(['backup-fetch', this.host.dataDir, newest.name], { signal, timeoutMs: DATA_COMMAND_TIMEOUT_MS });
    const settings = walgRecoverySettings(`${this.command()} wal-fetch %f %p`, target);
    const lines = Object.entries(settings).map(([k, v]) => `${k} = ${quoteLiteral(v)}`);
    // postgresql.auto.conf is read last, so these win over the settings restored with the backup.
    const autoConf = path.join(this.host.dataDir, 'postgresql.auto.conf');
    appendLabFile(autoConf, `\n# Written by Storage Lab for the restore.\n${lines.join('\n')}\n`, { mode: 0o600, owner: ownerOf(this.host.runAs) });
    const signalFile = path.join(this.host.dataDir, 'recovery.signal');
    writeLabFile(signalFile, '', { mode: 0o600, owner: ownerOf(this.host.runAs) });
    return { backupLabel: newest.name, seconds: r.durationMs / 1000 };
  }

  async checkRepository(throughSegment: string, signal?: AbortSignal): Promise<RepositoryCheck> {
    const seg = parseSegmentName(throughSegment);
    if (!seg) throw new Error(`not a WAL segment name: ${throughSegment}`);
    // With --lsn and --timeline wal-verify reads the store only: no server needed (the source may be dead).
    const args = ['wal-verify', 'integrity', 'timeline', '--json', '--timeline', String(seg.timeline), '--lsn', walVerifyStartLsn(throughSegment)];
    return walVerifyCheck(parseWalVerify((await this.run(args, { signal })).stdout));
  }

  async archivedWal(signal?: AbortSignal): Promise<ArchivedWal[]> {
    return archivedSegments(parseStorageListing((await this.run(['st', 'ls', `${WAL_FOLDER}/`], { signal })).stdout));
  }

  async removeArchivedSegment(wal: ArchivedWal): Promise<void> {
    await this.run(['st', 'rm', `${WAL_FOLDER}/${wal.file}`]);
  }

  /** The command line archive_command and restore_command start with. */
  private command(): string {
    this.requireInstalled();
    return `${shellWord(this.binary!)} --config ${shellWord(this.configFile)}`;
  }

  /** Forces a WAL switch and waits until the server has archived that segment, at most ARCHIVE_CHECK_TIMEOUT_MS. */
  private async checkArchiving(signal?: AbortSignal): Promise<void> {
    await withConnection(
      this.host,
      async (c) => {
        // A restore point writes WAL, so the switch always closes a segment (pgBackRest's check does the same).
        await c.query("SELECT pg_create_restore_point('storage-lab archive check')");
        const seg = (await c.query<{ wal: string }>('SELECT pg_walfile_name(pg_switch_wal()) AS wal')).rows[0].wal;
        const started = Date.now();
        for (;;) {
          const s = (
            await c.query<{ wal: string | null; failed: string; last_failed: string | null }>(
              'SELECT last_archived_wal AS wal, failed_count::text AS failed, last_failed_wal AS last_failed FROM pg_stat_archiver',
            )
          ).rows[0];
          const archived = lastArchivedSegment(s.wal);
          if (archived && archived >= seg) return;
          if (Date.now() - started > ARCHIVE_CHECK_TIMEOUT_MS)
            throw new Error(
              `archive_command did not archive ${seg} to ${backupStoreLocation(this.store)} within ${ARCHIVE_CHECK_TIMEOUT_MS / 1000} s ` +
                `(last archived: ${s.wal ?? 'none'}; failed attempts: ${s.failed}${s.last_failed ? `, last failed: ${s.last_failed}` : ''}); ` +
                `wal-push's errors are in the server's log`,
            );
          await sleep(200, signal);
        }
      },
      { database: 'postgres', applicationName: 'storage-lab archive check' },
    );
  }

  private requireInstalled(): string {
    if (!this.installed) throw new Error('WAL-G is not installed: run infra/bootstrap.sh (it builds wal-g into the tools cache, .cache/bin)');
    return this.installed;
  }

  private async run(args: string[], opts: Pick<RunOptions, 'signal' | 'timeoutMs'> = {}, withConfig = true) {
    this.requireInstalled();
    return runProcess(this.binary!, [...(withConfig ? ['--config', this.configFile] : []), ...args], {
      ...this.host.runAs,
      cwd: this.host.hostDir,
      timeoutMs: opts.timeoutMs ?? METADATA_COMMAND_TIMEOUT_MS,
      signal: opts.signal,
    });
  }

  /** A folder the Postgres OS user owns (it runs archive_command, restores and writes into the folder store). */
  private async ownedDir(dir: string, mode = 0o750): Promise<void> {
    makeLabDir(dir, { mode });
    await chownTo(dir, this.host.runAs);
  }
}

/** Whether other users can run a file: every folder above it passable, the file readable and executable. */
function reachableByOthers(file: string): boolean {
  return traversableByOthers(path.dirname(file)) && (statSync(file).mode & 0o005) === 0o005;
}

/** Whether a copy is current: same size and not older than the original. */
async function sameFile(original: string, copy: string): Promise<boolean> {
  if (!existsSync(copy)) return false;
  const [a, b] = await Promise.all([stat(original), stat(copy)]);
  return a.size === b.size && b.mtimeMs >= a.mtimeMs;
}

/** Waits ms, or rejects as soon as the activity is cancelled. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('cancelled'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('cancelled'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
