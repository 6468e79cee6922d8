/**
 * A read-only connection to any PostgreSQL from a DSN (postgresql:// URL). Every transaction on it is read-only
 * (default_transaction_read_only), statements and lock waits are bounded, and the password never travels in the
 * DSN when it can be avoided: it comes from an environment variable named by the caller, PGPASSWORD, or the
 * libpq password file (PGPASSFILE, ~/.pgpass).
 */
import { Client } from 'pg';
import { dsnHasPassword, redactDsn } from '../../common/diagnose';

/** What a connection may take: a sample query returns in well under this; anything slower is cut off, not waited on. */
const STATEMENT_TIMEOUT_MS = 5_000;
const LOCK_TIMEOUT_MS = 1_000;
const CONNECT_TIMEOUT_MS = 10_000;

export interface ReadOnlyConnectOptions {
  applicationName?: string;
  /** Name of an environment variable holding the password (the value never leaves this process). */
  passwordEnv?: string;
}

/** Thrown when the server cannot be reached or refuses the role: the message names the target without its password. */
export class ConnectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectError';
  }
}

/** Connects read-only; the caller closes it. */
export async function connectReadOnly(dsn: string, opts: ReadOnlyConnectOptions = {}): Promise<Client> {
  if (!/^postgres(ql)?:\/\//i.test(dsn.trim()))
    throw new ConnectError(`the DSN must be a postgresql:// URL (for example postgresql://monitor@db.example:5432/app), got ${redactDsn(dsn)}`);
  const client = new Client({
    connectionString: dsn,
    application_name: opts.applicationName ?? 'storage-lab diagnose',
    options: `-c default_transaction_read_only=on -c statement_timeout=${STATEMENT_TIMEOUT_MS} -c lock_timeout=${LOCK_TIMEOUT_MS}`,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // pg asks a password function when the server wants one; set after construction, because a connectionString's
  // parsed (empty) password would override one given to the constructor.
  if (!dsnHasPassword(dsn)) {
    const target = { host: client.host, port: client.port, database: client.database, user: client.user };
    (client as unknown as { password: () => Promise<string | undefined> }).password = () => passwordFor(target, opts.passwordEnv);
  }
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new ConnectError(`cannot connect to ${redactDsn(dsn)}: ${(err as Error).message}`);
  }
  return client;
}

/** The password the server asked for: the named environment variable, PGPASSWORD, then the password file. */
async function passwordFor(target: { host?: string; port?: number; database?: string; user?: string }, passwordEnv: string | undefined): Promise<string> {
  if (passwordEnv) {
    const value = process.env[passwordEnv];
    if (value === undefined) throw new ConnectError(`the environment variable ${passwordEnv} (named to hold the password) is not set`);
    return value;
  }
  if (process.env.PGPASSWORD !== undefined) return process.env.PGPASSWORD;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- pg's own dependency, without type declarations
  const pgpass = require('pgpass') as (info: object, cb: (pass: string | undefined) => void) => void;
  const fromFile = await new Promise<string | undefined>((resolve) => pgpass(target, resolve));
  if (fromFile === undefined)
    throw new ConnectError('the server asks for a password and none was given: set PGPASSWORD, a password file (PGPASSFILE or ~/.pgpass), or name a variable that holds it (--password-env, passwordEnv in the workflow)');
  return fromFile;
}
