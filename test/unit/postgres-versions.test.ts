/** Which PostgreSQL version can do what in the lab: spec rules, server settings, and finding the binaries. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { postgresSettings } from '../../common/input/postgres-settings';
import { versionProblems } from '../../common/input/postgres-versions';
import { InvalidSpecError } from '../../common/input/spec';
import { resolveSpec } from '../../common/input/resolve';
import { clientTool, findClientBinDir, findPostgresBinDir, installedPostgresMajors } from '../../lib/postgres-binaries';

function problemsOf(resolve: () => unknown): { path: string; message: string }[] {
  try {
    resolve();
  } catch (err) {
    if (err instanceof InvalidSpecError) return err.problems;
    throw err;
  }
  return [];
}

describe('version rules', () => {
  it('local-quick runs PostgreSQL 17 with buffered I/O, as the reference; ci stays on the default version; O_DIRECT on request', () => {
    const quick = resolveSpec({ preset: 'local-quick' });
    expect(quick.postgres).toMatchObject({ version: 17, directIo: 'off' });
    expect(postgresSettings(quick)).not.toHaveProperty('debug_io_direct');
    expect(postgresSettings(resolveSpec({ preset: 'local-quick', postgres: { directIo: 'data' } })).debug_io_direct).toBe('data');
    const ci = resolveSpec({ preset: 'ci' });
    expect(ci.postgres.version).toBeUndefined();
    expect(ci.postgres.directIo).toBe('off');
    expect(postgresSettings(ci)).not.toHaveProperty('debug_io_direct');
    expect(postgresSettings(resolveSpec({ preset: 'local-quick', postgres: { directIo: 'data+wal' } })).debug_io_direct).toBe('data, wal');
  });

  it.each([
    [{ postgres: { version: 15, directIo: 'data' } }, 'postgres.directIo', 'needs PostgreSQL 16+'],
    [{ postgres: { version: null, directIo: 'data' } }, 'postgres.directIo', 'set postgres.version to 17'],
    [{ postgres: { directIo: 'wal' } }, 'postgres.directIo', 'must be one of off, data, data+wal'],
    [{ durability: { enabled: true, tool: 'pgbackrest' } }, 'durability.tool', 'pgBackRest 2.45 does not know 17'],
    [{ durability: { drills: ['restore'], tool: 'pgbackrest' } }, 'durability.tool', 'back up with WAL-G'],
    [{ durability: { drills: ['failover'] } }, 'durability.drills', 'pg_basebackup / pg_rewind 15 refuse'],
  ])('refuses local-quick with %j, naming %s', (override, field, fragment) => {
    const problems = problemsOf(() => resolveSpec({ preset: 'local-quick', ...override }));
    expect(problems.find((p) => p.path === field)?.message).toContain(fragment);
  });

  it('lets 17 back up and replicate on AWS, where the host installs matching tools, and 15 anywhere', () => {
    expect(problemsOf(() => resolveSpec({ preset: 'seed-full', postgres: { version: 17, directIo: 'data' }, durability: { enabled: true, drills: ['failover'], backupStore: { kind: 's3', bucket: 'b-1' } } }))).toEqual([]);
    expect(problemsOf(() => resolveSpec({ preset: 'local-quick', postgres: { version: 15, directIo: 'off' }, durability: { enabled: true, drills: ['restore', 'failover'] } }))).toEqual([]);
  });

  it('lets WAL-G back up a local 17, and nothing replicate it', () => {
    const needs = { provider: 'local' as const, version: 17, directIo: 'data' as const, backups: true, replicas: false, fields: { version: 'v', directIo: 'd', backups: 'b', replicas: 'r' } };
    expect(versionProblems({ ...needs, backupTool: 'wal-g' })).toEqual([]);
    expect(versionProblems({ ...needs, backupTool: 'pgbackrest' }).map((p) => p.path)).toEqual(['b']);
    expect(versionProblems({ ...needs, backupTool: 'wal-g', replicas: true }).map((p) => p.path)).toEqual(['r']);
  });

  it('lets WAL-G (the default) archive a local 17, and keeps pgBackRest and local replicas on 15', () => {
    expect(problemsOf(() => resolveSpec({ preset: 'local-quick', durability: { enabled: true } }))).toEqual([]);
    expect(problemsOf(() => resolveRestoreDrill({ preset: 'ci', postgres: { version: 17 } }))).toEqual([]);
    expect(problemsOf(() => resolveRestoreDrill({ preset: 'ci', postgres: { version: 17 }, backup: { tool: 'pgbackrest' } }))[0]).toMatchObject({
      path: 'backup.tool',
      message: expect.stringContaining('back up with WAL-G'),
    });
    expect(problemsOf(() => resolveFailoverDrill({ preset: 'ci', postgres: { version: 17 } }))[0].message).toContain('pg_rewind');
    expect(problemsOf(() => resolveFailoverDrill({ preset: 'ci', postgres: { version: 15 } }))).toEqual([]);
  });
});

describe('PostgreSQL binaries', () => {
  let root: string;
  const roots = () => ({ debian: path.join(root, 'debian'), cache: path.join(root, 'cache') });
  const install = (dir: string, tools: string[]) => {
    mkdirSync(dir, { recursive: true });
    for (const t of tools) {
      writeFileSync(path.join(dir, t), '#!/bin/sh\n');
      chmodSync(path.join(dir, t), 0o755);
    }
  };

  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'pg-binaries-'));
    install(path.join(root, 'debian', '15', 'bin'), ['pg_ctl', 'postgres', 'psql', 'pgbench', 'pg_recvlogical']);
    install(path.join(root, 'cache', '17', 'bin'), ['pg_ctl', 'postgres', 'initdb']);
    mkdirSync(path.join(root, 'debian', '14')); // A leftover folder without binaries is no installation.
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('runs a cached server only when its major is asked for, with the newest full installation\'s client tools', () => {
    expect(installedPostgresMajors(roots())).toEqual([17, 15]);
    expect(findPostgresBinDir(undefined, roots())).toBe(path.join(root, 'debian', '15', 'bin'));
    const server17 = findPostgresBinDir(17, roots())!;
    expect(server17).toBe(path.join(root, 'cache', '17', 'bin'));
    expect(findClientBinDir(server17, roots())).toBe(path.join(root, 'debian', '15', 'bin'));
    expect(findClientBinDir(path.join(root, 'debian', '15', 'bin'), roots())).toBe(path.join(root, 'debian', '15', 'bin'));
    expect(findPostgresBinDir(16, roots())).toBeNull();
    expect(clientTool({ pgBinDir: server17, pgClientBinDir: '/c' }, 'pg_recvlogical')).toBe('/c/pg_recvlogical');
    expect(clientTool({ pgBinDir: '/s' }, 'pg_amcheck')).toBe('/s/pg_amcheck');
  });

  it('prefers Debian\'s full installation of a major the cache also has, and finds no client tools without one', () => {
    install(path.join(root, 'debian', '17', 'bin'), ['pg_ctl', 'psql']);
    expect(findPostgresBinDir(17, roots())).toBe(path.join(root, 'debian', '17', 'bin'));
    rmSync(path.join(root, 'debian'), { recursive: true });
    expect(findPostgresBinDir(undefined, roots())).toBeNull();
    expect(findClientBinDir(path.join(root, 'cache', '17', 'bin'), roots())).toBeNull();
  });
});
