/**
 * Rules for sizes that cannot fit and workloads that cannot do what a phase needs: the experiment's, and the pieces
 * the drill specs' rules share (drill-spec.ts), applied as a spec is resolved. Pure and workflow-safe: the CLI and
 * every workflow refuse such a spec before any host exists, naming the field and the fix.
 */
import type { SpecProblem } from '../core/errors';
import { SPARE_CONNECTIONS } from './postgres-settings';
import { slowestPhaseContext, type ExperimentSpec } from './spec';
import { phaseSpecProblems } from '../phases/registry';
import { scriptProblems, scriptSql } from './workload-script';

/**
 * Memory of a host's processes besides the page cache (which the kernel reclaims), measured with
 * bench/backend-memory.ts (PostgreSQL 15, the lab's random UPDATE, Postgres and pgbench in a cgroup v1 memory
 * group): 1.56 MiB more anonymous and kernel memory per client at shared_buffers 32 MiB (8-256 clients, 1.24
 * anonymous + 0.32 kernel), 2.06 MiB at 256 MiB, the difference being page tables (8 bytes per 4 KiB page of
 * shared_buffers each backend maps); the host agent took 60 MiB once polling, the server without clients ~40 MiB
 * besides shared memory.
 */
export const HOST_MEMORY = {
  /** A pgbench client: its backend and pgbench's side of the connection. */
  perClientMiB: 1.6,
  /** Page tables a backend needs per MiB of shared_buffers it maps. */
  pageTablesPerSharedBufferMiB: 1 / 512,
  /** The host agent, the postmaster and its auxiliary processes, shared memory beyond shared_buffers, a margin. */
  baseMiB: 128,
} as const;

/** Estimated memory of one client connection (its backend and pgbench's side) at a shared_buffers size, in MiB. */
export function perClientMiB(sharedBuffersMiB: number): number {
  return HOST_MEMORY.perClientMiB + sharedBuffersMiB * HOST_MEMORY.pageTablesPerSharedBufferMiB;
}

/** Where the memory rule finds its figures in a spec, and how it names them. */
export interface MemoryNeeds {
  limitMiB: number;
  sharedBuffersMiB: number;
  /** Connections the workload opens at once. */
  clients: number;
  /** Connections the lab opens beside them (the sampler, the agent, a marker writer). */
  labConnections: number;
  /** Fields for the messages: the memory limit, and the setting behind `clients`. */
  limitPath: string;
  clientsPath: string;
}

/**
 * The host's memory limit against shared_buffers, the base processes and the clients; at most one problem, on the
 * field that is out of line: the limit when shared_buffers alone does not fit, else the clients.
 */
export function memoryProblems(n: MemoryNeeds): SpecProblem[] {
  const base = n.sharedBuffersMiB + HOST_MEMORY.baseMiB;
  if (n.limitMiB < base)
    return [
      {
        path: n.limitPath,
        message: `${n.limitMiB} MiB is below shared_buffers (postgres.sharedBuffersMiB = ${n.sharedBuffersMiB}) plus ${HOST_MEMORY.baseMiB} MiB for the server's own processes and the host agent; raise ${n.limitPath} to at least ${base} or lower postgres.sharedBuffersMiB`,
      },
    ];
  const each = perClientMiB(n.sharedBuffersMiB);
  const connections = n.clients + n.labConnections;
  const needed = Math.ceil(base + connections * each);
  if (n.limitMiB >= needed) return [];
  const fits = Math.max(0, Math.floor((n.limitMiB - base) / each) - n.labConnections);
  return [
    {
      path: n.clientsPath,
      message: `${n.clients} clients (and ${n.labConnections} connections of the lab) need about ${needed} MiB but ${n.limitPath} is ${n.limitMiB}: shared_buffers ${n.sharedBuffersMiB} MiB + ${HOST_MEMORY.baseMiB} MiB for the server and the host agent + ${each.toFixed(2)} MiB per connection (measured: 1.6 MiB per backend and its pgbench connection, plus page tables of 1/512 of shared_buffers; sorts and hashes can add work_mem each); lower ${n.clientsPath} to at most ${fits} or raise ${n.limitPath} to at least ${needed}`,
    },
  ];
}

/** Where the connection rule finds its figures: the clients, and the settings that may override the lab's. */
export interface ConnectionNeeds {
  clients: number;
  clientsPath: string;
  /** Connections the lab opens beside the clients while they run (the sampler, the agent, a marker writer). */
  labConnections: number;
  /** The server's max_connections when the spec does not set it. */
  defaultMaxConnections: number;
  /** The spec's own settings (postgres.settings). */
  settings: Record<string, string | number | boolean>;
  settingsPath: string;
}

