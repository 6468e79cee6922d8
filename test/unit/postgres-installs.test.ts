/**
 * Where PostgreSQL installations are found: Debian's, the tools cache's, and the shared folder the bootstrap uses
 * when the cache is private (a checkout below /root, which the postgres user cannot pass).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findPostgresBinDir, postgresInstalls } from '../../lib/postgres-binaries';

describe('PostgreSQL installations', () => {
  let dir: string;
  const install = (root: string, major: number) => {
    mkdirSync(path.join(dir, root, String(major), 'bin'), { recursive: true });
    writeFileSync(path.join(dir, root, String(major), 'bin', 'pg_ctl'), '');
  };
  const roots = () => ({ debian: path.join(dir, 'debian'), cache: path.join(dir, 'cache'), shared: path.join(dir, 'shared') });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-installs-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("finds a private cache's server in the shared folder, and prefers the cache's own when both have it", () => {
    install('debian', 15);
    install('shared', 17);
    expect(postgresInstalls(roots()).map((i) => [i.major, i.binDir.slice(dir.length + 1), i.clientTools])).toEqual([
      [17, 'shared/17/bin', false],
      [15, 'debian/15/bin', true],
    ]);
    expect(findPostgresBinDir(17, roots())).toBe(path.join(dir, 'shared', '17', 'bin'));
    // Without a version: the newest full installation (a server-only one is used only when asked for by its major).
    expect(findPostgresBinDir(undefined, roots())).toBe(path.join(dir, 'debian', '15', 'bin'));
    install('cache', 17);
    expect(postgresInstalls(roots()).filter((i) => i.major === 17).map((i) => i.binDir)).toEqual([path.join(dir, 'cache', '17', 'bin')]);
  });
});
