/**
 * A diagnose capture of any PostgreSQL (storage-lab diagnose, diagnoseWorkflow) and the verdict it comes to: what
 * bounds the server (storage, CPU, locks, its clients) or that it is idle, with the evidence. Pure and
 * workflow-safe: the CLI, the workflow's activity, the report and predict share it.
 */
import { z } from 'zod';
import { breakdownKeyOf, CPU_EVENT, SYNC_REP_EVENT } from './breakdown';
import type { Diagnostics } from './diagnostics';
import type { SpecProblem } from './errors';
import { int, InvalidSpecError, toProblem } from './spec';
import { median } from './stats';

export const CAPTURE_KIND = 'storage-lab/diagnose-capture';
export const CAPTURE_SCHEMA_VERSION = 1;

export const VERDICTS = ['storage-bound', 'cpu-bound', 'lock-bound', 'client-bound', 'idle'] as const;
export type DiagnoseVerdict = (typeof VERDICTS)[number];

/** Below this many sessions in a transaction on average, nothing bounds the server: it is idle. */
export const IDLE_SESSIONS = 0.1;

/** What the verdict rests on: where in-transaction time went, and the storage's own figures. */
export interface VerdictEvidence {
  /** Samples of in-transaction client backends (active plus idle in a transaction), and their mean number. */
  samples: number;
  avgActive: number;
  avgIdleInTransaction: number;
  /** Shares (0-1) of in-transaction time: storage waits, CPU, locks, the client (idle in a transaction, Client:*), other. */
  shares: Record<VerdictGroup, number>;
  /** The three wait events with the most samples, with their share. */
  topEvents: { event: string; share: number }[];
  /** blk_read_time / blks_read over the window; null without reads or without track_io_timing. */
  msPerBlockRead: number | null;
  trackIoTiming: boolean;
  /** pg_test_fsync's time for one 8 kB write + the server's wal_sync_method, when probed. */
  fsyncMs: number | null;
  /** Host CPU while sampled, when the server runs on this machine. */
  cpu: { coresBusy: number; cores: number } | null;
}

export const VERDICT_GROUPS = ['storage', 'cpu', 'lock', 'client', 'other'] as const;
export type VerdictGroup = (typeof VERDICT_GROUPS)[number];

/** The state the sampler gives an "idle in transaction" backend, as a pseudo event. */
export const IDLE_IN_TRANSACTION_EVENT = 'Client:IdleInTransaction';

/** Where a sampled wait event counts: I/O waits (and waits on another backend's I/O) are storage. */
export function verdictGroupOf(event: string): VerdictGroup {
  if (event === CPU_EVENT) return 'cpu';
  const [type, name = ''] = event.split(':');
  if (type === 'Client') return 'client';
  // Waiting for a synchronous standby is the network's and the standby's time, not this server's storage.
  if (event === SYNC_REP_EVENT) return 'other';
  if (type === 'IO' || name === 'BufferIO' || name === 'buffer_io') return 'storage';
  const part = breakdownKeyOf(event);
  if (part === 'pageReads' || part === 'walFsync') return 'storage';
  if (part === 'lockAndScheduler') return 'lock';
  return 'other';
}

/** The evidence from what the sampler saw, plus the capture's own figures. */
export function verdictEvidence(
  d: Pick<Diagnostics, 'waitEvents' | 'samples' | 'avgActiveSessions' | 'database' | 'cpu' | 'sessions'>,
  extra: { trackIoTiming: boolean; fsyncMs: number | null },
): VerdictEvidence {
  const counts: Record<string, number> = { ...d.waitEvents };
  const idle = (d.sessions?.avgIdleInTransaction ?? 0) * d.samples;
  if (idle > 0) counts[IDLE_IN_TRANSACTION_EVENT] = idle;
  const total = Object.values(counts).reduce((s, n) => s + n, 0);
  const shares = Object.fromEntries(VERDICT_GROUPS.map((g) => [g, 0])) as Record<VerdictGroup, number>;
  for (const [event, n] of Object.entries(counts)) shares[verdictGroupOf(event)] += total > 0 ? n / total : 0;
  const topEvents = Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([event, n]) => ({ event, share: total > 0 ? n / total : 0 }));
  return {
    samples: d.samples,
    avgActive: d.avgActiveSessions,
    avgIdleInTransaction: d.sessions?.avgIdleInTransaction ?? 0,
    shares,
    topEvents,
    msPerBlockRead: extra.trackIoTiming ? d.database.msPerBlockRead : null,
    trackIoTiming: extra.trackIoTiming,
    fsyncMs: extra.fsyncMs,
    cpu: d.cpu ? { coresBusy: d.cpu.coresBusy, cores: d.cpu.cores } : null,
  };
}

