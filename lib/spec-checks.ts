/**
 * The spec checked by the real tools, before any host exists: the server settings by the `postgres` binary of the
 * version that will run (its own catalogue, parser, units, enums and ranges), the workload script by pgbench's own
 * parser. Called by the preflight activities (experiment, drills) and by the CLI before it starts a workflow.
 * The pure rules (common/input/server-settings.ts, common/input/workload-script.ts) run first: a refused setting or
 * meta-command never reaches a tool. Each tool runs as an unprivileged user in an empty temporary folder, with an
 * empty environment and no server to reach.
 */
import path from 'node:path';
import { drillPostgresSettings, type ReplicaDrillSpec, type PowerCutDrillSpec, RestoreDrillSpec } from '../common/input/drill-spec';
import type { SpecProblem } from '../common/core/errors';
import { postgresSettings } from '../common/input/postgres-settings';
import { RANDOM_UPDATE_SCRIPT } from '../common/input/presets';
import { settingProblems } from '../common/input/server-settings';
import type { ExperimentSpec } from '../common/input/spec';
import { providerOf, type ProviderName } from '../common/providers/registry';
import { scriptProblems } from '../common/input/workload-script';
import { makeScratchDir, removeLabTree, writeLabFile } from './lab-fs';
import { findClientBinDir, findPostgresBinDir, lookupUser, postgresInstalls, postgresOsUser, requireServerUserReaches, type OsUser } from './postgres-binaries';
import { workloadArgs } from './pgbench-workload';
import { renderConf } from './postgres-conf';
import { ProcessError, runProcess } from './process-runner';

/** What the tools found: problems (field and fix) and notes on checks that could not run here. */
export interface ToolCheckOutcome {
  problems: SpecProblem[];
  notes: string[];
}

/**
 * Where the checks run. On the control plane a check that cannot run (no binary of that version) is a problem: the
 * spec would reach a host unchecked. In the CLI it is a note: the workflow's preflight checks it again.
 */
export type CheckPlace = 'control-plane' | 'cli';

/** A tool that answers in milliseconds; this bound only stops one that hangs. */
const TOOL_TIMEOUT_MS = 30_000;
/** The unprivileged user pgbench parses scripts as, when we are root: it owns nothing. */
const SCRIPT_CHECK_USER = 'nobody';

/** One message of the server: its text with any DETAIL and HINT lines after it. */
interface ServerMessage {
  text: string;
  parameter: string | null;
  line: number | null;
}

/** An empty folder of our own for one tool run, owned by the user the tool runs as; removed afterwards. */
async function inScratchFolder<T>(user: OsUser | null, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = makeScratchDir('storage-lab-check-', user);
  try {
    return await fn(dir);
  } finally {
    await removeLabTree(dir);
  }
}

/** A file in a scratch folder, owned by the tool's user and readable by it only. */
function writeScratchFile(file: string, text: string, user: OsUser | null): void {
  writeLabFile(file, text, { mode: 0o600, owner: user });
}

/** Nothing from our environment: no credentials, no service files, messages in English. */
function bareEnv(dir: string): NodeJS.ProcessEnv {
  return { LC_ALL: 'C', HOME: dir, PGSYSCONFDIR: dir, PGSERVICEFILE: path.join(dir, 'none'), PGPASSFILE: path.join(dir, 'none') };
}

const catalogues = new Map<string, Promise<Map<string, string>>>();

/**
 * The settings a server version documents for postgresql.conf (`postgres --describe-config`: no cluster needed):
 * lower-case name → the server's spelling. Developer and internal options are not in it.
 */
export function settingsCatalogue(binDir: string): Promise<Map<string, string>> {
  let cached = catalogues.get(binDir);
  if (!cached) {
    cached = runProcess(path.join(binDir, 'postgres'), ['--describe-config'], { env: { LC_ALL: 'C' }, timeoutMs: TOOL_TIMEOUT_MS }).then(
      (r) => new Map(r.stdout.split('\n').filter(Boolean).map((line) => {
        const name = line.split('\t')[0];
        return [name.toLowerCase(), name];
      })),
    );
    cached.catch(() => catalogues.delete(binDir));
    catalogues.set(binDir, cached);
  }
  return cached;
}

