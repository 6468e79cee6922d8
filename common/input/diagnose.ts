/**
 * What a diagnose takes, from the CLI or as diagnoseWorkflow's one object argument, and the rules of its DSN by
 * where the input comes from (a workflow's input is kept in history and run by the control worker). Pure and
 * workflow-safe.
 */
import { z } from 'zod';
import type { SpecProblem } from '../core/errors';
import { int, InvalidSpecError, toProblem } from './spec';

/**
 * Where a diagnose input comes from. 'workflow': diagnoseWorkflow's input or a schedule's action, kept in history
 * and run by the control worker (root on the lab machine, the lab's secrets in its environment). 'cli': storage-lab
 * diagnose, run in the user's own process with the user's own rights.
 */
export type DiagnoseOrigin = 'workflow' | 'cli';

/** The only query parameters a DSN may carry: the lab sets the session's options, and the URL alone says where to connect. */
export const DSN_PARAMETERS = ['sslmode', 'application_name', 'connect_timeout'] as const;
type DsnParameter = (typeof DSN_PARAMETERS)[number];
const isDsnParameter = (key: string): key is DsnParameter => (DSN_PARAMETERS as readonly string[]).includes(key);

/**
 * libpq's sslmode values. verify-ca is refused (it needs a root certificate file, which a DSN may not name); prefer,
 * require and verify-full check the certificate and host name, as pg 8 reads them (lib/diagnose/connect.ts).
 */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** A workflow's passwordEnv must start with this, so no other secret of the control worker can be sent anywhere. */
export const WORKFLOW_PASSWORD_ENV_PREFIX = 'STORAGE_LAB_DSN_PASSWORD_';

/** The longest connect_timeout a DSN may ask for, in seconds. */
export const MAX_CONNECT_TIMEOUT_SECONDS = 60;

/** A DSN's parts, decoded as pg decodes them: what a connection is built from, and nothing else. */
export interface DsnParts {
  /** A host name, an IP address (IPv6 without brackets) or, from the CLI only, a Unix-socket directory; null: not given. */
  host: string | null;
  port: number | null;
  user: string | null;
  /** From the CLI only (user:password@); a workflow's DSN never holds one. */
  password: string | null;
  database: string | null;
  sslmode: SslMode | null;
  applicationName: string | null;
  connectTimeoutSeconds: number | null;
}

