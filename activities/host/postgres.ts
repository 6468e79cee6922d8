/**
 * Postgres lifecycle on the agent's host: create the cluster, configure it from the spec, start, stop, crash.
 * Every step is idempotent: a retried activity first looks at what is already there.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FAILURE_TYPES, type SpecProblem } from '../../common/core/errors';
import { createHash } from 'node:crypto';
import { existsSync, statfsSync } from 'node:fs';
import { isIP, isIPv6 } from 'node:net';
import { userInfo } from 'node:os';
import path from 'node:path';
import { LAB_DATABASE, LAB_ROLE, WORKLOAD_ROLE } from '../../common/core/names';
import { labSettingProblems, tempFileLimitKb, type LabServerSettings } from '../../common/input/postgres-settings';
import { serverSettingsProblems } from '../../common/input/server-settings';
import { LabPathError, appendLabFile, lastLogLines, readLabFile, writeLabFile } from '../../lib/lab-fs';
import { runProcess } from '../../lib/process-runner';
import { every } from '../progress';
import { quoteIdent, quoteLiteral, withConnection } from '../../lib/pg';
import { renderConf } from '../../lib/postgres-conf';
import { archiveSettings } from './archiving';
import { asPostgresUser, assertHost, closeSocketDir, refuseInput, type HostDeps, type HostInput } from './deps';

/** Settings file the lab owns inside PGDATA, included from postgresql.conf. */
const LAB_CONF = 'storage-lab.conf';
/** The pg_ident.conf map the host's socket authenticates through. */
const IDENT_MAP = 'storage-lab';
/** The server's max_connections when no setting names one. */
const DEFAULT_MAX_CONNECTIONS = 100;

/** What a host's configuration is made of: each part typed, and checked on the host before anything is written. */
export interface LabConfigInput {
  /** The lab's own settings (common/input/postgres-settings.ts LAB_SETTINGS): only names the lab manages, in their shape. */
  server: LabServerSettings;
  /** The spec's postgres.settings, checked here again against the refusals of common/input/server-settings.ts. */
  user: Record<string, string>;
  /** Archive WAL with the backup tool configureBackups set up on this host (the host writes the commands). */
  archiving?: { archiveTimeoutSeconds: number };
  /** Addresses (IPv4 or IPv6) of the other hosts that connect over TCP: replication, pg_rewind, the failover writer. */
  replicationPeers?: string[];
}

export interface ConfigurePostgresInput extends HostInput, LabConfigInput {
  /**
   * initdb --data-checksums when the cluster is created (the power-cut drill: the server then verifies each page it
   * reads, so a page a power cut tore is named). A cluster that exists keeps what it was made with.
   */
  dataChecksums?: boolean;
}

export interface PostgresInfo {
  postgresVersion: string;
  serverVersionNum: number;
  restarted: boolean;
}

/** A host's configuration as written: the settings file, pg_hba.conf and pg_ident.conf. */
export interface LabConfig {
  confText: string;
  hbaText: string;
  identText: string;
}

