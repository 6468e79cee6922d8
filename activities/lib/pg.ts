/** Connections and tool environments for the Postgres of the host an agent runs on. */
import { Client } from 'pg';
import { LAB_DATABASE, LAB_ROLE } from '../../common/names';
import type { HostConfig } from '../../infra/providers/host-provider';

/** Connects over the host's Unix socket (trusted: the socket folder belongs to the host). */
export async function connectLocal(
  config: Pick<HostConfig, 'socketDir' | 'postgres'>,
  opts: { database?: string; applicationName?: string; statementTimeoutMs?: number } = {},
): Promise<Client> {
  const client = new Client({
    host: config.socketDir,
    port: config.postgres.port,
    user: LAB_ROLE,
    database: opts.database ?? LAB_DATABASE,
    application_name: opts.applicationName ?? 'storage-lab',
    statement_timeout: opts.statementTimeoutMs,
  });
  await client.connect();
  // Keep idle connections from being reaped by the server's own timeouts mid-phase.
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

/** libpq environment for psql, pgbench and friends talking to this host's Postgres. */
export function libpqEnv(config: Pick<HostConfig, 'socketDir' | 'postgres'>, database = LAB_DATABASE): NodeJS.ProcessEnv {
  return {
    ...process.env,
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