/**
 * The verdict: idle when fewer than IDLE_SESSIONS sessions were in a transaction on average; otherwise the group
 * that took the largest share of in-transaction time among storage, CPU, locks and the client ("other" waits,
 * such as IPC or timeouts, name no bound of their own).
 */
export function classify(e: VerdictEvidence): { verdict: DiagnoseVerdict; reason: string } {
  const sessions = e.avgActive + e.avgIdleInTransaction;
  if (e.samples === 0 || sessions < IDLE_SESSIONS)
    return { verdict: 'idle', reason: `${sessions.toFixed(2)} sessions in a transaction on average (idle below ${IDLE_SESSIONS})` };
  const ranked = (['storage', 'cpu', 'lock', 'client'] as const).map((g) => [g, e.shares[g]] as const).sort((a, b) => b[1] - a[1]);
  const [group, share] = ranked[0];
  const verdict: DiagnoseVerdict = group === 'storage' ? 'storage-bound' : group === 'cpu' ? 'cpu-bound' : group === 'lock' ? 'lock-bound' : 'client-bound';
  return { verdict, reason: `${labels[group]} took ${pct(share)} of in-transaction time, the largest share` };
}

const labels: Record<VerdictGroup, string> = {
  storage: 'storage waits (IO:*, WAL)',
  cpu: 'CPU (active, no wait event)',
  lock: 'locks and LWLocks',
  client: 'waiting on the client (idle in transaction, Client:*)',
  other: 'other waits',
};

/** The evidence in one line: the shares, the top events, ms per read, fsync latency, CPU. */
export function evidenceLine(e: VerdictEvidence): string {
  const parts = [
    `storage ${pct(e.shares.storage)}, CPU ${pct(e.shares.cpu)}, locks ${pct(e.shares.lock)}, client ${pct(e.shares.client)}, other ${pct(e.shares.other)} of in-transaction time`,
    `${e.avgActive.toFixed(2)} active + ${e.avgIdleInTransaction.toFixed(2)} idle in transaction on average`,
    e.topEvents.length ? `top: ${e.topEvents.map((t) => `${t.event} ${pct(t.share)}`).join(', ')}` : null,
    e.trackIoTiming ? (e.msPerBlockRead === null ? 'no block reads' : `${e.msPerBlockRead.toFixed(3)} ms per block read`) : 'ms per block read unknown (track_io_timing off)',
    e.fsyncMs === null ? null : `fsync ${e.fsyncMs.toFixed(2)} ms (pg_test_fsync, one 8 kB write)`,
    e.cpu ? `CPU ${e.cpu.coresBusy.toFixed(2)} of ${e.cpu.cores} cores busy` : null,
  ];
  return parts.filter(Boolean).join('; ');
}

/** The verdict line the CLI prints and tests look for. */
export function verdictLine(verdict: DiagnoseVerdict, e: VerdictEvidence): string {
  return `verdict: ${verdict} (${evidenceLine(e)})`;
}

/** pg_test_fsync's figures for the method the server uses, and where it wrote its test file. */
export interface FsyncProbe {
  method: string;
  opsPerSecond: number;
  usecsPerOp: number;
  /** Every method it compared with one 8 kB write: ops/s (null: not supported here). */
  oneWrite: Record<string, number | null>;
  testFileDir: string;
  device: string | null;
  seconds: number;
}

/** A standby streaming from the captured server, as pg_stat_replication showed it at the end of the window. */
export interface CapturedStandby {
  name: string;
  /** async, potential, sync or quorum. */
  syncState: string;
  state: string;
  /** Time between a local WAL flush and the standby's report of having flushed it (null: nothing recent to time). */
  flushLagMs: number | null;
  /** Of how many readings over the window flushLagMs is the median. */
  flushLagReadings?: number;
}

/**
 * The standbys of the last reading, each with the median of its flush lags over all readings (pg_stat_replication
 * shows one recent commit's lag, and readings a second apart vary several-fold).
 */