/** Creates the cluster if needed, writes the lab's settings, (re)starts when they changed, and sets the password. */
export async function configurePostgres(deps: HostDeps, input: ConfigurePostgresInput): Promise<PostgresInfo> {
  assertHost(deps, input);
  const { config } = deps;
  // Every check first: a refused value fails the activity before anything on the host changes.
  const lab = labConfig(deps, input);
  if (input.dataChecksums !== undefined && typeof input.dataChecksums !== 'boolean')
    refuseInput(deps, [{ path: 'dataChecksums', message: `${JSON.stringify(input.dataChecksums)} is not true or false` }]);
  // initdb is preparation nothing measures: its thousand files and their fsyncs run with the modelled cap lifted
  // (lib/io-cap.ts), as the load does. At 20 modelled IOPS a ci run took 76-88 s with them under the cap, 39-52 s without.
  await deps.ioCap.withoutCap(() => initCluster(deps, input.dataChecksums === true));
  closeSocketDir(deps);
  const { fingerprint, applied, fingerprintFile } = writeLabConfig(deps, lab);

  const running = await isRunning(deps);
  let restarted = false;
  try {
    if (!running) {
      await pgCtl(deps, ['start', '-w', '-t', '3600', '-l', serverLog(deps)]);
    } else if (applied !== fingerprint) {
      await pgCtl(deps, ['restart', '-m', 'fast', '-w', '-t', '3600', '-l', serverLog(deps)]);
      restarted = true;
    }
  } catch (err) {
    // pg_ctl only says "examine the log output": put the log's last lines in the failure, bounded, and in one
    // failure only: the final attempt's (or a final refusal), not once per retry in the history.
    const logTail = tail(serverLog(deps), 15);
    // A refused read says so in every attempt: the refusal holds no text of the file.
    const refused = logTail.startsWith('(not read: ');
    const withTail = (final: boolean) =>
      `--- ${serverLog(deps)} (last lines${final || refused ? '' : ': in the final attempt\'s failure'}) ---${final || refused ? `\n${logTail}` : ''}`;
    // A setting the server rejects will be rejected again: fail fast, naming the spec field.
    if (/contains errors|invalid value for parameter|unrecognized configuration parameter/.test(logTail))
      throw withFileText(
        ApplicationFailure.nonRetryable(`postgres.settings: the server rejected its configuration; fix the setting named below\n${(err as Error).message}`, FAILURE_TYPES.invalidSpec),
        withTail(true),
      );
    throw withFileText(new Error((err as Error).message), withTail(isFinalAttempt()));
  }
  writeOwned(deps, fingerprintFile, fingerprint);

  const password = readPassword(deps);
  return withConnection(
    config,
    async (c) => {
      // A standby has its primary's roles and databases, and cannot write them.
      const standby = (await c.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0].r;
      const v = await c.query<{ server_version: string; num: string }>(
        "SELECT current_setting('server_version') AS server_version, current_setting('server_version_num') AS num",
      );
      if (!standby) {
        await c.query(`ALTER ROLE ${quoteIdent(LAB_ROLE)} PASSWORD ${quoteLiteral(password)}`);
        // template1 first, so the lab's database (and any other made later) is created without it.
        await revokePublicCreate(config, 'template1');
        await c.query(REVOKE_PUBLIC_CREATE);
        const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [LAB_DATABASE]);
        if (exists.rowCount === 0) await c.query(`CREATE DATABASE ${quoteIdent(LAB_DATABASE)}`);
        await revokePublicCreate(config, LAB_DATABASE);
        // The workload's role: it logs in and, once the tables exist (load), reads and writes them; nothing more.
        const role = await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [WORKLOAD_ROLE]);
        if (role.rowCount === 0) await c.query(`CREATE ROLE ${quoteIdent(WORKLOAD_ROLE)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION`);
        // A script's RAISE WARNING on every transaction would grow the server log without bound; its errors stay
        // logged (pgbench ends a client at its first error). Only a superuser may change this back.
        await c.query(`ALTER ROLE ${quoteIdent(WORKLOAD_ROLE)} SET log_min_messages = 'error'`);
      }
      return { postgresVersion: v.rows[0].server_version, serverVersionNum: Number(v.rows[0].num), restarted };
    },
    { database: 'postgres' },
  );
}

/**
 * Nobody but a schema's owner (and superusers) may create in schema public: PostgreSQL 12-14 let every role do so,
 * and a function or operator planted there would run as whichever role resolved it (15+ already refuses; idempotent).
 */
const REVOKE_PUBLIC_CREATE = 'REVOKE CREATE ON SCHEMA public FROM PUBLIC';

