/** Finds this machine's PostgreSQL server binaries and the OS user that runs them. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const DEBIAN_ROOT = '/usr/lib/postgresql';

/** The bin folder of an installed PostgreSQL (the requested major, or the newest), or null when none is. */
export function findPostgresBinDir(major?: number): string | null {
  if (process.env.STORAGE_LAB_PG_BIN) return process.env.STORAGE_LAB_PG_BIN;
  if (!existsSync(DEBIAN_ROOT)) return null;
  const versions = readdirSync(DEBIAN_ROOT)
    .filter((v) => /^\d+$/.test(v) && existsSync(path.join(DEBIAN_ROOT, v, 'bin', 'pg_ctl')))
    .map(Number)
    .sort((a, b) => b - a);
  const pick = major === undefined ? versions[0] : versions.find((v) => v === major);
  return pick === undefined ? null : path.join(DEBIAN_ROOT, String(pick), 'bin');
}

/** Installed PostgreSQL majors, newest first. */
export function installedPostgresMajors(): number[] {
  if (!existsSync(DEBIAN_ROOT)) return [];
  return readdirSync(DEBIAN_ROOT)
    .filter((v) => /^\d+$/.test(v))
    .map(Number)
    .sort((a, b) => b - a);
}

export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

/** Looks a user up in /etc/passwd (Node has no getpwnam). */
export function lookupUser(name: string): OsUser | null {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return null;
}

/** The user Postgres runs as: `postgres` when we are root (Postgres refuses root), else ourselves. */
export function postgresOsUser(): OsUser | null {
  if (process.getuid?.() !== 0) return null;
  const user = lookupUser(process.env.STORAGE_LAB_PG_USER ?? 'postgres');
  if (!user) throw new Error('running as root but there is no "postgres" OS user: install PostgreSQL (infra/bootstrap.sh does)');
  return user;
}