export function medianFlushLags(readings: CapturedStandby[][]): CapturedStandby[] {
  const last = readings[readings.length - 1] ?? [];
  return last.map((standby) => {
    const lags = readings.flatMap((r) => r.filter((s) => s.name === standby.name).map((s) => s.flushLagMs)).filter((v): v is number => v !== null);
    return { ...standby, flushLagMs: median(lags), flushLagReadings: lags.length };
  });
}

/**
 * How long a commit waits for its synchronous standbys beyond its own flush: the flush lag of the standby it waits
 * for last. Quorum (ANY k): the k-th fastest of the candidates; priority (FIRST k, or a plain list): the slowest of
 * the k standbys in sync. Null when commits do not wait for a standby (synchronous_commit off or local, no standby in
 * sync) or no flush lag was timed.
 */
export function syncStandbyWait(capture: Pick<DiagnoseCapture, 'settings' | 'replication'>): { waitMs: number; detail: string } | null {
  const commit = capture.settings.synchronous_commit;
  if (commit === 'off' || commit === 'local') return null;
  const standbys = capture.replication?.standbys ?? [];
  const quorum = standbys.filter((s) => s.syncState === 'quorum');
  const sync = standbys.filter((s) => s.syncState === 'sync');
  const lags = (list: CapturedStandby[]) => list.map((s) => s.flushLagMs).filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (quorum.length > 0) {
    const k = Number(/^\s*ANY\s+(\d+)/i.exec(capture.settings.synchronous_standby_names ?? '')?.[1] ?? 1);
    const timed = lags(quorum);
    if (timed.length < k) return null;
    return { waitMs: timed[k - 1], detail: `quorum: the ${ordinal(k)}fastest of ${standbyCount(quorum.length)} (${quorum.map((s) => s.name).join(', ')}) flushes ${timed[k - 1].toFixed(2)} ms after the primary` };
  }
  if (sync.length > 0) {
    const timed = lags(sync);
    if (timed.length < sync.length) return null;
    const slowest = timed[timed.length - 1];
    return { waitMs: slowest, detail: `priority: the slowest of ${standbyCount(sync.length)} in sync (${sync.map((s) => s.name).join(', ')}) flushes ${slowest.toFixed(2)} ms after the primary` };
  }
  return null;
}

const standbyCount = (n: number) => `${n} standby${n === 1 ? '' : 's'}`;

/** "", "2nd ", "3rd ", "4th ": the k of "the k-th fastest", nothing for the first. */
const ordinal = (n: number) => (n === 1 ? '' : `${n}${n === 2 ? 'nd' : n === 3 ? 'rd' : 'th'} `);

/** Everything a capture holds: what was sampled, the server's settings that matter, the probe, the verdict. */
export interface DiagnoseCapture {
  kind: typeof CAPTURE_KIND;
  schemaVersion: typeof CAPTURE_SCHEMA_VERSION;
  capturedAt: string;
  /** The server, without any password: user@host:port/database. */
  target: string;
  serverVersion: string;
  /** Whether the role could see other roles' sessions (pg_monitor or superuser). */
  privileges: { pgMonitor: boolean; superuser: boolean };
  settings: Record<string, string>;
  /** Whether the server's data directory is on this machine (then CPU, device and the fsync probe are its own). */
  local: { dataDirectory: string; device: string | null; memoryMiB: number; pageCacheMiB: number } | null;
  diagnostics: Diagnostics;
  /** Transactions a second, the capture's own left out. */
  tps: number;
  fsync: FsyncProbe | null;
  /** Standbys streaming from the server (captures before this field was added have none recorded). */
  replication?: { standbys: CapturedStandby[] };
  evidence: VerdictEvidence;
  verdict: DiagnoseVerdict;
  reason: string;
  /** What could not be measured and how to turn it on. */
  advice: string[];
}

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
 * require and verify-full check the certificate and host name, as pg 8 reads them (activities/diagnose/connect.ts).
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

/** What the workflow returns: the verdict and where the capture and its report are (never the DSN's password). */
export interface DiagnoseSummary {
  runId: string;
  target: string;
  location: string;
  verdict: DiagnoseVerdict;
  reason: string;
  verdictLine: string;
  tps: number;
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

const pct = (v: number) => `${Math.round(v * 100)} %`;