/** A whole number from a setting's value, or null when it is not one (the server's own check reports that). */
function wholeNumber(value: string | number | boolean | undefined): number | null {
  if (value === undefined || typeof value === 'boolean') return null;
  const s = String(value).trim();
  return /^\d+$/.test(s) ? Number(s) : null;
}

/**
 * Clients against max_connections: every client, the lab's own connections and the slots the server keeps for
 * superusers (superuser_reserved_connections, and reserved_connections on 16+) must fit.
 */
export function connectionProblems(n: ConnectionNeeds): SpecProblem[] {
  const set = wholeNumber(n.settings.max_connections);
  const max = set ?? n.defaultMaxConnections;
  const reserved = (wholeNumber(n.settings.superuser_reserved_connections) ?? 3) + (wholeNumber(n.settings.reserved_connections) ?? 0);
  const needed = n.clients + n.labConnections + reserved;
  if (needed <= max) return [];
  const where = set === null ? `the lab's max_connections of ${max}` : `${n.settingsPath}.max_connections = ${max}`;
  return [
    {
      path: set === null ? n.clientsPath : `${n.settingsPath}.max_connections`,
      message: `${n.clients} clients + ${n.labConnections} connections of the lab + ${reserved} reserved for superusers = ${needed}, more than ${where}; ${set === null ? `lower ${n.clientsPath} to at most ${max - n.labConnections - reserved}` : `raise max_connections to at least ${needed} or lower ${n.clientsPath}`}`,
    },
  ];
}

/** The script's problems, under its field. */
export function workloadScriptProblems(script: string, path: string): SpecProblem[] {
  return scriptProblems(script).map((message) => ({ path, message }));
}

/**
 * A script must run SQL: pgbench counts every pass through a script as a transaction, so one of meta-commands only
 * (`\set x 1`) makes millions a second, each a line of the transaction log, and measures nothing.
 */
export function scriptSqlProblems(script: string): SpecProblem[] {
  if (/[A-Za-z]/.test(scriptSql(script))) return [];
  return [
    {
      path: 'workload.script',
      message:
        'runs no SQL statement, only meta-commands: pgbench would count every pass as a transaction (millions a second, each a line of its transaction log) and measure nothing; add the statement the run measures',
    },
  ];
}

/**
 * Settings that write a server-log line for every statement (or every one of a sample, or every temporary file):
 * on the host's disk, millions of lines a run, which nothing bounds. Each with the values that do not, for the fix.
 */
const PER_STATEMENT_LOGGING: Readonly<Record<string, { off: (v: string) => boolean; fix: string; what: string }>> = {
  log_statement: { off: (v) => v === 'none', fix: 'set it to "none"', what: 'logs statements (all, mod or ddl ones, every execution)' },
  log_min_duration_statement: { off: (v) => v === '-1', fix: 'set it to -1', what: 'logs every statement that runs at least this long' },
  log_min_duration_sample: { off: (v) => v === '-1', fix: 'set it to -1', what: 'logs a sample of the statements that run at least this long' },
  log_transaction_sample_rate: { off: (v) => Number(v) === 0, fix: 'set it to 0', what: 'logs every statement of a sample of transactions' },
  log_duration: { off: isOff, fix: 'set it to off', what: 'logs the duration of every statement' },
  log_parser_stats: { off: isOff, fix: 'set it to off', what: "logs the parser's statistics of every statement" },
  log_planner_stats: { off: isOff, fix: 'set it to off', what: "logs the planner's statistics of every statement" },
  log_executor_stats: { off: isOff, fix: 'set it to off', what: "logs the executor's statistics of every statement" },
  log_statement_stats: { off: isOff, fix: 'set it to off', what: 'logs the statistics of every statement' },
  debug_print_parse: { off: isOff, fix: 'set it to off', what: 'logs the parse tree of every statement' },
  debug_print_rewritten: { off: isOff, fix: 'set it to off', what: 'logs the rewritten parse tree of every statement' },
  debug_print_plan: { off: isOff, fix: 'set it to off', what: 'logs the plan of every statement' },
  log_temp_files: { off: (v) => v === '-1', fix: 'set it to -1', what: 'logs every temporary file a statement writes' },
  log_min_messages: {
    off: (v) => !/^(debug[1-5]?|info|notice)$/.test(v),
    fix: 'set it to warning (the default), error, log, fatal or panic',
    what: 'logs debug, info or notice messages, which statements raise by the thousand',
  },
};

/** A boolean setting's value is off (the spellings the server accepts for false). */
function isOff(v: string): boolean {
  return ['off', 'false', 'no', '0'].includes(v);
}

