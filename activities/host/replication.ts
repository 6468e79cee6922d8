/**
 * Streaming replication between drill hosts: clone a standby with pg_basebackup, point it at a primary, set the
 * primary's synchronous standbys, report WAL positions, promote, and bring a killed primary back as a standby with
 * pg_rewind (or rebuild it). Peers connect over TCP as the lab role with a passfile on the host: the password
 * stays on the hosts, never in a workflow's input, result or history.
 */
import { Context } from '@temporalio/activity';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { SpecProblem } from '../../common/core/errors';
import { LAB_DATABASE, LAB_ROLE } from '../../common/core/names';
import { synchronousStandbyNames } from '../../common/input/postgres-settings';
import { appendLabFile, readLabFile, removeTreeAs, writeLabFile } from '../../lib/lab-fs';
import { ProcessError, runProcess, toolEnv } from '../../lib/process-runner';
import { heartbeatWhile } from '../progress';
import { LAB_SESSION_OPTIONS, quoteLiteral, withConnection } from '../../lib/pg';
import { asPostgresUser, assertHost, refuseInput, type HostDeps, type HostInput } from './deps';
import { isRunning, peerAddressProblems, readPassword, stopPostgres, writeOwned } from './postgres';

/** Where another host's Postgres listens (HostRecord.postgres). */
export interface PeerAddress {
  host: string;
  port: number;
}

/** Replication settings the lab owns, in their own file so a role change is a reload, not a rewrite of the rest. */
const REPLICATION_CONF = 'storage-lab-replication.conf';

/** A node's name (application_name, and a name in synchronous_standby_names): lower-case, as the drills name them. */
const NODE_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** Problems of a peer's address as replication and pg_rewind connect to it: an IP address and a TCP port. */
export function peerProblems(path: string, peer: unknown): SpecProblem[] {
  const p = peer as Partial<PeerAddress> | null;
  if (typeof p !== 'object' || p === null) return [{ path, message: 'must be a peer address ({ host, port })' }];
  const problems = peerAddressProblems(`${path}.host`, p.host);
  if (!(Number.isInteger(p.port) && p.port! >= 1 && p.port! <= 65_535)) problems.push({ path: `${path}.port`, message: `${JSON.stringify(p.port)} is not a TCP port` });
  return problems;
}

/** Problems of a node's name as it goes into a conninfo and synchronous_standby_names. */
export function nodeNameProblems(path: string, node: unknown): SpecProblem[] {
  return typeof node === 'string' && NODE_NAME.test(node) ? [] : [{ path, message: `${JSON.stringify(node)} is not a node name (${NODE_NAME.source})` }];
}

/** Every problem of the replication settings a host received; it builds the server's settings from them only when none. */
export function replicationProblems(input: Partial<ReplicationSettings>): SpecProblem[] {
  const problems = [...nodeNameProblems('node', input.node), ...(input.primary ? peerProblems('primary', input.primary) : [])];
  const standbys = input.synchronousStandbys ?? [];
  if (!Array.isArray(standbys)) problems.push({ path: 'synchronousStandbys', message: 'must be a list of node names' });
  else standbys.forEach((n, i) => problems.push(...nodeNameProblems(`synchronousStandbys[${i}]`, n)));
  return problems;
}

/** The passfile libpq reads for peer connections: owned by the Postgres user, mode 0600, in the host folder. */
export function ensurePassfile(deps: HostDeps): string {
  const file = path.join(deps.config.hostDir, 'pgpass');
  const password = readPassword(deps);
  // host:port:database:user:password, with ':' and '\' escaped.
  const escaped = password.replace(/([\\:])/g, '\\$1');
  writeLabFile(file, `*:*:*:${LAB_ROLE}:${escaped}\n`, { mode: 0o600, owner: deps.osUser });
  return file;
}

