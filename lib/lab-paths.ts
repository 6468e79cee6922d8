/**
 * Where the lab keeps its state on this machine: the Temporal database, logs, pid files, results and host folders.
 * One folder, `STORAGE_LAB_HOME` (default: `.lab` in the project), so a test suite or a second lab can run beside
 * the demo without touching it.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { HostConfig } from '../common/core/hosts';
import { HOST_FOLDER_LENGTH } from '../common/core/ids';
import { makeLabDir, registerLabRoot } from './lab-fs';

/** The project folder (the one with package.json); dist/ sits below it. */
export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

export interface LabPaths {
  home: string;
  hostsDir: string;
  resultsDir: string;
  logsDir: string;
  runDir: string;
  temporalDb: string;
  cacheBin: string;
}

export function labPaths(env: NodeJS.ProcessEnv = process.env): LabPaths {
  const home = path.resolve(env.STORAGE_LAB_HOME ?? path.join(PROJECT_ROOT, '.lab'));
  return {
    home,
    hostsDir: path.resolve(env.STORAGE_LAB_HOSTS_DIR ?? defaultHostsDir(home)),
    resultsDir: path.resolve(env.STORAGE_LAB_RESULTS_DIR ?? path.join(home, 'results')),
    logsDir: path.join(home, 'logs'),
    runDir: path.join(home, 'run'),
    temporalDb: path.join(home, 'temporal.db'),
    cacheBin: path.resolve(env.STORAGE_LAB_CACHE ?? path.join(PROJECT_ROOT, '.cache'), 'bin'),
  };
}

/**
 * Host folders must be reachable by the postgres OS user when we run as root. A home below a private folder
 * (say /root) is not, so hosts then live under /var/lib/storage-lab, in a folder named after the home.
 */
function defaultHostsDir(home: string): string {
  const inHome = path.join(home, 'hosts');
  if (process.getuid?.() !== 0 || traversableByOthers(home)) return inHome;
  const tag = createHash('sha256').update(home).digest('hex').slice(0, 8);
  return path.join('/var/lib/storage-lab', `hosts-${tag}`);
}

/** Whether every folder on the path lets other users (the postgres user) pass through. */
export function traversableByOthers(dir: string): boolean {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      if ((statSync(d).mode & 0o001) === 0) return false;
    } catch {
      // Not created yet: mkdir gives it 0755.
    }
    if (d === path.dirname(d)) return true;
  }
}

/** Creates a folder (and parents) that the postgres user can traverse, through the lab's file guard (lib/lab-fs.ts). */
export function ensureDir(dir: string, mode = 0o755): string {
  makeLabDir(dir, { mode });
  accessSync(dir, constants.W_OK);
  return dir;
}

/** Where local backup stores live: beside the hosts folder (the Postgres OS user reaches it), or STORAGE_LAB_BACKUPS_DIR. */
export function backupsDirFor(hostsDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.STORAGE_LAB_BACKUPS_DIR) return path.resolve(env.STORAGE_LAB_BACKUPS_DIR);
  const base = path.basename(hostsDir);
  return base === 'hosts' ? path.join(path.dirname(hostsDir), 'backups') : `${hostsDir}-backups`;
}

/** The key local hosts derive shared database passwords from: beside the hosts folder, never below a host's. */
export function hostsKeyFile(hostsDir: string): string {
  return `${hostsDir}.key`;
}

/** Registers a lab's folders with the file guard: the only places the lab writes or deletes (lib/lab-fs.ts). */
export function registerLabPaths(paths: LabPaths, env: NodeJS.ProcessEnv = process.env): void {
  registerLabRoot(paths.home, paths.hostsDir, paths.resultsDir, paths.logsDir, paths.runDir, backupsDirFor(paths.hostsDir, env), hostsKeyFile(paths.hostsDir));
}

/**
 * The folders a host agent writes in: its host folder, the folder above its data folder (on EC2 the data device's own
 * mount, outside the host folder), and the local backup stores beside the hosts folder.
 */
export function hostAgentRoots(config: Pick<HostConfig, 'hostDir' | 'dataDir'>): string[] {
  return [...new Set([config.hostDir, path.dirname(config.dataDir), backupsDirFor(path.dirname(config.hostDir))])];
}

/** The longest unix socket path the kernel binds (sun_path holds 108 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** A host's Postgres socket below a hosts folder at its longest: `<hosts>/<folder>/run/.s.PGSQL.65535`. */
export function longestSocketPath(hostsDir: string, folder = 'x'.repeat(HOST_FOLDER_LENGTH)): string {
  return path.join(path.resolve(hostsDir), folder, 'run', '.s.PGSQL.65535');
}

/** Why hosts cannot live in a hosts folder because their sockets' paths would be too long, or null. */
export function socketPathProblem(hostsDir: string, folder?: string): string | null {
  const socket = longestSocketPath(hostsDir, folder);
  const bytes = Buffer.byteLength(socket);
  if (bytes <= MAX_SOCKET_PATH_BYTES) return null;
  const room = MAX_SOCKET_PATH_BYTES - (bytes - Buffer.byteLength(path.resolve(hostsDir)));
  return `hosts folder ${path.resolve(hostsDir)}: a host's Postgres socket there (${socket}) is ${bytes} bytes, more than the ${MAX_SOCKET_PATH_BYTES} a unix socket path may have; set STORAGE_LAB_HOSTS_DIR to a folder of at most ${room} bytes, for example under /var/lib`;
}