/** Settings that would log per statement, each on its field with the value that logs nothing. */
export function serverLogProblems(settings: Record<string, string | number | boolean>, settingsPath: string): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [name, value] of Object.entries(settings)) {
    const rule = PER_STATEMENT_LOGGING[name.toLowerCase()];
    if (!rule || rule.off(String(value).trim().toLowerCase())) continue;
    problems.push({
      path: `${settingsPath}.${name}`,
      message: `${JSON.stringify(value)} ${rule.what}: on a host's disk that is millions of server-log lines a run, which nothing bounds; the lab refuses per-statement logging: ${rule.fix}, or remove it`,
    });
  }
  return problems;
}

/**
 * pgbench's per-transaction log (--log), one line a transaction ("client transaction latency script epoch usec"):
 * 32.1 bytes on average measured over 107,382 lines of the random UPDATE at 64 clients and 30.6 bytes over 927,128
 * of `SELECT 1` (PostgreSQL 15's pgbench); 48 bounds a line with 5-digit client ids and 10-digit counts.
 */
export const PGBENCH_LOG_BYTES_PER_TRANSACTION = 48;

/**
 * The most transactions a second one CPU of a host makes: the cheapest transaction there is (one `SELECT 1` round
 * trip; a script without SQL is refused) ran at 46,600 a second per vCPU, pgbench and the server sharing 2 vCPUs.
 */
export const MAX_TPS_PER_CPU = 50_000;

/** Worst-case bytes of the transaction logs one host keeps (warm-up and measured run) with `cpus` CPUs. */
export function pgbenchLogBytes(workload: { warmupSeconds: number; durationSeconds: number }, cpus: number): number {
  return (workload.warmupSeconds + workload.durationSeconds) * cpus * MAX_TPS_PER_CPU * PGBENCH_LOG_BYTES_PER_TRANSACTION;
}

/** An explicit volume size against what the host will write to it. */
export function volumeSizeProblems(sizeGiB: number | undefined, neededBytes: number, path: string, what: string): SpecProblem[] {
  if (sizeGiB === undefined || sizeGiB * 2 ** 30 >= neededBytes) return [];
  const gib = neededBytes / 2 ** 30;
  return [
    {
      path,
      message: `${sizeGiB} GiB cannot hold ${what}, about ${gib.toFixed(1)} GiB; raise it to at least ${Math.ceil(gib)} or remove it (the default fits the data)`,
    },
  ];
}

/** Connections the lab opens next to an experiment's clients: the sampler and the agent's own. */
const EXPERIMENT_LAB_CONNECTIONS = 2;

/** The experiment's rules on sizes and its workload; `volumeBytes` is what one host writes (spec.ts volumeBytes). */
export function experimentSpecRules(spec: ExperimentSpec, volumeBytes: number): SpecProblem[] {
  const { clients, script } = spec.workload;
  // Every memory limit a host of the run gets: host.memoryLimitMiB, or a class's own.
  const limits = new Map<string, number>();
  for (const [name, cls] of Object.entries(spec.storageClasses))
    if (cls.memoryLimitMiB === undefined) limits.set('host.memoryLimitMiB', spec.host.memoryLimitMiB);
    else limits.set(`storageClasses.${name}.memoryLimitMiB`, cls.memoryLimitMiB);
  const problems: SpecProblem[] = [
    ...[...limits].flatMap(([limitPath, limitMiB]) =>
      memoryProblems({
        limitMiB,
        sharedBuffersMiB: spec.postgres.sharedBuffersMiB,
        clients,
        labConnections: EXPERIMENT_LAB_CONNECTIONS,
        limitPath,
        clientsPath: 'workload.clients',
      }),
    ),
    ...connectionProblems({
      clients,
      clientsPath: 'workload.clients',
      labConnections: EXPERIMENT_LAB_CONNECTIONS,
      defaultMaxConnections: clients + SPARE_CONNECTIONS,
      settings: spec.postgres.settings,
      settingsPath: 'postgres.settings',
    }),
    ...workloadScriptProblems(script, 'workload.script'),
    ...scriptSqlProblems(script),
    // What the phases the spec runs need of the rest of it (a workload that writes WAL, ...).
    ...phaseSpecProblems(spec.phases, slowestPhaseContext(spec)),
    ...serverLogProblems(spec.postgres.settings, 'postgres.settings'),
  ];
  const what = `the data at scale ${spec.data.scale} with its indexes, WAL up to twice postgres.maxWalSizeMiB and what the phases write`;
  for (const [name, cls] of Object.entries(spec.storageClasses))
    problems.push(...volumeSizeProblems(cls.sizeGiB, volumeBytes, `storageClasses.${name}.sizeGiB`, what));
  return problems;
}
