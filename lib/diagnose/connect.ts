/**
 * A read-only connection to any PostgreSQL from a DSN (postgresql:// URL), built from the DSN's checked parts only
 * (parseDsn; pg never sees the string): the lab's session options come last, and before any other query the session
 * proves it is read-only. Where the password comes from depends on the origin: a workflow's only from the worker
 * variable its passwordEnv names (WORKFLOW_PASSWORD_ENV_PREFIX); the CLI's from the URL, --password-env,
 * PGPASSWORD or the libpq password file (PGPASSFILE, ~/.pgpass), as libpq would.
 */
import { Client, type ClientConfig } from 'pg';
import { parseDsn, redactDsn, WORKFLOW_PASSWORD_ENV_PREFIX, type DiagnoseOrigin, type DsnParts, type SslMode } from '../../common/input/diagnose';

/** What a connection may take: a sample query returns in well under this; anything slower is cut off, not waited on. */
const STATEMENT_TIMEOUT_MS = 5_000;
const LOCK_TIMEOUT_MS = 1_000;
const CONNECT_TIMEOUT_SECONDS = 10;
/** The session options the lab sets; a DSN can neither add nor replace them (its options parameter is refused). */
export const READ_ONLY_OPTIONS = `-c default_transaction_read_only=on -c statement_timeout=${STATEMENT_TIMEOUT_MS} -c lock_timeout=${LOCK_TIMEOUT_MS}`;

export interface ReadOnlyConnectOptions {
  origin: DiagnoseOrigin;
  /** Name of an environment variable holding the password (the value never leaves this process but to the server). */
  passwordEnv?: string;
}

/** Thrown when the server cannot be reached or refuses the role: the message names the target without its password. */
export class ConnectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectError';
  }
}

/** Thrown when the session is not read-only despite the lab's options: no retry makes it so. */
export class NotReadOnlyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotReadOnlyError';
  }
}

/** Connects read-only and proves it (SHOW transaction_read_only is the first query); the caller closes the client. */
export async function connectReadOnly(dsn: string, opts: ReadOnlyConnectOptions): Promise<Client> {
  const { parts, problems } = parseDsn(dsn, opts.origin);
  if (!parts) throw new ConnectError(`dsn: ${problems.join('; ')}`);
  const client = new Client(clientConfig(parts, opts));
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new ConnectError(`cannot connect to ${redactDsn(dsn)}: ${(err as Error).message}`);
  }
  try {
    await proveReadOnly(client, redactDsn(dsn));
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/**
 * The connection's settings from the DSN's parts, the lab's after the user's. From a workflow every field is given,
 * so nothing falls back to the control worker's PGHOST, PGPORT, PGUSER, PGDATABASE or PGSSLMODE; the CLI leaves
 * what the DSN does not say to pg, which takes them from the user's environment as libpq would.
 */
export function clientConfig(parts: DsnParts, opts: ReadOnlyConnectOptions): ClientConfig {
  const workflow = opts.origin === 'workflow';
  return {
    host: parts.host ?? undefined,
    port: parts.port ?? (workflow ? 5432 : undefined),
    user: parts.user ?? undefined,
    database: parts.database ?? (workflow ? (parts.user ?? undefined) : undefined),
    ssl: parts.sslmode ? tlsOf(parts.sslmode) : workflow ? false : undefined,
    application_name: parts.applicationName ?? 'storage-lab diagnose',
    connectionTimeoutMillis: (parts.connectTimeoutSeconds ?? CONNECT_TIMEOUT_SECONDS) * 1000,
    options: READ_ONLY_OPTIONS,
    // A function, so pg neither takes PGPASSWORD nor reads ~/.pgpass by itself: passwordFor decides by the origin.
    // pg calls it with the connection's resolved parameters (the environment's defaults applied).
    password: (resolved?: PasswordTarget) => passwordFor(parts, opts, resolved),
  };
}

/**
 * pg's TLS settings for an sslmode, as pg 8 reads them: disable (and allow, which libpq tries without TLS first)
 * connect without TLS; prefer, require and verify-full check the server's certificate against Node's CAs
 * (NODE_EXTRA_CA_CERTS adds a private one) and its host name, never TLS without a check.
 */
function tlsOf(mode: SslMode): ClientConfig['ssl'] {
  return mode === 'disable' || mode === 'allow' ? false : {};
}

/** Fails unless the session is read-only: a pooler that drops startup options, or a login trigger, would undo the lab's. */
async function proveReadOnly(client: Client, target: string): Promise<void> {
  const value = (await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only')).rows[0]?.transaction_read_only;
  if (value !== 'on')
    throw new NotReadOnlyError(
      `the session on ${target} is not read-only (SHOW transaction_read_only says ${JSON.stringify(value ?? null)} although the lab asked for default_transaction_read_only=on at startup): something between here and the server drops startup options (a connection pooler such as PgBouncer with ignore_startup_parameters = options?) or the server changes them at login (a login event trigger); connect to the server directly. Nothing else was queried`,
    );
}

/** Where pg connects, as the password file matches it. */
interface PasswordTarget {
  host?: string;
  port?: number;
  database?: string;
  user?: string;
}

/** The password the server asked for, from where the origin allows. */
async function passwordFor(parts: DsnParts, opts: ReadOnlyConnectOptions, target: PasswordTarget = {}): Promise<string> {
  if (parts.password !== null) return parts.password;
  if (opts.passwordEnv) {
    const value = process.env[opts.passwordEnv];
    if (value === undefined) throw new ConnectError(`the environment variable ${opts.passwordEnv} (named to hold the password) is not set`);
    return value;
  }
  if (opts.origin === 'workflow')
    throw new ConnectError(
      `the server asks for a password and the input names none: put it in a variable of the control worker named ${WORKFLOW_PASSWORD_ENV_PREFIX}<NAME> and give that name as passwordEnv (the worker never sends its own PGPASSWORD or password file to a server an input names)`,
    );
  if (process.env.PGPASSWORD !== undefined) return process.env.PGPASSWORD;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- pg's own dependency, without type declarations
  const pgpass = require('pgpass') as (info: object, cb: (pass: string | undefined) => void) => void;
  const { host, port, database, user } = target;
  const fromFile = await new Promise<string | undefined>((resolve) => pgpass({ host, port, database, user }, resolve));
  if (fromFile === undefined)
    throw new ConnectError('the server asks for a password and none was given: set PGPASSWORD, a password file (PGPASSFILE or ~/.pgpass), or name a variable that holds it (--password-env)');
  return fromFile;
}