/**
 * Runs `postgres -D <scratch> -C shared_buffers` over a postgresql.conf holding `settings` as the lab writes them:
 * the server reads it with its own parser and rules and reports every problem it finds, then exits.
 */
async function serverReadsConfig(binDir: string, settings: Record<string, string>): Promise<ServerMessage[]> {
  const user = postgresOsUser();
  const conf = renderConf(settings);
  return inScratchFolder(user, async (dir) => {
    writeScratchFile(path.join(dir, 'postgresql.conf'), conf, user);
    try {
      await runProcess(path.join(binDir, 'postgres'), ['-D', dir, '-C', 'shared_buffers'], {
        uid: user?.uid,
        gid: user?.gid,
        cwd: dir,
        env: bareEnv(dir),
        timeoutMs: TOOL_TIMEOUT_MS,
      });
      return [];
    } catch (err) {
      if (!(err instanceof ProcessError) || err.reason !== 'exit') throw err;
      const messages = serverMessages(err.stderr);
      // Exit 1 with nothing about a setting: the check itself failed (a broken binary); not the spec's fault.
      if (messages.length === 0) throw err;
      return messages;
    }
  });
}

/** The server's log lines as messages about settings; its own notes and the closing FATAL are left out. */
export function serverMessages(stderr: string): ServerMessage[] {
  const messages: ServerMessage[] = [];
  for (const raw of stderr.split('\n')) {
    const m = /\b(LOG|WARNING|ERROR|FATAL|DETAIL|HINT):\s+(.*)$/.exec(raw);
    if (!m) {
      // A value with a line break continues the message on the next line.
      if (raw.trim() && messages.length) messages[messages.length - 1].text += ` ${raw.trim()}`;
      continue;
    }
    const [, level, text] = m;
    if (level === 'DETAIL' || level === 'HINT') {
      if (messages.length) messages[messages.length - 1].text += ` (${text.trim()})`;
      continue;
    }
    if (/^skipping missing configuration file|^configuration file ".*" contains errors/.test(text)) continue;
    messages.push({
      text: text.trim(),
      parameter: /parameter "([^"]+)"/.exec(text)?.[1] ?? null,
      line: Number(/ line (\d+)/.exec(text)?.[1]) || null,
    });
  }
  return messages;
}

/** A server message without the scratch file's name and line: they mean nothing to the spec's author. */
function withoutFile(text: string): string {
  return text.replace(/ in file "[^"]*"( line \d+)?/, '');
}

/** Edit distance, for "did you mean" on a misspelt setting. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

/** The closest documented setting to a name, when one is close enough to be a typo. */
function closest(name: string, catalogue: Map<string, string>): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const known of catalogue.values()) {
    const d = distance(name.toLowerCase(), known.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [known, d];
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 4)) ? best : null;
}

/** What the server check needs: the settings the host will get, which of them the spec wrote, and whose they are. */
export interface SettingsCheck {
  /** Every setting as the lab will write it (postgresSettings / drillPostgresSettings). */
  settings: Record<string, string>;
  /** The spec's own postgres.settings. */
  specSettings: Record<string, unknown>;
  /** The version that will run (spec.postgres.version), or the default installation's. */
  version: number | undefined;
  /** Spec fields behind the settings the lab derives (max_connections from workload.clients, ...). */
  derivedFrom: Record<string, string>;
  place: CheckPlace;
  provider: ProviderName;
}