/** Connects to a peer's Postgres over TCP as the lab role, with the password this host keeps. */
export async function connectPeer(
  deps: HostDeps,
  peer: PeerAddress,
  opts: { applicationName: string; database?: string; timeoutMs?: number },
): Promise<Client> {
  const client = new Client({
    host: peer.host,
    port: peer.port,
    user: LAB_ROLE,
    password: readPassword(deps),
    database: opts.database ?? LAB_DATABASE,
    application_name: opts.applicationName,
    connectionTimeoutMillis: opts.timeoutMs ?? 2_000,
    options: LAB_SESSION_OPTIONS,
  });
  // A peer that dies mid-query surfaces as the query's error; the client's own 'error' event must not crash the agent.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/** A libpq connection string to a peer; the password comes from the passfile. */
export function peerConninfo(passfile: string, peer: PeerAddress, applicationName: string, database = 'postgres'): string {
  const q = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `host=${peer.host} port=${peer.port} user=${LAB_ROLE} dbname=${database} application_name=${applicationName} passfile=${q(passfile)}`;
}

export interface ReplicationSettings {
  /** The primary this server streams from when it is a standby; null for a primary. */
  primary: PeerAddress | null;
  /** This server's name as its primary sees it (application_name). */
  node: string;
  /** On a primary: the standbys any one of which confirms each commit ('ANY 1 (n2, n3)'); none for asynchronous replication. */
  synchronousStandbys: string[];
}

/** Writes the replication settings file (and its include line) into PGDATA. */
function writeReplicationConf(deps: HostDeps, settings: ReplicationSettings): void {
  const { dataDir } = deps.config;
  const conf = path.join(dataDir, 'postgresql.conf');
  const include = `include_if_exists = '${REPLICATION_CONF}'`;
  if (!(readLabFile(conf) ?? '').includes(include)) appendLabFile(conf, `\n${include}\n`, { owner: deps.osUser });
  const lines = ['# Written by Storage Lab: this server\'s place in the drill\'s replication.'];
  // The partition drill's async test empties it through a seam of the test's worker (common/core/test-seams.ts), never input.
  const standbys = deps.testSeams?.asyncQuorum ? [] : settings.synchronousStandbys;
  lines.push(`synchronous_standby_names = ${quoteLiteral(synchronousStandbyNames(standbys))}`);
  lines.push(`primary_conninfo = ${quoteLiteral(settings.primary ? peerConninfo(ensurePassfile(deps), settings.primary, settings.node) : '')}`);
  writeOwned(deps, path.join(dataDir, REPLICATION_CONF), `${lines.join('\n')}\n`);
}

/** Sets this server's replication role settings and reloads a running server (primary_conninfo reloads since PG 13). */
export async function setReplication(deps: HostDeps, input: HostInput & ReplicationSettings): Promise<void> {
  assertHost(deps, input);
  refuseInput(deps, replicationProblems(input));
  writeReplicationConf(deps, input);
  if (await isRunning(deps)) await withConnection(deps.config, (c) => c.query('SELECT pg_reload_conf()'), { database: 'postgres' });
}

async function basebackup(deps: HostDeps, primary: PeerAddress, node: string): Promise<void> {
  const passfile = ensurePassfile(deps);
  await removeTreeAs(deps.osUser, deps.config.dataDir);
  await heartbeatWhile('pg_basebackup', (signal) =>
    runProcess(
      path.join(deps.config.pgBinDir, 'pg_basebackup'),
      ['-h', primary.host, '-p', String(primary.port), '-U', LAB_ROLE, '-D', deps.config.dataDir, '-X', 'stream', '-c', 'fast', '--no-password'],
      {
        ...asPostgresUser(deps),
        env: { ...toolEnv(), PGPASSFILE: passfile, PGAPPNAME: node },
        cwd: deps.config.hostDir,
        timeoutMs: 6 * 3600_000,
        signal,
      },
    ),
  );
}

function markStandby(deps: HostDeps, primary: PeerAddress, node: string): void {
  writeReplicationConf(deps, { primary, node, synchronousStandbys: [] });
  writeOwned(deps, path.join(deps.config.dataDir, 'standby.signal'), '');
}

/** Clones a standby from a primary (once: an earlier attempt's finished clone is kept). Start it with configurePostgres. */
export async function cloneStandby(deps: HostDeps, input: HostInput & { primary: PeerAddress; node: string }): Promise<{ seconds: number }> {
  assertHost(deps, input);
  refuseInput(deps, [...peerProblems('primary', input.primary), ...nodeNameProblems('node', input.node)]);
  const started = Date.now();
  if (!existsSync(path.join(deps.config.dataDir, 'standby.signal'))) {
    await basebackup(deps, input.primary, input.node);
    markStandby(deps, input.primary, input.node);
  }
  return { seconds: (Date.now() - started) / 1000 };
}

/** Where this server's WAL is: what it received from its primary and what it replayed. */
export async function standbyPosition(
  deps: HostDeps,
  input: HostInput,
): Promise<{ inRecovery: boolean; receiveLsn: string | null; replayLsn: string | null }> {
  assertHost(deps, input);
  return withConnection(deps.config, async (c) => {
    const r = await c.query<{ rec: boolean; recv: string | null; replay: string | null }>(
      'SELECT pg_is_in_recovery() AS rec, pg_last_wal_receive_lsn()::text AS recv, pg_last_wal_replay_lsn()::text AS replay',
    );
    return { inRecovery: r.rows[0].rec, receiveLsn: r.rows[0].recv, replayLsn: r.rows[0].replay };
  });
}

/** Promotes this standby and waits until it accepts writes. */
export async function promoteStandby(deps: HostDeps, input: HostInput): Promise<{ seconds: number; timeline: number }> {
  assertHost(deps, input);
  return withConnection(deps.config, async (c) => {
    const started = Date.now();
    const r = await c.query<{ ok: boolean }>('SELECT pg_promote(true, 60) AS ok');
    if (!r.rows[0].ok) throw new Error(`${deps.config.hostId}: pg_promote did not finish within 60 s`);
    const seconds = (Date.now() - started) / 1000;
    const tli = await c.query<{ tli: string }>('SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS tli');
    return { seconds, timeline: parseInt(tli.rows[0].tli, 16) };
  });
}

/**
 * Brings a former primary back as a standby of `primary`: pg_rewind when its data folder survived (after a
 * CHECKPOINT on the new primary, so pg_rewind sees its new timeline), else, or when the rewind fails, a fresh clone.
 */
export async function rejoinAsStandby(
  deps: HostDeps,
  input: HostInput & { primary: PeerAddress; node: string },
): Promise<{ action: 'rewound' | 'rebuilt'; seconds: number; detail: string }> {
  assertHost(deps, input);
  refuseInput(deps, [...peerProblems('primary', input.primary), ...nodeNameProblems('node', input.node)]);
  const started = Date.now();
  // A killed primary is not running; one cut off (the partition drill) is, and its shutdown waits for its walsenders.
  const wasRunning = await isRunning(deps);
  await stopPostgres(deps, { hostId: input.hostId, mode: 'fast' });
  const stopped = wasRunning ? `stopped (fast) in ${((Date.now() - started) / 1000).toFixed(2)} s; ` : '';
  let action: 'rewound' | 'rebuilt' = 'rebuilt';
  let detail = 'no data folder survived: cloned from the new primary';
  if (existsSync(path.join(deps.config.dataDir, 'PG_VERSION'))) {
    const passfile = ensurePassfile(deps);
    try {
      const r = await heartbeatWhile('pg_rewind', async (signal) => {
        const checkpoint = await connectPeer(deps, input.primary, { applicationName: input.node, database: 'postgres', timeoutMs: 10_000 });
        try {
          await checkpoint.query('CHECKPOINT');
        } finally {
          await checkpoint.end().catch(() => undefined);
        }
        return runProcess(
          path.join(deps.config.pgBinDir, 'pg_rewind'),
          ['--target-pgdata', deps.config.dataDir, `--source-server=${peerConninfo(passfile, input.primary, input.node)}`],
          { ...asPostgresUser(deps), cwd: deps.config.hostDir, timeoutMs: 3600_000, signal },
        );
      });
      action = 'rewound';
      detail = `${r.stdout}\n${r.stderr}`
        .split('\n')
        .filter((l) => /diverged|no rewind required|Done/.test(l))
        .map((l) => l.replace(/^pg_rewind: /, ''))
        .join('; ');
    } catch (err) {
      if (!(err instanceof ProcessError) || err.reason !== 'exit') throw err;
      detail = `pg_rewind failed (${err.message.split('\n').slice(-1)[0]}); rebuilt from the new primary`;
      await basebackup(deps, input.primary, input.node);
    }
  } else {
    await basebackup(deps, input.primary, input.node);
  }
  markStandby(deps, input.primary, input.node);
  return { action, seconds: (Date.now() - started) / 1000, detail: stopped + detail };
}

/** Waits until the named standbys stream from this primary (and count for its synchronous quorum when `sync`). */
export async function waitForStandbys(
  deps: HostDeps,
  input: HostInput & { nodes: string[]; sync: boolean; timeoutSeconds: number },
): Promise<{ seconds: number; standbys: { node: string; state: string; syncState: string }[] }> {
  assertHost(deps, input);
  const ctx = Context.current();
  const started = Date.now();
  // Under the async test seam this host's quorum is empty (writeReplicationConf): no standby of it is synchronous.
  const sync = input.sync && !deps.testSeams?.asyncQuorum;
  return withConnection(deps.config, async (c) => {
    for (;;) {
      const rows = (
        await c.query<{ node: string; state: string; sync_state: string }>(
          'SELECT application_name AS node, state, sync_state FROM pg_stat_replication',
        )
      ).rows;
      const ready = input.nodes.every((n) =>
        rows.some((r) => r.node === n && r.state === 'streaming' && (!sync || r.sync_state === 'quorum' || r.sync_state === 'sync')),
      );
      const standbys = rows.map((r) => ({ node: r.node, state: r.state, syncState: r.sync_state }));
      if (ready) return { seconds: (Date.now() - started) / 1000, standbys };
      if (Date.now() - started > input.timeoutSeconds * 1000)
        throw new Error(
          `standbys ${input.nodes.join(', ')} not streaming${sync ? ' synchronously' : ''} to ${deps.config.hostId} within ${input.timeoutSeconds} s; pg_stat_replication: ${JSON.stringify(standbys)}`,
        );
      ctx.heartbeat({ step: 'waiting for standbys', standbys });
      await ctx.sleep(100);
    }
  });
}
