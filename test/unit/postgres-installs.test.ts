/**
 * Where PostgreSQL installations are found: Debian's, the tools cache's, and the shared folder the bootstrap uses
 * when the cache is private (a checkout below /root, which the postgres user cannot pass).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SetupError } from '../../common/core/errors';
import { findPostgresBinDir, postgresInstalls, SHARED_POSTGRES_ROOT, unreachableServerError } from '../../lib/postgres-binaries';

describe('PostgreSQL installations', () => {
  let dir: string;
  const install = (root: string, major: number) => {
    mkdirSync(path.join(dir, root, String(major), 'bin'), { recursive: true });
    writeFileSync(path.join(dir, root, String(major), 'bin', 'pg_ctl'), '');
  };
  // The postgres user reaches every folder unless a test says otherwise (the temporary folder itself is 0700).
  const roots = () => ({ debian: path.join(dir, 'debian'), cache: path.join(dir, 'cache'), shared: path.join(dir, 'shared'), reaches: () => true });
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

  it("uses the shared folder's server instead of a private cache's the postgres user cannot reach (a cache from before the bootstrap moved it)", () => {
    install('debian', 15);
    install('cache', 17);
    const privateCache = { ...roots(), reaches: (binDir: string) => !binDir.startsWith(path.join(dir, 'cache')) };
    // Only the private one: it is still found, so running it fails with unreachableServerError's fix, not "not installed".
    expect(findPostgresBinDir(17, privateCache)).toBe(path.join(dir, 'cache', '17', 'bin'));
    install('shared', 17);
    expect(findPostgresBinDir(17, privateCache)).toBe(path.join(dir, 'shared', '17', 'bin'));
    expect(postgresInstalls(privateCache).map((i) => i.binDir.slice(dir.length + 1))).toEqual(['shared/17/bin', 'debian/15/bin']);
    // A cache the user reaches keeps its precedence.
    expect(findPostgresBinDir(17, roots())).toBe(path.join(dir, 'cache', '17', 'bin'));
  });

  it('says in one line why a server folder is out of reach and how to fix it', () => {
    const err = unreachableServerError('/root/storage-lab/.cache/postgresql/17/bin');
    expect(err).toBeInstanceOf(SetupError);
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain("out of the postgres user's reach");
    expect(err.message).toContain('run infra/bootstrap.sh as root');
    expect(err.message).toContain(SHARED_POSTGRES_ROOT);
  });
});