/** Checks server settings with the real server of the version; every problem named by its field. */
export async function checkServerSettings(c: SettingsCheck): Promise<ToolCheckOutcome> {
  const problems: SpecProblem[] = [];
  const notes: string[] = [];
  const field = (name: string) => {
    const own = Object.keys(c.specSettings).find((k) => k.toLowerCase() === name.toLowerCase());
    return own ? `postgres.settings.${own}` : (c.derivedFrom[name.toLowerCase()] ?? `postgres.settings.${name}`);
  };
  // The pure rules first: a refused setting never reaches the server, not even its parser.
  for (const [name, value] of Object.entries(c.specSettings))
    for (const message of settingProblems(name, value)) problems.push({ path: `postgres.settings.${name}`, message });
  if (problems.length) return { problems, notes };

  const binDir = findPostgresBinDir(c.version);
  const custom = Object.keys(c.specSettings).length > 0;
  if (!binDir) {
    const have = [...new Set(postgresInstalls().map((i) => i.major))].join(', ') || 'none';
    const what = `PostgreSQL ${c.version ?? '(default)'} has no server binary here (installed: ${have})`;
    if (c.place === 'cli' || !custom) notes.push(`${what}: postgres.settings not checked by the server here${c.place === 'cli' ? '; the control worker checks them' : ''}`);
    // For hosts on this machine the preflight already says the version is missing; for instances elsewhere (EC2) the
    // control plane must have it to check.
    else if (!providerOf(c.provider).onThisMachine)
      problems.push({
        path: 'postgres.settings',
        message: `${what}, so the server cannot check these settings before hosts exist; install PostgreSQL ${c.version}'s server binaries on the control worker's machine (apt.postgresql.org: postgresql-${c.version}, no cluster needed) or remove postgres.settings`,
      });
    return { problems, notes };
  }
  // The server reads the settings as the postgres user: a folder it cannot reach is this machine's setup, not the spec.
  requireServerUserReaches(binDir);
  const major = c.version ?? Number(/\/(\d+)\/bin\/?$/.exec(binDir)?.[1]);
  const catalogue = await settingsCatalogue(binDir);
  const unlisted = Object.keys(c.specSettings).filter((name) => !catalogue.has(name.toLowerCase()));
  if (unlisted.length) {
    // The server's own words for names it does not know at all; a name it knows but does not document is a
    // developer or internal option.
    const unknown = new Map((await serverReadsConfig(binDir, c.settings)).filter((m) => m.parameter).map((m) => [m.parameter!.toLowerCase(), m.text]));
    for (const name of unlisted) {
      const said = unknown.get(name.toLowerCase());
      const guess = closest(name, catalogue);
      problems.push({
        path: `postgres.settings.${name}`,
        message: said
          ? `PostgreSQL ${major} says: ${withoutFile(said)}; ${guess ? `did you mean ${guess}? ` : ''}fix the name or remove it`
          : `not a postgresql.conf setting PostgreSQL ${major} documents (a developer or internal option: postgres --describe-config does not list it); remove it`,
      });
    }
  }
  const known = Object.fromEntries(Object.entries(c.settings).filter(([name]) => !unlisted.includes(name)));
  const lines = Object.keys(known).sort((a, b) => a.localeCompare(b));
  for (const m of await serverReadsConfig(binDir, known)) {
    // renderConf writes one comment line, then one setting a line in name order.
    const name = m.parameter ?? (m.line ? lines[m.line - 2] : undefined);
    problems.push({
      path: name ? field(name) : 'postgres.settings',
      message: `PostgreSQL ${major} refuses it: ${withoutFile(m.text)}; set a value it accepts or remove the setting`,
    });
  }
  return { problems, notes };
}

const pgbenchVersions = new Map<string, Promise<string>>();

/** "15.14" from `pgbench --version`. */
function pgbenchVersion(pgbench: string): Promise<string> {
  let v = pgbenchVersions.get(pgbench);
  if (!v) {
    v = runProcess(pgbench, ['--version'], { env: { LC_ALL: 'C' }, timeoutMs: TOOL_TIMEOUT_MS }).then((r) => /(\d+(\.\d+)?)/.exec(r.stdout)?.[1] ?? '?');
    v.catch(() => pgbenchVersions.delete(pgbench));
    pgbenchVersions.set(pgbench, v);
  }
  return v;
}

/** What the script check needs: the script and the flags the lab runs it with, and the version that will run. */
export interface ScriptCheck {
  script: string;
  scale: number;
  clients: number;
  threads: number;
  version: number | undefined;
  place: CheckPlace;
}

/**
 * Checks a workload script with the real pgbench: it parses every script before it connects, so pointed at a
 * socket folder that does not exist it either refuses the script (line, command, caret) or fails to connect.
 */
