/**
 * A server's dynamic shared memory segments read from /proc/<pid>/maps (lib/pg-dsm.ts), on maps captured from a
 * PostgreSQL 17 postmaster and one of its processes (test/fixtures/proc-maps).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { mappedSegments, segmentsInMaps } from '../../lib/pg-dsm';

const fixture = (name: string) => readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'proc-maps', name), 'utf8');

describe('PostgreSQL dynamic shared memory in /proc/<pid>/maps', () => {
  it("finds the postmaster's control segment and a process's other segment, and nothing else", () => {
    expect(segmentsInMaps(fixture('postmaster-17.txt'))).toEqual(['/dev/shm/PostgreSQL.1545314934']);
    expect(segmentsInMaps(fixture('backend-17.txt')).sort()).toEqual(['/dev/shm/PostgreSQL.1307481982', '/dev/shm/PostgreSQL.1545314934']);
    // The main shared memory (/dev/zero), the SysV interlock, a removed segment, other files in /dev/shm: none.
    const others = [
      '7f41a17c6000-7f41b2e00000 rw-s 00000000 00:01 276949                     /dev/zero (deleted)',
      '7f41b6e2b000-7f41b6e2c000 rw-s 00000000 00:01 2459144                    /SYSV0009f601 (deleted)',
      '7f41b6e25000-7f41b6e2b000 rw-s 00000000 00:1b 48969                      /dev/shm/PostgreSQL.1545314934 (deleted)',
      '7f41b6e25000-7f41b6e2b000 rw-s 00000000 00:1b 48969                      /dev/shm/PostgreSQL.12x',
      '7f41b6e25000-7f41b6e2b000 rw-s 00000000 00:1b 48969                      /dev/shm/other/PostgreSQL.12',
      '7f41b6e25000-7f41b6e2b000 rw-s 00000000 00:1b 48969                      /tmp/PostgreSQL.12',
    ].join('\n');
    expect(segmentsInMaps(others)).toEqual([]);
  });

  it('reads each process once and skips one that is gone', () => {
    const maps: Record<number, string> = { 1: fixture('postmaster-17.txt'), 2: fixture('backend-17.txt') };
    const read = (pid: number) => {
      if (!(pid in maps)) throw new Error('ENOENT');
      return maps[pid];
    };
    const stat = (file: string) => {
      if (file.endsWith('.1307481982')) throw new Error('ENOENT'); // removed meanwhile: not returned
      return { ino: 48969, uid: 101, isFile: () => true };
    };
    expect(mappedSegments([1, 2, 3], read, stat)).toEqual([{ file: '/dev/shm/PostgreSQL.1545314934', ino: 48969, uid: 101 }]);
    // A name that is no longer a regular file is not returned either.
    expect(mappedSegments([1], read, () => ({ ino: 1, uid: 101, isFile: () => false }))).toEqual([]);
  });
});
