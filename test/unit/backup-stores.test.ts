/**
 * Where a folder backup store resolves, whatever the input says: below the lab's backups folder only. The spec's
 * rules refuse an absolute or `..` path first (common/input/fields.ts); this is the line below them, which the
 * lab's deletes rely on.
 */
import { backupStoreFolder, backupStoreProblem, resolveBackupStore } from '../../lib/backup-stores';
import { LabPathError } from '../../lib/lab-fs';
import { backupsDirFor } from '../../lib/lab-paths';

const hostsDir = '/var/lib/storage-lab/lab-a/hosts';
const env = {};
const backups = backupsDirFor(hostsDir, env);

describe('folder backup stores', () => {
  it('resolve below the backups folder: the folder itself, or a sub-folder given relative to it', () => {
    expect(backups).toBe('/var/lib/storage-lab/lab-a/backups');
    expect(backupStoreFolder({}, hostsDir)).toBe(backups);
    expect(backupStoreFolder({ path: 'team-a/drills' }, hostsDir)).toBe(`${backups}/team-a/drills`);
    expect(resolveBackupStore('exp-1/restore-drill', { kind: 'folder', path: 'team-a' }, hostsDir)).toEqual({ kind: 'folder', path: `${backups}/team-a/exp-1_2frestore-drill` });
  });

  it.each([['../hosts'], ['team-a/../../hosts'], ['/etc'], ['/var/lib/storage-lab/lab-a/backups-elsewhere']])('refuse %s, which resolves outside it', (given) => {
    expect(() => backupStoreFolder({ path: given }, hostsDir)).toThrow(LabPathError);
    expect(() => backupStoreFolder({ path: given }, hostsDir)).toThrow(/outside the lab's backups folder/);
    expect(backupStoreProblem({ kind: 'folder', path: given }, hostsDir, 'backup.store')).toMatchObject({ path: 'backup.store.path' });
  });

  it('name no problem for an S3 store, and refuse a run id that cannot be a folder', () => {
    expect(backupStoreProblem({ kind: 's3', bucket: 'b', prefix: 'p', region: 'us-east-1' }, hostsDir, 'backup.store')).toBeNull();
    expect(() => resolveBackupStore('..', { kind: 'folder' }, hostsDir)).toThrow(/names a folder itself or its parent/);
  });
});
