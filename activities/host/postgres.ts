/**
 * Postgres lifecycle on the agent's host: create the cluster, configure it from the spec, start, stop, crash.
 * Every step is idempotent: a retried activity first looks at what is already there.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FAILURE_TYPES } from '../../common/errors';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LAB_DATABASE, LAB_ROLE, WORKLOAD_ROLE } from '../../common/names';
import { appendLabFile, writeLabFile } from '../../infra/lab-fs';
import { runProcess } from '../lib/process-runner';
import { every } from '../lib/progress';
import { quoteIdent, quoteLiteral, withConnection } from '../lib/pg';
import { asPostgresUser, assertHost, type HostDeps, type HostInput } from './deps';

/** Settings file the lab owns inside PGDATA, included from postgresql.conf. */
const LAB_CONF = 'storage-lab.conf';

export interface ConfigurePostgresInput extends HostInput {
  /** Server settings from the spec (see common/postgres-settings.ts); host-specific ones are added here. */
  settings: Record<string, string>;
  /** Extra pg_hba.conf lines (replication peers, ...). */
  hbaLines?: string[];
}

export interface PostgresInfo {
  postgresVersion: string;
  serverVersionNum: number;
  restarted: boolean;
}

/** Creates the cluster if needed, writes the lab's settings, (re)starts when they changed, and sets the password. */
export async function configurePostgres(deps: HostDeps, input: ConfigurePostgresInput): Promise<PostgresInfo> {
  assertHost(deps, input);
  const { config } = deps;
  await initCluster(deps);
  const { fingerprint, applied, fingerprintFile } = writeLabConfig(deps, input);

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
    // pg_ctl only says "examine the log output": put the log's last lines in the failure.
    const logTail = tail(serverLog(deps), 15);
    const message = `${(err as Error).message}\n--- ${serverLog(deps)} (last lines) ---\n${logTail}`;
    // A setting the server rejects will be rejected again: fail fast, naming the spec field.
    if (/contains errors|invalid value for parameter|unrecognized configuration parameter/.test(logTail))
      throw ApplicationFailure.nonRetryable(
        `postgres.settings: the server rejected its configuration; fix the setting named below\n${message}`,
        FAILURE_TYPES.invalidSpec,
      );
    throw new Error(message);
  }
  writeOwned(deps, fingerprintFile, fingerprint);

  const password = readFileSync(config.passwordFile, 'utf8').trim();
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
        const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [LAB_DATABASE]);
        if (exists.rowCount === 0) await c.query(`CREATE DATABASE ${quoteIdent(LAB_DATABASE)}`);
        // The workload's role: it logs in and, once the tables exist (load), reads and writes them; nothing more.
        const role = await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [WORKLOAD_ROLE]);
        if (role.rowCount === 0) await c.query(`CREATE ROLE ${quoteIdent(WORKLOAD_ROLE)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION`);
      }
      return { postgresVersion: v.rows[0].server_version, serverVersionNum: Number(v.rows[0].num), restarted };
    },
    { database: 'postgres' },
  );
}

/**
 * Writes the lab's settings (the host's own address, port and socket added) and pg_hba.conf into PGDATA.
 * Returns the fingerprint of what was written and of what the running server last applied.
 */
export function writeLabConfig(
  deps: HostDeps,
  input: Pick<ConfigurePostgresInput, 'settings' | 'hbaLines'>,
): { fingerprint: string; applied: string; fingerprintFile: string } {
  const { config } = deps;
  const settings = {
    ...input.settings,
    listen_addresses: config.postgres.host,
    port: String(config.postgres.port),
    unix_socket_directories: config.socketDir,
  };
  const confText = renderConf(settings);
  const hbaText = renderHba(input.hbaLines ?? []);
  const fingerprint = createHash('sha256').update(confText).update(hbaText).digest('hex');
  const fingerprintFile = path.join(config.dataDir, `${LAB_CONF}.applied`);
  const applied = existsSync(fingerprintFile) ? readFileSync(fingerprintFile, 'utf8') : '';
  writeOwned(deps, path.join(config.dataDir, LAB_CONF), confText);
  writeOwned(deps, path.join(config.dataDir, 'pg_hba.conf'), hbaText);
  return { fingerprint, applied, fingerprintFile };
}

/** initdb once; the lab's role is the bootstrap superuser, trusted on the host's own socket only. */
async function initCluster(deps: HostDeps): Promise<void> {
  const { config } = deps;
  if (existsSync(path.join(config.dataDir, 'PG_VERSION'))) return;
  await runProcess(
    path.join(config.pgBinDir, 'initdb'),
    ['-D', config.dataDir, '-U', LAB_ROLE, '-E', 'UTF8', '--locale=C', '--auth-local=trust', '--auth-host=scram-sha-256'],
    { ...asPostgresUser(deps), cwd: config.hostDir, timeoutMs: 600_000 },
  );
  appendLabFile(path.join(config.dataDir, 'postgresql.conf'), `\ninclude_if_exists = '${LAB_CONF}'\n`, { owner: deps.osUser });
}

/** The server's log file (pg_ctl -l); it lives in the host folder, not on the volume under test. */
export function serverLog(deps: HostDeps): string {
  return path.join(deps.config.hostDir, 'logs', 'postgres.log');
}

/** The last lines of a file, for failure messages. */
export function tail(file: string, lines: number): string {
  return existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '(no log)';
}

export async function isRunning(deps: HostDeps): Promise<boolean> {
  const r = await runProcess(path.join(deps.config.pgBinDir, 'pg_ctl'), ['status', '-D', deps.config.dataDir], {
    ...asPostgresUser(deps),
    cwd: deps.config.hostDir,
    okExitCodes: [0, 3, 4],
  });
  return r.exitCode === 0;
}

/** Runs pg_ctl as the Postgres user, heartbeating while it waits (crash recovery can take a while). */
export async function pgCtl(deps: HostDeps, args: string[]): Promise<void> {
  const ctx = Context.current();
  const stop = every(5_000, () => ctx.heartbeat({ phase: `pg_ctl ${args[0]}` }));
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

/** The lab's settings file as the host writes it: sorted, numbers bare, everything else quoted. */
export function renderConf(settings: Record<string, string>): string {
  const lines = Object.entries(settings)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} = ${/^-?\d+(\.\d+)?$/.test(v) ? v : quoteLiteral(v)}`);
  return `# Written by Storage Lab on every configure; edit the spec, not this file.\n${lines.join('\n')}\n`;
}

function renderHba(extra: string[]): string {
  return [
    '# Written by Storage Lab: trust on the host-private socket, passwords over TCP.',
    'local   all          all                      trust',
    'host    all          all          127.0.0.1/32  scram-sha-256',
    'host    replication  all          127.0.0.1/32  scram-sha-256',
    ...extra,
    '',
  ].join('\n');
}

/** Writes a file inside PGDATA owned by the Postgres user (the server must be able to read and rewrite it). */
export function writeOwned(deps: HostDeps, file: string, text: string): void {
  writeLabFile(file, text, { mode: 0o600, owner: deps.osUser });
}
