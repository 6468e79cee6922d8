/**
 * Data sets for workflow tests and the history budget, with mocked activities (issue 31): a store in memory where the
 * first claimant of a key builds it and everyone after restores it, and host calls that return the same facts for a
 * publish and a restore. The real ones are tested on real Postgres (test/integration/data-sets.test.ts).
 */
import type { ControlActivities } from '../activities/control';
import type { HostActivities } from '../activities/host';
import type { DataSetFacts, DataSetManifest } from '../common/input/data-set';

export const FAKE_FACTS: DataSetFacts = {
  databaseBytes: 40_000_000,
  relations: { pgbench_accounts: { rows: 200_000, checksum: '42', heapBytes: 26_869_760, totalBytes: 31_424_512, allVisible: 3280, allFrozen: 3280 } },
};

/** The control side: claims, waits, manifests and releases of keys in one map (shared by every run of a test). */
export function fakeDataSetControl(
  calls: string[] = [],
  sets = new Map<string, DataSetManifest | 'building'>(),
): Pick<ControlActivities, 'claimDataSet' | 'waitForDataSet' | 'publishDataSetManifest' | 'releaseDataSet'> {
  const store = (key: string) => ({ kind: 'folder' as const, path: `/tmp/fake/_datasets/${key}` });
  return {
    async claimDataSet({ key }) {
      const set = sets.get(key);
      if (set && set !== 'building') {
        calls.push(`claim ${key} published`);
        return { state: 'published', key, store: store(key), manifest: set };
      }
      if (set === 'building') return { state: 'building', key, store: store(key), by: 'another run', claimedAt: new Date().toISOString() };
      sets.set(key, 'building');
      calls.push(`claim ${key} claimed`);
      return { state: 'claimed', key, store: store(key) };
    },
    async waitForDataSet({ key }) {
      const set = sets.get(key);
      return set && set !== 'building' ? { state: 'published', manifest: set, waitedSeconds: 0 } : { state: 'timeout', waitedSeconds: 0, detail: 'fake: never published' };
    },
    async publishDataSetManifest({ manifest }) {
      calls.push(`manifest ${manifest.key}`);
      sets.set(manifest.key, manifest);
      return '/tmp/fake/manifest';
    },
    async releaseDataSet({ key }) {
      if (sets.get(key) === 'building') sets.delete(key);
      return `released ${key}`;
    },
  };
}

/** The host side: the server's major, a publish and a restore that report FAKE_FACTS. */
export function fakeDataSetHost(calls: string[] = [], hostId = ''): Pick<HostActivities, 'describeServer' | 'publishDataSet' | 'restoreDataSet'> {
  return {
    async describeServer() {
      return { major: 15, version: 'postgres (PostgreSQL) 15.18' };
    },
    async publishDataSet() {
      calls.push(`publish ${hostId}`);
      return { facts: FAKE_FACTS, backup: { tool: 'wal-g', toolVersion: '3.0.8', type: 'full', label: 'base_1', walStart: '000000010000000000000002', walStop: '000000010000000000000002', seconds: 1, databaseBytes: 1, repositoryBytes: 1 } as never, seconds: 1, parts: { storageFactsSeconds: 0.1, archiveOnSeconds: 0.2, checksumSeconds: 0.5, backupSeconds: 0.6, archiveOffSeconds: 0.1 }, preparedWithoutCap: false };
    },
    async restoreDataSet() {
      calls.push(`restore ${hostId}`);
      return { backupLabel: 'base_1', fetchSeconds: 1, recoverSeconds: 1, restoreSeconds: 2.5, facts: FAKE_FACTS, amcheck: { ok: true, detail: 'clean' }, checkSeconds: 1, checkParts: { storageFactsSeconds: 0.1, checksumSeconds: 0.5, amcheckSeconds: 0.8, evictSeconds: 0.1 }, postgresVersion: '15.18', preparedWithoutCap: false };
    },
  };
}