async function revokePublicCreate(config: HostDeps['config'], database: string): Promise<void> {
  await withConnection(config, (c) => c.query(REVOKE_PUBLIC_CREATE), { database });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The host's configuration from its typed parts, every part checked: the lab's settings by name and shape, the spec's
 * against the refusals, peers as IP addresses, the archive commands from the tool this host configured; then the
 * host's own settings (address, port, socket, temp_file_limit) over all of them. Writes nothing.
 */
export function labConfig(deps: HostDeps, input: LabConfigInput): LabConfig {
  const { config } = deps;
  const problems: SpecProblem[] = [];
  if (!isRecord(input.server)) problems.push({ path: 'server', message: "must be the lab's settings (an object)" });
  else problems.push(...labSettingProblems(input.server));
  if (!isRecord(input.user)) problems.push({ path: 'postgres.settings', message: 'must be an object of settings' });
  else problems.push(...serverSettingsProblems(input.user));
  const peers = input.replicationPeers ?? [];
  if (!Array.isArray(peers)) problems.push({ path: 'replicationPeers', message: 'must be a list of IP addresses' });
  else peers.forEach((p, i) => problems.push(...peerAddressProblems(`replicationPeers[${i}]`, p)));
  const timeout = input.archiving?.archiveTimeoutSeconds;
  if (input.archiving && !(Number.isInteger(timeout) && timeout! >= 1 && timeout! <= 86_400))
    problems.push({ path: 'archiving.archiveTimeoutSeconds', message: `${JSON.stringify(timeout)} is not a whole number of seconds from 1 to 86400` });
  refuseInput(deps, problems);

  const merged: Record<string, string> = { ...input.server, ...input.user };
  // A test's seam (never a spec: both settings are refused there) turns a durability setting off on every host.
  const off = deps.testSeams?.durabilityOff;
  if (off) merged[off] = 'off';
  const maxConnections = Number(merged.max_connections ?? DEFAULT_MAX_CONNECTIONS);
  const settings = {
    ...merged,
    ...(input.archiving ? archiveSettings(deps, input.archiving.archiveTimeoutSeconds) : {}),
    temp_file_limit: `${tempFileLimitKb(volumeBytes(deps), Number.isInteger(maxConnections) ? maxConnections : DEFAULT_MAX_CONNECTIONS)}kB`,
    listen_addresses: config.postgres.host,
    port: String(config.postgres.port),
    unix_socket_directories: config.socketDir,
  };
  return { confText: renderConf(settings), hbaText: renderHba(peers), identText: renderIdent(deps) };
}

/** Problems of an address another host connects from, as pg_hba.conf and a conninfo take it: an IPv4 or IPv6 address. */
export function peerAddressProblems(path: string, address: unknown): SpecProblem[] {
  return typeof address === 'string' && isIP(address) !== 0 ? [] : [{ path, message: `${JSON.stringify(address)} is not an IPv4 or IPv6 address` }];
}

/** Size of the file system the data folder lives on (the volume under test). */
function volumeBytes(deps: HostDeps): number {
  const fs = statfsSync(path.dirname(deps.config.dataDir));
  return fs.blocks * fs.bsize;
}

/**
 * Writes the lab's settings file, pg_hba.conf and pg_ident.conf into PGDATA. Returns the fingerprint of what was
 * written and of what the running server last applied.
 */
export function writeLabConfig(deps: HostDeps, lab: LabConfig): { fingerprint: string; applied: string; fingerprintFile: string } {
  const { config } = deps;
  const fingerprint = createHash('sha256').update(lab.confText).update(lab.hbaText).update(lab.identText).digest('hex');
  const fingerprintFile = path.join(config.dataDir, `${LAB_CONF}.applied`);
  const applied = readLabFile(fingerprintFile, { maxBytes: 1024 }) ?? '';
  writeOwned(deps, path.join(config.dataDir, LAB_CONF), lab.confText);
  writeOwned(deps, path.join(config.dataDir, 'pg_hba.conf'), lab.hbaText);
  writeOwned(deps, path.join(config.dataDir, 'pg_ident.conf'), lab.identText);
  return { fingerprint, applied, fingerprintFile };
}

/** initdb once; the lab's role is the bootstrap superuser, reached over the socket by peer authentication only. */
async function initCluster(deps: HostDeps, dataChecksums: boolean): Promise<void> {
  const { config } = deps;
  if (existsSync(path.join(config.dataDir, 'PG_VERSION'))) return;
  await runProcess(
    path.join(config.pgBinDir, 'initdb'),
    ['-D', config.dataDir, '-U', LAB_ROLE, '-E', 'UTF8', '--locale=C', '--auth-local=peer', '--auth-host=scram-sha-256', ...(dataChecksums ? ['--data-checksums'] : [])],
    { ...asPostgresUser(deps), cwd: config.hostDir, timeoutMs: 600_000 },
  );
  // Durable, as initdb left the rest of the cluster: a power cut must not leave the include line's bytes as zeros.
  appendLabFile(path.join(config.dataDir, 'postgresql.conf'), `\ninclude_if_exists = '${LAB_CONF}'\n`, { owner: deps.osUser, durable: true });
}

/** The server's log file (pg_ctl -l); it lives in the host folder, not on the volume under test. */
export function serverLog(deps: HostDeps): string {
  return path.join(deps.config.hostDir, 'logs', 'postgres.log');
}

/** Bytes of a log read for its last lines at most: a long log's earlier part is never read. */
const TAIL_BYTES = 32 * 1024;
/** Characters of one log line a failure message keeps. */
const TAIL_LINE_CHARS = 300;

/**
 * The last lines of a log for a failure message, bounded (at most `lines` lines of TAIL_LINE_CHARS characters, from
 * the last TAIL_BYTES bytes). Logs live in folders the postgres user writes: read through the file guard, so a link
 * planted in the log's place is refused and named, never followed (root would read any file on the machine).
 */
export function tail(file: string, lines: number): string {
  let text: string | null;
  try {
    text = readLabFile(file, { maxBytes: TAIL_BYTES, tail: true });
  } catch (err) {
    if (err instanceof LabPathError) return `(not read: ${err.message})`;
    throw err;
  }
  if (text === null) return '(no log)';
  return lastLogLines(text, lines, TAIL_LINE_CHARS);
}

/**
 * Whether this is the activity's last attempt under its retry policy: text taken from the host's files goes into
 * that failure only (the history keeps the final failure and the one before it, on its start event). True when the
 * policy is unknown or unbounded.
 */
export function isFinalAttempt(): boolean {
  const { attempt, retryPolicy } = Context.current().info;
  const max = retryPolicy?.maximumAttempts ?? 0;
  return max <= 0 || attempt >= max;
}

/**
 * A failure whose message ends with text taken from a host's file: its stack trace (which Temporal records beside the
 * message) is fixed first, without it, so the text appears once in the failure, not twice.
 */
export function withFileText<E extends Error>(failure: E, text: string): E {
  void failure.stack;
  failure.message = `${failure.message}\n${text}`;
  return failure;
}

/** The host's generated database password (its secrets folder is root's own, mode 0700). */
export function readPassword(deps: Pick<HostDeps, 'config'>): string {
  const text = readLabFile(deps.config.passwordFile, { maxBytes: 1024 });
  if (text === null) throw new Error(`host ${deps.config.hostId}: no database password at ${deps.config.passwordFile}`);
  return text.trim();
}

/**
 * pg_ctl status on a PID file that names no process: one a power cut left empty or as zeros (never flushed, with
 * fsync = off). No server runs on it; PostgreSQL refuses to start until it is gone (power-cut.ts removes it then).
 */
const PID_FILE_NAMES_NO_SERVER = /pg_ctl: (the PID file ".*" is empty|invalid data in PID file ".*")/;

/** Whether the host's PostgreSQL runs, as pg_ctl status says. */
export async function isRunning(deps: HostDeps): Promise<boolean> {
  const r = await runProcess(path.join(deps.config.pgBinDir, 'pg_ctl'), ['status', '-D', deps.config.dataDir], {
    ...asPostgresUser(deps),
    cwd: deps.config.hostDir,
    okExitCodes: [0, 1, 3, 4],
  });
  if (r.exitCode === 1 && !PID_FILE_NAMES_NO_SERVER.test(r.stderr))
    throw new Error(`pg_ctl status -D ${deps.config.dataDir} exited with code 1: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ')}`);
  return r.exitCode === 0;
}

/** Runs pg_ctl as the Postgres user, heartbeating while it waits (crash recovery can take a while). */
export async function pgCtl(deps: HostDeps, args: string[]): Promise<void> {
  const ctx = Context.current();
  const stop = every(5_000, () => ctx.heartbeat({ step: `pg_ctl ${args[0]}` }));
  try {
    await runProcess(path.join(deps.config.pgBinDir, 'pg_ctl'), [...args, '-D', deps.config.dataDir], {
      ...asPostgresUser(deps),
      cwd: deps.config.hostDir,
      signal: ctx.cancellationSignal,
    });
  } finally {
    stop();
  }
}

/** Stops Postgres cleanly (a no-op when it is not running). */
export async function stopPostgres(deps: HostDeps, input: HostInput & { mode?: 'fast' | 'immediate' }): Promise<void> {
  assertHost(deps, input);
  if (await isRunning(deps)) await pgCtl(deps, ['stop', '-m', input.mode ?? 'fast', '-w', '-t', '600']);
}

/**
 * pg_hba.conf: the socket by peer authentication through the lab's ident map; TCP from loopback and the peers by
 * password (scram-sha-256). A peer's address is checked before it gets here (peerAddressProblems).
 */
export function renderHba(peers: string[]): string {
  const lines = [
    '# Written by Storage Lab: the socket by OS user (pg_ident.conf), passwords over TCP.',
    `local   all          all                      peer map=${IDENT_MAP}`,
    'host    all          all          127.0.0.1/32  scram-sha-256',
    'host    replication  all          127.0.0.1/32  scram-sha-256',
  ];
  for (const peer of [...new Set(peers)]) {
    const cidr = `${peer}/${isIPv6(peer) ? 128 : 32}`;
    lines.push(`host    all          all          ${cidr}  scram-sha-256`, `host    replication  all          ${cidr}  scram-sha-256`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * pg_ident.conf: the agent's own OS user and the Postgres user may be the lab's role; the client tools' user (which
 * runs the spec's script) may be the workload's role only. Without root there is no client user: the agent's user,
 * which runs the tools too, may be either.
 */
export function renderIdent(deps: Pick<HostDeps, 'osUser' | 'clientUser'>, agentUser = userInfo().username): string {
  const entries: [string, string][] = [[agentUser, LAB_ROLE]];
  if (deps.osUser && deps.osUser.name !== agentUser) entries.push([deps.osUser.name, LAB_ROLE]);
  entries.push(deps.clientUser ? [deps.clientUser.name, WORKLOAD_ROLE] : [agentUser, WORKLOAD_ROLE]);
  const lines = entries.map(([os, role]) => `${IDENT_MAP}  ${os}  ${role}`);
  return `# Written by Storage Lab: which OS user may connect over the socket as which role.\n${lines.join('\n')}\n`;
}

/**
 * Writes a file inside PGDATA owned by the Postgres user (the server must be able to read and rewrite it), durably:
 * the server reads it when it starts again after a crash or a power cut, as it reads what ALTER SYSTEM wrote (which it
 * flushes too).
 */
export function writeOwned(deps: HostDeps, file: string, text: string): void {
  writeLabFile(file, text, { mode: 0o600, owner: deps.osUser, durable: true });
}