export async function checkWorkloadScript(c: ScriptCheck): Promise<ToolCheckOutcome> {
  const refused = scriptProblems(c.script);
  if (refused.length) return { problems: refused.map((message) => ({ path: 'workload.script', message })), notes: [] };
  const server = findPostgresBinDir(c.version) ?? findPostgresBinDir();
  const clients = server ? findClientBinDir(server) : null;
  if (!clients) {
    const what = 'no pgbench here to check workload.script';
    if (c.place === 'cli' || c.script === RANDOM_UPDATE_SCRIPT) return { problems: [], notes: [`${what}${c.place === 'cli' ? '; the control worker checks it' : ''}`] };
    return {
      problems: [{ path: 'workload.script', message: `${what} before hosts exist; install PostgreSQL's client tools on the control worker's machine (Debian: postgresql-client)` }],
      notes: [],
    };
  }
  const pgbench = path.join(clients, 'pgbench');
  const version = await pgbenchVersion(pgbench);
  const user = process.getuid?.() === 0 ? lookupUser(SCRIPT_CHECK_USER) : null;
  if (process.getuid?.() === 0 && !user) throw new Error(`no "${SCRIPT_CHECK_USER}" OS user to run pgbench's script check as`);
  return inScratchFolder(user, async (dir) => {
    const file = path.join(dir, 'script.sql');
    writeScratchFile(file, c.script, user);
    const args = [...workloadArgs(c, file), '--transactions', '1', '--host', path.join(dir, 'no-server'), '--port', '1'];
    const r = await runProcess(pgbench, args, { uid: user?.uid, gid: user?.gid, cwd: dir, env: bareEnv(dir), timeoutMs: TOOL_TIMEOUT_MS, okExitCodes: [0, 1] });
    const said = r.stderr.replace(/^pgbench: (error|detail|hint): /gm, '').trim();
    // Parsed: it got as far as connecting to a server that is not there.
    if (/connection to server|could not create connection/.test(said)) return { problems: [], notes: [] };
    return { problems: [{ path: 'workload.script', message: `pgbench ${version} refuses it: ${pgbenchSays(said, file)}; fix the script` }], notes: [] };
  });
}

/** pgbench's complaint on one line: `line 1: syntax error in command "set" at column 7 of "\set x"`. */
export function pgbenchSays(stderr: string, file: string): string {
  const [first, source, caret] = stderr.split('\n');
  const where = first.startsWith(`${file}:`) ? `line ${first.slice(file.length + 1)}` : first.replaceAll(file, 'the script');
  const column = caret?.indexOf('^') ?? -1;
  return source !== undefined ? `${where}${column >= 0 ? ` at column ${column + 1}` : ''} of "${source}"` : where;
}

/** Every tool check of an experiment spec. */
export async function checkExperimentWithTools(spec: ExperimentSpec, place: CheckPlace): Promise<ToolCheckOutcome> {
  const [settings, script] = await Promise.all([
    checkServerSettings({
      settings: postgresSettings(spec),
      specSettings: spec.postgres.settings,
      version: spec.postgres.version,
      derivedFrom: {
        shared_buffers: 'postgres.sharedBuffersMiB',
        max_wal_size: 'postgres.maxWalSizeMiB',
        max_connections: 'workload.clients',
        debug_io_direct: 'postgres.directIo',
      },
      place,
      provider: spec.provider,
    }),
    checkWorkloadScript({ ...spec.workload, scale: spec.data.scale, version: spec.postgres.version, place }),
  ]);
  return { problems: [...settings.problems, ...script.problems], notes: [...settings.notes, ...script.notes] };
}

/** Every tool check of a drill spec (the drills run pgbench's built-in script: settings only). */
export async function checkDrillWithTools(spec: RestoreDrillSpec | ReplicaDrillSpec | PowerCutDrillSpec, place: CheckPlace): Promise<ToolCheckOutcome> {
  return checkServerSettings({
    settings: drillPostgresSettings(spec),
    specSettings: spec.postgres.settings,
    version: spec.postgres.version,
    derivedFrom: { shared_buffers: 'postgres.sharedBuffersMiB' },
    place,
    provider: spec.provider,
  });
}
