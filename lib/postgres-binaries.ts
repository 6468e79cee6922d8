/**
 * Finds this machine's PostgreSQL binaries and the OS user that runs them. Two kinds of installation:
 * Debian's (`/usr/lib/postgresql/<major>/bin`: server and client tools) and embedded server binaries in the tools
 * cache (`<cache>/postgresql/<major>/bin`: initdb, pg_ctl, postgres and contrib, no client tools; infra/bootstrap.sh
 * installs PostgreSQL 17 there from the npm registry). A cached server is driven by Debian's client tools.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { SetupError } from '../common/core/errors';
import { listOperatorDir, readOperatorFile } from './lab-fs';
import { labPaths, traversableByOthers } from './lab-paths';

const DEBIAN_ROOT = '/usr/lib/postgresql';

/** One installed major: where its server binaries are, and whether its client tools sit beside them. */
export interface PostgresInstall {
  major: number;
  binDir: string;
  /** Debian's full installation (true) or server binaries only, from the tools cache (false). */
  clientTools: boolean;
}

/** Where the bootstrap puts embedded server binaries: one folder per major. */
export function cachedPostgresRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(path.dirname(labPaths(env).cacheBin), 'postgresql');
}

/**
 * Where the bootstrap puts them instead when the tools cache is private (a checkout below /root): the postgres user,
 * who runs them, must reach them (infra/bootstrap.sh).
 */
export const SHARED_POSTGRES_ROOT = '/var/lib/storage-lab/postgresql';

