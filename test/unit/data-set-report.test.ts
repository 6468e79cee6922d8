/** The report's data preparation section: restored hosts are named first, with load, publish and restore seconds, and a failed comparison shows. */
import { dataPreparationMarkdown } from '../../analysis/report/data-sets';
import type { ClusterResult } from '../../common/results/result';
import { demandsFromClass } from '../../common/model/demands';
import { recordedRun } from '../helpers/predict-fixtures';

const base = { className: 'gp3', index: 0, status: 'ok', emulated: true, startedAt: '', finishedAt: '', failedAttempts: [], phases: {} } as unknown as ClusterResult;
const loaded: ClusterResult = {
  ...base,
  hostId: 'h-gp3-0',
  dataSet: {
    key: 'ds-a',
    prepared: 'loaded-and-published',
    loadSeconds: 108.2,
    publishSeconds: 21.4,
    publishParts: { storageFactsSeconds: 0.3, archiveOnSeconds: 1.2, checksumSeconds: 6.5, backupSeconds: 18.0, archiveOffSeconds: 1.9 },
  },
};
const restored: ClusterResult = {
  ...base,
  hostId: 'h-nvme-0',
  dataSet: {
    key: 'ds-a',
    prepared: 'restored',
    loadSeconds: 108.2,
    publishSeconds: 21.4,
    restore: { fetchSeconds: 10, recoverSeconds: 3, restoreSeconds: 14, checkSeconds: 9, checkParts: { storageFactsSeconds: 0.2, checksumSeconds: 4.1, amcheckSeconds: 8.5, evictSeconds: 0.3 } },
    checks: [{ name: 'row counts', ok: true, detail: 'same' }],
    source: { runId: 'run-1', hostId: 'h-gp3-0', publishedAt: '' },
  },
};

