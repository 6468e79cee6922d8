/** Connections and tool environments for the Postgres of the host an agent runs on. */
import { Client } from 'pg';
import { LAB_DATABASE, LAB_ROLE } from '../common/core/names';
import type { HostConfig } from '../common/core/hosts';
import { toolEnv } from './process-runner';

/**
 * Startup options of the lab's superuser sessions. Only pg_catalog on the search path, so no function, operator or
 * table another role put in a schema (public on PostgreSQL 12-14) is ever resolved by them: the lab's SQL names the
 * pgbench tables public.pgbench_* and its own storage_lab.*. And no temp_file_limit: the host's limit bounds the
 * workload's sessions, while the lab's own sorts (primary keys, row checks) grow with the data set.
 */
export const LAB_SESSION_OPTIONS = '-c search_path=pg_catalog -c temp_file_limit=-1';

export interface LocalClientOptions {
  database?: string;
  applicationName?: string;
  statementTimeoutMs?: number;
}

/** A lab session's client over the host's Unix socket, not yet connected (a caller that must abandon a hung connect holds it). */
export function localClient(config: Pick<HostConfig, 'socketDir' | 'postgres'>, opts: LocalClientOptions = {}): Client {
  return new Client({
    host: config.socketDir,
    port: config.postgres.port,
    user: LAB_ROLE,
    database: opts.database ?? LAB_DATABASE,
    application_name: opts.applicationName ?? 'storage-lab',
    statement_timeout: opts.statementTimeoutMs,
    options: LAB_SESSION_OPTIONS,
  });
}

/**
 * Connects over the host's Unix socket as the lab's role: peer authentication maps the agent's OS user (and the
 * Postgres user) to it; the socket folder is open to the Postgres user and the client tools' user only.
 */
export async function connectLocal(
  config: Pick<HostConfig, 'socketDir' | 'postgres'>,
  opts: LocalClientOptions = {},
): Promise<Client> {
  const client = localClient(config, opts);
  await client.connect();
  // Keep idle connections from being reaped by the server's own timeouts mid-step.
  client.on('error', () => undefined);
  return client;
}

/** Runs fn with a fresh connection and always closes it. */
export async function withConnection<T>(
  config: Pick<HostConfig, 'socketDir' | 'postgres'>,
  fn: (c: Client) => Promise<T>,
  opts: { database?: string; applicationName?: string } = {},
): Promise<T> {
  const client = await connectLocal(config, opts);
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** libpq environment for psql, pgbench and friends talking to this host's Postgres as the lab's role: toolEnv() plus libpq's. */
export function libpqEnv(config: Pick<HostConfig, 'socketDir' | 'postgres'>, database = LAB_DATABASE): NodeJS.ProcessEnv {
  return {
    ...toolEnv(),
    PGHOST: config.socketDir,
    PGPORT: String(config.postgres.port),
    PGUSER: LAB_ROLE,
    PGDATABASE: database,
  };
}

/** Quotes an identifier for SQL text (for DDL, where parameters cannot go). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Quotes a literal for SQL text (for settings in ALTER SYSTEM and the like, where parameters cannot go). */
export function quoteLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