function majorsUnder(root: string, clientTools: boolean): PostgresInstall[] {
  if (!existsSync(root)) return [];
  return listOperatorDir(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    .map((v) => ({ major: Number(v), binDir: path.join(root, v, 'bin'), clientTools }));
}

/** The folders installations are looked for in. */
export interface PostgresRoots {
  debian: string;
  cache: string;
  /** The shared folder for a private cache's servers (SHARED_POSTGRES_ROOT). */
  shared?: string;
  /** Whether the user that runs the servers reaches a bin folder (default: serverUserReaches). */
  reaches?: (binDir: string) => boolean;
}

const defaultRoots = (): PostgresRoots => ({ debian: DEBIAN_ROOT, cache: cachedPostgresRoot(), shared: SHARED_POSTGRES_ROOT });

/**
 * Whether the user that runs the servers can run this bin folder's `postgres`: always when we are not root (the
 * servers run as ourselves); as root (they run as the postgres user) when every folder above it lets others pass
 * and the binary lets others run it. A tools cache below a private folder (a checkout below /root) fails this.
 */
export function serverUserReaches(binDir: string): boolean {
  if (process.getuid?.() !== 0) return true;
  if (!traversableByOthers(binDir)) return false;
  try {
    return (statSync(path.join(binDir, 'postgres')).mode & 0o001) !== 0;
  } catch {
    return true; // No postgres there: running it fails for everyone, with its own message.
  }
}

/**
 * The one-line failure for a server folder the postgres user cannot reach, with the fix: the bootstrap, run as
 * root, puts a private cache's servers in SHARED_POSTGRES_ROOT (found before the cache's own then).
 */
export function unreachableServerError(binDir: string, user = process.env.STORAGE_LAB_PG_USER ?? 'postgres'): SetupError {
  return new SetupError(
    `PostgreSQL server binaries in ${binDir} are out of the ${user} user's reach (a folder above them lacks o+x, as a checkout below /root does); run infra/bootstrap.sh as root (it installs them in ${SHARED_POSTGRES_ROOT}/<major>), or set STORAGE_LAB_PG_BIN to a folder that user reaches`,
  );
}

/** Throws unreachableServerError when the servers' user cannot run this bin folder's `postgres`. */
export function requireServerUserReaches(binDir: string): void {
  if (!serverUserReaches(binDir)) throw unreachableServerError(binDir);
}

/**
 * Every installation found, newest first; for one major Debian's comes before the cache's, the cache's before the
 * shared one, unless the servers' user cannot reach the cache's (a private cache from before the bootstrap used the
 * shared folder): then the shared one replaces it.
 */
export function postgresInstalls(roots: PostgresRoots = defaultRoots()): PostgresInstall[] {
  const reaches = roots.reaches ?? serverUserReaches;
  const shared = roots.shared ? majorsUnder(roots.shared, false) : [];
  const cached = majorsUnder(roots.cache, false).filter((c) => reaches(c.binDir) || !shared.some((s) => s.major === c.major));
  const sharedUsed = shared.filter((s) => !cached.some((c) => c.major === s.major));
  return [...majorsUnder(roots.debian, true), ...cached, ...sharedUsed].sort(
    (a, b) => b.major - a.major || Number(b.clientTools) - Number(a.clientTools),
  );
}

/**
 * The bin folder of the server to run: the requested major, or without one the newest full installation (a
 * cached server is used only when asked for by its major, so a spec without postgres.version keeps its tools).
 */
export function findPostgresBinDir(major?: number, roots: PostgresRoots = defaultRoots()): string | null {
  if (process.env.STORAGE_LAB_PG_BIN) return process.env.STORAGE_LAB_PG_BIN;
  const installs = postgresInstalls(roots);
  const pick = major === undefined ? installs.find((i) => i.clientTools) : installs.find((i) => i.major === major);
  return pick?.binDir ?? null;
}

/**
 * The folder with client tools (pgbench, psql, pg_recvlogical, pg_amcheck) for a server folder: the same folder
 * when it has them, else the newest Debian installation (older clients drive a newer server over the protocol),
 * or null when there is none.
 */
export function findClientBinDir(serverBinDir: string, roots: PostgresRoots = defaultRoots()): string | null {
  if (existsSync(path.join(serverBinDir, 'psql'))) return serverBinDir;
  return postgresInstalls(roots).find((i) => i.clientTools)?.binDir ?? null;
}

/** A client tool's path on a host: from its client folder when the server's folder has none. */
export function clientTool(config: { pgBinDir: string; pgClientBinDir?: string }, tool: string): string {
  return path.join(config.pgClientBinDir ?? config.pgBinDir, tool);
}

/** Installed PostgreSQL majors, newest first. */
export function installedPostgresMajors(roots: PostgresRoots = defaultRoots()): number[] {
  return [...new Set(postgresInstalls(roots).map((i) => i.major))];
}

export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

/** Looks a user up in /etc/passwd (Node has no getpwnam). */
export function lookupUser(name: string): OsUser | null {
  for (const line of readOperatorFile('/etc/passwd').toString('utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return null;
}

/**
 * The unprivileged OS user that runs the client tools (pgbench, psql, pg_recvlogical, pg_amcheck) when the agent is
 * root: a workload never runs with more than that user's rights (it owns nothing but its own run folders). Null
 * when the agent is not root (the tools then run as the agent's own user, which is not root either).
 */
export function clientOsUser(): OsUser | null {
  if (process.getuid?.() !== 0) return null;
  const name = process.env.STORAGE_LAB_CLIENT_USER ?? CLIENT_OS_USER;
  const user = lookupUser(name);
  if (!user) throw new SetupError(`running as root but there is no "${name}" OS user for the workload: run infra/bootstrap.sh (it creates it)`);
  return user;
}

/** The OS user infra/bootstrap.sh creates for client tools. */
export const CLIENT_OS_USER = 'storage-lab';

/** The user Postgres runs as: `postgres` when we are root (Postgres refuses root), else ourselves. */
export function postgresOsUser(): OsUser | null {
  if (process.getuid?.() !== 0) return null;
  const user = lookupUser(process.env.STORAGE_LAB_PG_USER ?? 'postgres');
  if (!user) throw new SetupError('running as root but there is no "postgres" OS user: install PostgreSQL (infra/bootstrap.sh does)');
  return user;
}