describe('data preparation in the report', () => {
  it('is absent when no host used a data set', () => {
    expect(dataPreparationMarkdown({ classes: { gp3: { clusters: [base] } } as never })).toEqual([]);
  });
  it('says which hosts were restored, with the seconds side by side', () => {
    const text = dataPreparationMarkdown({ classes: { gp3: { clusters: [loaded] }, nvme: { clusters: [restored] } } as never }).join('\n');
    expect(text).toMatch(/1 of 2 hosts were restored from a published data set \(ds-a\), not loaded:\*\* h-nvme-0/);
    expect(text).toMatch(/\| h-gp3-0 \| ds-a \| loaded-and-published \| 108\.2 \| 21\.4 \| – \|/);
    expect(text).toMatch(/\| h-nvme-0 \| ds-a \| restored \| 108\.2 \(publisher's\) \| 21\.4 \(publisher's\) \| 14\.0: 10\.0 \+ 3\.0 \+ 1\.0 \| 9\.0 \|.*passed/);
    // Where the seconds went, per host.
    expect(text).toMatch(/- h-gp3-0 publish: storage facts 0\.3, archiving on 1\.2, row checksums 6\.5 beside the base backup 18\.0, archiving off 1\.9/);
    expect(text).toMatch(/- h-nvme-0 checks: storage facts 0\.2, row checksums 4\.1 beside pg_amcheck 8\.5, checkpoint and eviction 0\.3/);
  });
  it("says when the publish waited for WAL-G's build, so the load before it ran beside a compile", () => {
    const plain = dataPreparationMarkdown({ classes: { gp3: { clusters: [loaded] } } as never }).join('\n');
    expect(plain).not.toMatch(/WAL-G's build/);
    const waited = { ...loaded, dataSet: { ...loaded.dataSet!, publishParts: { ...loaded.dataSet!.publishParts!, walgBuildWaitSeconds: 42.5 } } };
    expect(dataPreparationMarkdown({ classes: { gp3: { clusters: [waited] } } as never }).join('\n')).toMatch(
      /- h-gp3-0 publish: .*archiving off 1\.9; before it, 42\.5 s waiting for WAL-G's build beside this first run on the machine, so the load ran beside that compile/,
    );
  });
  it('says how the contents were checked: the relation files, and whether they spared the row scan', () => {
    const withParts = (k: object) => ({ ...restored, dataSet: { ...restored.dataSet!, restore: { ...restored.dataSet!.restore!, checkParts: { ...restored.dataSet!.restore!.checkParts!, ...k } } } });
    const text = (k: object) => dataPreparationMarkdown({ classes: { nvme: { clusters: [withParts(k)] } } as never }).join('\n');
    expect(text({ relationFilesSeconds: 1.9, rowsScanned: false, checksumSeconds: 0 })).toMatch(/- h-nvme-0 checks: storage facts 0\.2, relation files 1\.9 \(the publisher's byte for byte: no row scanned\) beside pg_amcheck 8\.5/);
    expect(text({ relationFilesSeconds: 1.9, rowsScanned: true })).toMatch(/relation files 1\.9 \(not the publisher's\), then row checksums 4\.1 beside pg_amcheck/);
    const published = { ...loaded, dataSet: { ...loaded.dataSet!, publishParts: { ...loaded.dataSet!.publishParts!, relationFilesSeconds: 0.6 } } };
    expect(dataPreparationMarkdown({ classes: { gp3: { clusters: [published] } } as never }).join('\n')).toMatch(/archiving off 1\.9 and the relation files read in it 0\.6/);
  });
  it('says how many WAL segments were made ahead, how many during the fetch, and why none were staged', () => {
    const withParts = (k: object) => ({ ...restored, dataSet: { ...restored.dataSet!, restore: { ...restored.dataSet!.restore!, checkParts: { ...restored.dataSet!.restore!.checkParts!, ...k } } } });
    const text = (k: object) => dataPreparationMarkdown({ classes: { nvme: { clusters: [withParts(k)] } } as never }).join('\n');
    expect(text({})).not.toMatch(/WAL segments/);
    expect(text({ walSegments: 252, walSeconds: 5.4 })).toMatch(/beside them the WAL segments ahead: 252, in pg_wal 5\.4 after the checks began, checkpoint/);
    expect(text({ walSegments: 252, walSeconds: 0.3, walStaged: 252, walStagedSeconds: 7.9 })).toMatch(/WAL segments ahead: 252 \(252 of them written during the fetch, in 7\.9 from its start\), in pg_wal 0\.3/);
    expect(text({ walSegments: 252, walSeconds: 6.1, walStaged: 0, walStagedSeconds: 0.1, walStageError: 'dd: No space left on device' })).toMatch(/\(their staging during the fetch failed: dd: No space left on device\)/);
  });
  it('shows a failed comparison', () => {
    const bad = { ...restored, dataSet: { ...restored.dataSet!, checks: [{ name: 'checksums', ok: false, detail: 'pgbench_accounts differs' }] } };
    expect(dataPreparationMarkdown({ classes: { nvme: { clusters: [bad] } } as never }).join('\n')).toMatch(/\*\*failed\*\*: checksums: pgbench_accounts differs/);
  });
});

describe('a restored host in the prediction model', () => {
  it('takes its heap from the data set where it has no load result (the cache size of a run without its database size)', () => {
    const run = recordedRun('predict-check-2');
    const cluster = run.classes['local-disk'].clusters.find((c) => c.status === 'ok' && c.tpsRun)!;
    for (const c of run.classes['local-disk'].clusters) if (c.diagnostics) delete (c.diagnostics as { databaseBytes?: number }).databaseBytes;
    const heapBytes = cluster.load!.heapBytes;
    expect(heapBytes).toBeGreaterThan(0);
    const loadedCache = demandsFromClass(run, 'local-disk').cache;
    for (const c of run.classes['local-disk'].clusters) {
      c.dataSet = { key: 'ds-a', prepared: 'restored', heapBytes: c.load?.heapBytes };
      delete c.load;
    }
    const restoredCache = demandsFromClass(run, 'local-disk').cache;
    expect(loadedCache?.dataBytes).toBeGreaterThan(heapBytes);
    expect(restoredCache).toEqual(loadedCache);
  });
});