/** C0 controls and DEL (a raw tab or newline the URL parser would silently drop), C1 controls. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
/** A DNS name or IPv4 address (labels of letters, digits, '-' and '_'): what a network host may be besides a bracketed IPv6 address. */
const NETWORK_HOST = /^(?=[^/]{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/** How a password is given instead of in a DSN, from a workflow or the CLI. */
function passwordFix(origin: DiagnoseOrigin): string {
  return origin === 'workflow'
    ? `put it in a variable of the control worker named ${WORKFLOW_PASSWORD_ENV_PREFIX}<NAME> and give that name as passwordEnv`
    : 'give it in PGPASSWORD, a password file (PGPASSFILE, ~/.pgpass), a variable named by --password-env, or as user:password@ in the URL';
}

/**
 * Parses a postgresql:// URL with the URL parser pg uses (WHATWG URL, pg-connection-string's decoding: the user and
 * host percent-decoded, the database URI-decoded) and checks it against the rules of its origin. Only the
 * DSN_PARAMETERS are accepted, however another parameter is spelled or encoded; the host is a network host (the CLI
 * may also name a socket directory, percent-encoded); decoded parts may hold no control character. From a workflow,
 * the DSN holds no password in any form and names its host and user (nothing falls back to the worker's
 * environment). Problems never repeat a password or a parameter's value.
 */
export function parseDsn(dsn: string, origin: DiagnoseOrigin): { parts: DsnParts | null; problems: string[] } {
  if (CONTROL_CHARACTER.test(dsn) || /\s/.test(dsn))
    return { parts: null, problems: ['holds whitespace or a control character; percent-encode it (a space is %20) or remove it'] };
  let url: URL;
  try {
    url = new URL(dsn);
  } catch {
    return { parts: null, problems: ['is not a valid URL; write postgresql://user@host:port/database (a "/", "@" or ":" inside a name is percent-encoded)'] };
  }
  if (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:')
    return { parts: null, problems: ['must be a postgresql:// URL, e.g. postgresql://monitor@db.example:5432/app'] };
  const problems: string[] = [];
  const decode = (what: string, raw: string, decoder: (s: string) => string = decodeURIComponent): string | null => {
    if (!raw) return null;
    let value: string;
    try {
      value = decoder(raw);
    } catch {
      problems.push(`the ${what} holds a malformed percent escape; write a literal "%" as %25`);
      return null;
    }
    if (!CONTROL_CHARACTER.test(value)) return value;
    problems.push(`the ${what} holds a control character once percent-decoded; remove it`);
    return null;
  };
  if (url.hash) problems.push('has a #fragment, which a postgresql:// URL does not take; remove it (a "#" inside a name is written %23)');

  const user = decode('user name', url.username);
  const password = decode('password', url.password);
  if (origin === 'workflow') {
    if (url.password) problems.push(`holds a password, which would stay in the workflow's history; remove it and ${passwordFix(origin)}`);
    if (user?.includes(':')) problems.push(`the user name holds a percent-encoded ":", which reads as user:password; a workflow's DSN holds no password: ${passwordFix(origin)}`);
    if (!url.username) problems.push('names no user, and a workflow takes none from the control worker\'s environment; write postgresql://monitor@db.example:5432/app');
  }

  // IPv6 stays bracketed in url.hostname (the URL parser checked it); anything else is percent-decoded, as pg does.
  const ipv6 = /^\[(.+)\]$/.exec(url.hostname)?.[1] ?? null;
  const host = ipv6 ?? decode('host', url.hostname);
  if (host === null && !url.hostname) {
    if (origin === 'workflow') problems.push('names no host, and a workflow takes none from the control worker\'s environment; write postgresql://monitor@db.example:5432/app');
  } else if (host !== null && ipv6 === null && !NETWORK_HOST.test(host)) {
    if (!host.startsWith('/')) problems.push('the host is neither a host name nor an IP address; write e.g. db.example, 10.0.0.5 or [::1]');
    else if (origin === 'workflow')
      problems.push('names a Unix-socket directory as its host, which would reach the lab machine\'s own servers from the control worker; a workflow diagnoses a server over the network: give its host name or IP address');
  }
  const port = url.port ? Number(url.port) : null;
  if (port === 0) problems.push('port 0 is not a port; give 1-65535 or leave it out for 5432');
  const database = decode('database name', url.pathname.slice(1), decodeURI);

  const parameters: Partial<Record<DsnParameter, string>> = {};
  for (const [key, value] of url.searchParams) {
    if (!isDsnParameter(key)) {
      const name = /^[A-Za-z0-9_]{1,40}$/.test(key) ? `the query parameter "${key}"` : 'a query parameter (its name not shown)';
      const why = /pass/i.test(key) ? `a password never goes in the DSN: ${passwordFix(origin)}` : 'the lab sets the session\'s options itself, and the host, port, user and database come from the URL';
      problems.push(`${name} is not allowed (${why}); allowed: ${DSN_PARAMETERS.join(', ')}`);
    } else if (key in parameters) problems.push(`gives ${key} more than once; give it once`);
    else if (CONTROL_CHARACTER.test(value)) problems.push(`${key} holds a control character once percent-decoded; remove it`);
    else parameters[key] = value;
  }
  const sslmode = parameters.sslmode ?? null;
  if (sslmode === 'verify-ca')
    problems.push('sslmode=verify-ca needs a root certificate file, which a DSN may not name (sslrootcert is not allowed); use sslmode=verify-full, which checks the server\'s certificate against Node\'s CAs (NODE_EXTRA_CA_CERTS adds a private one) and its host name');
  else if (sslmode !== null && !(SSL_MODES as readonly string[]).includes(sslmode))
    problems.push(`sslmode must be one of ${SSL_MODES.filter((m) => m !== 'verify-ca').join(', ')}`);
  const timeout = parameters.connect_timeout;
  if (timeout !== undefined && !(/^\d{1,3}$/.test(timeout) && Number(timeout) >= 1 && Number(timeout) <= MAX_CONNECT_TIMEOUT_SECONDS))
    problems.push(`connect_timeout must be whole seconds from 1 to ${MAX_CONNECT_TIMEOUT_SECONDS}`);

  if (problems.length) return { parts: null, problems };
  return {
    parts: {
      host,
      port,
      user,
      password,
      database,
      sslmode: sslmode as SslMode | null,
      applicationName: parameters.application_name ?? null,
      connectTimeoutSeconds: timeout === undefined ? null : Number(timeout),
    },
    problems: [],
  };
}

/** What a diagnose takes, from the CLI or as the workflow's one object argument (the UI's Start Workflow form). */
export const DiagnoseInputSchema = z
  .object({
    /** postgresql://user@host:port/database; the password comes from the environment, never from here in a workflow. */
    dsn: z.string({ error: 'is required: a postgresql:// URL without a password' }).regex(/^postgres(ql)?:\/\//i, { error: 'must be a postgresql:// URL, e.g. postgresql://monitor@db.example:5432/app' }),
    seconds: int(1, 3600, 'seconds sampled').default(60),
    /** 10 to 20 samples a second by default. */
    intervalMs: int(10, 1000, 'ms between samples').default(50),
    /** pg_test_fsync beside the data directory when the server runs on the machine that diagnoses. */
    fsyncProbe: z.boolean().default(true),
    /** Name of an environment variable that holds the password: the CLI's (any), the worker's (WORKFLOW_PASSWORD_ENV_PREFIX only). */
    passwordEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' }).optional(),
  })
  .strict();
export type DiagnoseInput = z.output<typeof DiagnoseInputSchema>;

/**
 * Validates a diagnose input by the rules of its origin (parseDsn's, and from a workflow a passwordEnv with
 * WORKFLOW_PASSWORD_ENV_PREFIX), every problem at once; no problem repeats a password.
 */
export function parseDiagnoseInput(input: unknown, opts: { origin: DiagnoseOrigin }): { input: DiagnoseInput | null; problems: SpecProblem[] } {
  const parsed = DiagnoseInputSchema.safeParse(input ?? {});
  // zod's messages never hold the input (no reportInput), so a refused DSN's password is not repeated.
  const problems = parsed.success ? [] : parsed.error.issues.map(toProblem);
  const fields = (parsed.success ? parsed.data : (input ?? {})) as { dsn?: unknown; passwordEnv?: unknown };
  const refused = (path: string) => problems.some((p) => p.path === path);
  if (typeof fields.dsn === 'string' && !refused('dsn')) problems.push(...parseDsn(fields.dsn, opts.origin).problems.map((message) => ({ path: 'dsn', message })));
  const env = fields.passwordEnv;
  if (opts.origin === 'workflow' && typeof env === 'string' && !refused('passwordEnv') && !(env.startsWith(WORKFLOW_PASSWORD_ENV_PREFIX) && env.length > WORKFLOW_PASSWORD_ENV_PREFIX.length))
    problems.push({
      path: 'passwordEnv',
      message: `must name a variable of the control worker that starts with ${WORKFLOW_PASSWORD_ENV_PREFIX} (e.g. ${WORKFLOW_PASSWORD_ENV_PREFIX}REPLICA): no other variable of its environment is ever sent to a server an input names`,
    });
  return parsed.success && problems.length === 0 ? { input: parsed.data, problems: [] } : { input: null, problems };
}

/** A workflow-origin input (diagnoseWorkflow, its activity, a schedule's action) validated, or an InvalidSpecError naming every problem. */
export function resolveDiagnoseInput(input: unknown): DiagnoseInput {
  const { input: parsed, problems } = parseDiagnoseInput(input, { origin: 'workflow' });
  if (!parsed) throw new InvalidSpecError(problems, 'diagnose input');
  return parsed;
}

/**
 * An input as diagnoseWorkflow accepted it before the DSN rules (the schema alone): only runs started then replay
 * with it, and their activity checks the input anew by the workflow-origin rules.
 */
export function resolveDiagnoseInputBeforeDsnRules(input: unknown): DiagnoseInput {
  const parsed = DiagnoseInputSchema.safeParse(input ?? {});
  if (!parsed.success) throw new InvalidSpecError(parsed.error.issues.map(toProblem), 'diagnose input');
  return parsed.data;
}

/**
 * A DSN with anything that may be secret replaced by "***", safe to print and store: a URL's password (and a user
 * name holding a percent-encoded ":"), the value of every query parameter but the DSN_PARAMETERS, a fragment; a
 * key=value DSN's password. A URL that does not parse shows its scheme only.
 */
export function redactDsn(dsn: string): string {
  const trimmed = dsn.trim();
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(trimmed)?.[1];
  if (!scheme) return trimmed.replace(/(^|\s)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, '$1$2***');
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return `${scheme}://*** (not a valid URL, not shown)`;
  }
  if (url.password) url.password = '***';
  if (safeDecode(url.username).includes(':')) url.username = '***';
  const query = [...url.searchParams].map(([key, value]) => `${encodeURIComponent(key)}=${isDsnParameter(key) ? encodeURIComponent(value) : '***'}`);
  url.search = query.join('&');
  if (url.hash) url.hash = '***';
  return url.href;
}

/** decodeURIComponent, or the input when it holds a malformed escape. */
function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
