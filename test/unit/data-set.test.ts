/**
 * Data sets (common/input/data-set.ts): the key changes with every component that changes what a load leaves on disk
 * and with nothing else; the manifest is checked as input; the comparison of a restored host fails on each kind of
 * difference it exists to catch, and passes on an equal one.
 */
import {
  DATA_SET_KEY_LENGTH,
  LOADER_VERSION,
  checksumMethodFor,
  compareDataSet,
  dataSetKey,
  dataSetKeyParts,
  dataSetsOff,
  isDataSetKey,
  keysCheck,
  planPreparation,
  manifestProblems,
  relationFileDifferences,
  type DataSetFacts,
  type RelationFiles,
  type DataSetKeyParts,
  type KeyReadings,
} from '../../common/input/data-set';
import { scanNode } from '../../activities/host/data-set';
import { parseXxhsum, relationFileLabel } from '../../activities/host/relation-files';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { resolveSpec } from '../../common/input/resolve';
import { planRun } from '../../common/input/plan';
import { estimateCost, estimatedHostHours } from '../../common/input/cost';
import { HOURS_PER_MONTH } from '../../common/providers/aws';
import { s3DataSetPathsAt, s3DataSetStore } from '../../lib/data-sets';

const spec = { data: { scale: 250 }, postgres: { settings: { shared_buffers: '1GB' } as Record<string, string> } };
const base = dataSetKeyParts(spec, 15);

describe('data set key', () => {
  it('is one safe path segment of a fixed shape', () => {
    const key = dataSetKey(base);
    expect(key).toMatch(new RegExp(`^ds-[a-z2-7]{${DATA_SET_KEY_LENGTH}}$`));
    expect(isDataSetKey(key)).toBe(true);
    for (const bad of ['../x', 'ds-', `ds-${'a'.repeat(DATA_SET_KEY_LENGTH)}/..`, `DS-${'a'.repeat(DATA_SET_KEY_LENGTH)}`, `ds-${'1'.repeat(DATA_SET_KEY_LENGTH)}`, 42, null])
      expect(isDataSetKey(bad)).toBe(false);
  });

  it('is a function of its parts alone (key order does not matter)', () => {
    const reordered: DataSetKeyParts = JSON.parse(JSON.stringify({ settings: base.settings, initdb: base.initdb, loaderVersion: base.loaderVersion, schema: base.schema, scale: base.scale, postgresMajor: base.postgresMajor }));
    expect(dataSetKey(reordered)).toBe(dataSetKey(base));
  });

  const changes: [string, (p: DataSetKeyParts) => DataSetKeyParts][] = [
    ['PostgreSQL major', (p) => ({ ...p, postgresMajor: 17 })],
    ['scale', (p) => ({ ...p, scale: 251 })],
    ['fill factor', (p) => ({ ...p, schema: { ...p.schema, fillFactor: 90 } })],
    ['freeze', (p) => ({ ...p, schema: { ...p.schema, freeze: false } })],
    ['aid type', (p) => ({ ...p, schema: { ...p.schema, aidType: 'bigint' } })],
    ['loader version', (p) => ({ ...p, loaderVersion: LOADER_VERSION + 1 })],
    ['initdb format', (p) => ({ ...p, initdb: `${p.initdb} checksums=on` })],
    ['an on-disk setting', (p) => ({ ...p, settings: { default_toast_compression: 'lz4' } })],
  ];
  it.each(changes)('changes with the %s', (_name, change) => {
    expect(dataSetKey(change(base))).not.toBe(dataSetKey(base));
  });

  it('takes the spec components that matter and nothing else', () => {
    const key = dataSetKey(base);
    expect(dataSetKey(dataSetKeyParts({ ...spec, data: { scale: 251 } }, 15))).not.toBe(key);
    expect(dataSetKey(dataSetKeyParts(spec, 16))).not.toBe(key);
    expect(dataSetKey(dataSetKeyParts({ ...spec, postgres: { settings: { ...spec.postgres.settings, default_statistics_target: '500' } } }, 15))).not.toBe(key);
    // Settings of how the server runs, and the load's own speed, make the same rows.
    expect(dataSetKey(dataSetKeyParts({ ...spec, postgres: { settings: { shared_buffers: '4GB', work_mem: '64MB' } } }, 15))).toBe(key);
    const a = resolveSpec({ preset: 'local-quick' });
    const b = resolveSpec({ preset: 'local-quick', data: { chunkRows: a.data.chunkRows * 2, loadWriters: a.data.loadWriters + 1, verifyRows: !a.data.verifyRows }, workload: { clients: 8, threads: 2 } });
    expect(dataSetKey(dataSetKeyParts(b, 15))).toBe(dataSetKey(dataSetKeyParts(a, 15)));
  });

  it('is the same for a later run of the same preset: no run id, name or time in it, so that run restores every host', () => {
    const first = resolveSpec({ preset: 'nightly' });
    const later = resolveSpec({ preset: 'nightly', name: 'nightly-tomorrow', durability: { enabled: true } });
    const key = dataSetKey(dataSetKeyParts(first, 17));
    expect(dataSetKey(dataSetKeyParts(later, 17))).toBe(key);
    expect(JSON.stringify(dataSetKeyParts(later, 17))).not.toMatch(/nightly|20\d\d-/);
    // The scale where pgbench widens aid changes the schema part, not only the scale.
    expect(dataSetKeyParts({ ...spec, data: { scale: 20_000 } }, 15).schema.aidType).toBe('bigint');
  });
});

const facts: DataSetFacts = {
  databaseBytes: 40_000_000,
  relations: {
    pgbench_accounts: { rows: 100_000, checksum: '123456789', heapBytes: 13_434_880, totalBytes: 15_712_256, allVisible: 1640, allFrozen: 1640 },
    pgbench_branches: { rows: 1, checksum: '-42', heapBytes: 8192, totalBytes: 57_344, allVisible: 1, allFrozen: 1 },
  },
};
const copy = (): DataSetFacts => JSON.parse(JSON.stringify(facts));
const manifest = { facts, rows: 100_001 };

describe('comparison of a restored host with its manifest', () => {
  it('passes on the same facts and a clean pg_amcheck', () => {
    const checks = compareDataSet(manifest, copy(), { ok: true, detail: 'clean' });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.map((c) => c.name)).toEqual(['row counts', 'checksums', 'relation sizes', 'freeze state', 'pg_amcheck']);
  });

  it('accepts sizes within 1 %', () => {
    const f = copy();
    f.relations.pgbench_accounts.heapBytes = Math.round(facts.relations.pgbench_accounts.heapBytes * 1.009);
    expect(compareDataSet(manifest, f, null).every((c) => c.ok)).toBe(true);
  });

  const breaks: [string, string, (f: DataSetFacts) => void][] = [
    ['row counts', 'a row missing', (f) => (f.relations.pgbench_accounts.rows -= 1)],
    ['row counts', 'a table missing', (f) => delete f.relations.pgbench_branches],
    ['row counts', 'a table not in the manifest', (f) => (f.relations.extra = { ...f.relations.pgbench_branches })],
    ['checksums', 'a changed row', (f) => (f.relations.pgbench_accounts.checksum = '123456790')],
    // The same numbers from another method would be a coincidence, not a match: a method that differs fails alone.
    ['checksums', 'checksums of another method', (f) => (f.checksumMethod = 'hash-record-64')],
    ['relation sizes', 'a heap 2 % larger', (f) => (f.relations.pgbench_accounts.heapBytes = Math.round(f.relations.pgbench_accounts.heapBytes * 1.02))],
    ['relation sizes', 'indexes missing', (f) => (f.relations.pgbench_accounts.totalBytes = f.relations.pgbench_accounts.heapBytes)],
    ['freeze state', 'pages not frozen', (f) => (f.relations.pgbench_accounts.allFrozen = 0)],
  ];
  it.each(breaks)('fails %s on %s', (check, _what, breakIt) => {
    const f = copy();
    breakIt(f);
    const failed = compareDataSet(manifest, f, null).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual([check]);
    expect(failed[0].detail).not.toBe('');
  });

  it('compares checksums of the method the manifest names (absent: md5-64, as the first manifests)', () => {
    const hashed = { ...manifest, facts: { ...facts, checksumMethod: 'hash-record-64' as const } };
    const f = copy();
    f.checksumMethod = 'hash-record-64';
    expect(compareDataSet(hashed, f, null).every((c) => c.ok)).toBe(true);
    f.relations.pgbench_accounts.checksum = '1';
    expect(compareDataSet(hashed, f, null).filter((c) => !c.ok).map((c) => c.detail)).toEqual([expect.stringMatching(/pgbench_accounts: checksum 1, the manifest says 123456789/)]);
    const md5 = copy();
    md5.checksumMethod = 'md5-64';
    expect(compareDataSet(manifest, md5, null).every((c) => c.ok)).toBe(true);
    expect(checksumMethodFor(13)).toBe('md5-64');
    expect(checksumMethodFor(14)).toBe('hash-record-64');
  });

  // The publisher's relation files, as relationFileDigests records them.
  const publisherFiles = (): RelationFiles => ({
    pgbench_accounts: { main: { bytes: 13_434_880, xxh128: 'a'.repeat(32) }, fsm: { bytes: 24_576, xxh128: 'b'.repeat(32) }, vm: { bytes: 8192, xxh128: 'c'.repeat(32) } },
    pgbench_accounts_pkey: { main: { bytes: 2_260_992, xxh128: 'd'.repeat(32) } },
    pgbench_branches: { main: { bytes: 8192, xxh128: 'e'.repeat(32) } },
    pgbench_tellers: { main: { bytes: 8192, xxh128: 'f'.repeat(32) } },
    pgbench_history: { main: { bytes: 0, xxh128: '0'.repeat(32) } },
  });
  const withFiles = { ...manifest, facts: { ...facts, files: publisherFiles() } };
  // A restored host that read its files and, finding them the publisher's, scanned no row.
  const unscanned = (files: RelationFiles): DataSetFacts => {
    const f = copy();
    for (const r of Object.values(f.relations)) r.checksum = null;
    return { ...f, files };
  };

  it('takes relation files the publisher\'s byte for byte for the rows, without their checksums', () => {
    const checks = compareDataSet(withFiles, unscanned(publisherFiles()), null);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.find((c) => c.name === 'checksums')?.detail).toMatch(/^every relation file the publisher's byte for byte \(7 files, 15745024 bytes, XXH128\)/);
  });

  const fileBreaks: [string, (f: RelationFiles) => void, RegExp][] = [
    ['a file with other bytes', (f) => (f.pgbench_accounts.main.xxh128 = '9'.repeat(32)), /pgbench_accounts main: XXH128 9{32}, the publisher's a{32}/],
    ['a file of another size', (f) => (f.pgbench_accounts.vm.bytes += 8192), /pgbench_accounts vm: 16384 bytes, the publisher's 8192/],
    ['a segment missing', (f) => delete f.pgbench_accounts.fsm, /pgbench_accounts fsm: missing on the restored host/],
    ['a file the publisher had not', (f) => (f.pgbench_accounts['main.1'] = { bytes: 8192, xxh128: '1'.repeat(32) }), /pgbench_accounts main\.1: not among the publisher's files/],
    ['an index missing', (f) => delete f.pgbench_accounts_pkey, /pgbench_accounts_pkey main: missing on the restored host/],
  ];
  it.each(fileBreaks)('fails the contents on %s when the rows were not scanned', (_what, breakIt, detail) => {
    const files = publisherFiles();
    breakIt(files);
    const failed = compareDataSet(withFiles, unscanned(files), null).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual(['checksums']);
    expect(failed[0].detail).toMatch(detail);
    expect(failed[0].detail).toMatch(/its rows were not scanned, and its files are not shown to be the publisher's/);
  });

  it('passes files that differ when the rows were scanned and their checksums are equal, saying so; fails when they are not', () => {
    const files = publisherFiles();
    files.pgbench_accounts.fsm.xxh128 = '2'.repeat(32);
    const scanned = { ...copy(), files };
    const checks = compareDataSet(withFiles, scanned, null);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.find((c) => c.name === 'checksums')?.detail).toMatch(/every table's checksum equal \(md5-64\); 1 relation files differ from the publisher's \(pgbench_accounts fsm: XXH128 2{32}/);
    scanned.relations.pgbench_accounts.checksum = '1';
    expect(compareDataSet(withFiles, scanned, null).find((c) => c.name === 'checksums')).toMatchObject({ ok: false, detail: expect.stringMatching(/checksum 1, the manifest says 123456789; and 1 relation files differ/) });
  });

  it('never takes an empty or partial record of the publisher\'s files, or no record, for identical files', () => {
    expect(relationFileDifferences({}, {})).toEqual(['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history'].map((t) => `${t}: the publisher recorded no main fork`));
    const partial = publisherFiles();
    delete (partial as Partial<RelationFiles>).pgbench_tellers;
    expect(compareDataSet({ ...manifest, facts: { ...facts, files: partial } }, unscanned(partial), null).find((c) => c.name === 'checksums')?.ok).toBe(false);
    // A manifest without files (published before them): rows that were not scanned are never taken as checked.
    expect(compareDataSet(manifest, unscanned(publisherFiles()), null).find((c) => c.name === 'checksums')?.ok).toBe(false);
    expect(relationFileDifferences(publisherFiles(), publisherFiles())).toEqual([]);
  });

  it('reads xxhsum -H2 as it prints (captured, xxhash 0.8.1) and names each file by fork and segment', () => {
    const out = parseXxhsum(readFileSync(path.join(__dirname, '../../../test/fixtures/xxhash-0.8.1/h2-accounts.txt'), 'utf8'));
    expect(out.size).toBe(6);
    expect(out.get('base/5/16396.3')).toBe('b609912dac92a60ed53f6263e17772b2');
    expect(out.get('base/5/16396_vm')).toBe('58f40e4b9be2e11a7c64e4dfa048b6f4');
    expect(() => parseXxhsum('XXH3 (base/5/1) = 5957edc2877e3093\n')).toThrow(/not "<XXH128>  <file>"/);
    expect([...out.keys()].map((n) => relationFileLabel('16396', path.basename(n)))).toEqual(['main', 'main.1', 'main.2', 'main.3', 'fsm', 'vm']);
    // Another relation's files, and names PostgreSQL never makes, are not this relation's.
    for (const other of ['163960', '16396.0', '16396_init.x', '16396.1.1', '16396_fsm.']) expect(relationFileLabel('16396', other)).toBeNull();
    expect(relationFileLabel('16396', '16396_init')).toBe('init');
  });

  it('fails on a pg_amcheck that found corruption', () => {
    const failed = compareDataSet(manifest, copy(), { ok: false, detail: '1 problems in pgbench_accounts' }).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual(['pg_amcheck']);
  });

  // Each primary key read from the heap and from its index-only scan, as a restored host reads them.
  const readings = (): Record<string, KeyReadings> => ({
    pgbench_accounts: { heap: { entries: 1000, sum: '-123' }, index: { entries: 1000, sum: '-123', scan: 'Index Only Scan' } },
    pgbench_branches: { heap: { entries: 1, sum: '7' }, index: { entries: 1, sum: '7', scan: 'Index Only Scan' } },
    pgbench_tellers: { heap: { entries: 10, sum: '55' }, index: { entries: 10, sum: '55', scan: 'Index Scan' } },
  });

  it('passes index keys that match the heap, and fails each way they can differ', () => {
    expect(compareDataSet(manifest, copy(), null, readings()).every((c) => c.ok)).toBe(true);
    // An index entry missing (or one too many).
    const missing = readings();
    missing.pgbench_accounts.index.entries = 999;
    expect(keysCheck(missing)).toMatchObject({ ok: false, detail: 'pgbench_accounts: 999 index entries for 1000 heap rows' });
    // The same count, a changed key (a heap tuple its index does not know).
    const changed = readings();
    changed.pgbench_tellers.heap.sum = '56';
    expect(keysCheck(changed)).toMatchObject({ ok: false, detail: expect.stringMatching(/^pgbench_tellers: the index's tid values differ from the heap's/) });
    // A plan that read the heap proves nothing about the index.
    const seq = readings();
    seq.pgbench_branches.index.scan = 'Seq Scan';
    expect(keysCheck(seq)).toMatchObject({ ok: false, detail: 'pgbench_branches: the index read was a Seq Scan, not an index scan' });
    // A keyed table left out.
    const partial = readings();
    delete (partial as Partial<typeof partial>).pgbench_accounts;
    expect(compareDataSet(manifest, copy(), null, partial).filter((c) => !c.ok).map((c) => c.name)).toEqual(['index entries']);
  });

  it('finds the scan node of a real EXPLAIN (FORMAT JSON) plan', () => {
    // Captured from PostgreSQL 17 (indexKeys's query on pgbench_tellers, seq and bitmap scans off), cut to the fields read.
    const captured = [{ Plan: { 'Node Type': 'Aggregate', Strategy: 'Plain', Plans: [{ 'Node Type': 'Index Only Scan', 'Index Name': 'pgbench_tellers_pkey', 'Relation Name': 'pgbench_tellers' }] } }];
    expect(scanNode(captured)).toBe('Index Only Scan');
    expect(scanNode([{ Plan: { 'Node Type': 'Seq Scan' } }])).toBe('Seq Scan');
    expect(scanNode('not a plan')).toBe('unknown plan');
  });
});

describe('manifest as input', () => {
  const key = dataSetKey(base);
  const good = { formatVersion: 1, key, parts: base, rows: 1, facts, expiresAt: '2027-01-01T00:00:00.000Z' };
  it('accepts a manifest the lab writes', () => expect(manifestProblems(good, key)).toEqual([]));
  it.each([
    ['another key', { ...good, key: dataSetKey({ ...base, scale: 1 }) }, /names key/],
    ['parts that do not hash to the key', { ...good, parts: { ...base, scale: 1 } }, /do not hash/],
    ['no facts', { ...good, facts: undefined }, /no facts/],
    ['a checksum method the lab does not know', { ...good, facts: { ...facts, checksumMethod: 'crc32' } }, /checksum method "crc32"/],
    ['a WAL segment count that is not a whole number', { ...good, facts: { ...facts, walSegmentsAhead: -3 } }, /names -3 WAL segments ahead/],
    ['a WAL segment count that is not a number', { ...good, facts: { ...facts, walSegmentsAhead: '1e12' } }, /names "1e12" WAL segments ahead/],
    ['no expiry', { ...good, expiresAt: 'soon' }, /no expiry/],
    ['not an object', 'x', /not a JSON object/],
  ])('refuses %s', (_name, m, problem) => {
    expect(manifestProblems(m, key).join('\n')).toMatch(problem);
  });
  it('names each of the facts\' problems, not only the first', () => {
    const both = { ...good, facts: { ...facts, checksumMethod: 'crc32', walSegmentsAhead: -3 } };
    expect(manifestProblems(both, key)).toEqual([expect.stringMatching(/checksum method "crc32"/), expect.stringMatching(/names -3 WAL segments ahead/)]);
  });
});

describe('which hosts load and which restore', () => {
  it('local-quick: the first host loads and publishes, the other restores; the dry run says so with estimates', () => {
    const spec = resolveSpec({ preset: 'local-quick' });
    expect(dataSetsOff(spec)).toBeNull();
    const prep = planPreparation(spec);
    expect(prep.map((p) => p.step)).toEqual(['load + publish', 'restore']);
    expect(prep[1].seconds).toBeLessThan(prep[0].seconds);
    const plan = planRun(spec, 'run-1');
    expect(plan.preparation.hosts.map((h) => `${h.hostId} ${h.step}`)).toEqual(plan.hosts.map((h, i) => `${h.hostId} ${i === 0 ? 'load + publish' : 'restore'}`));
    expect(plan.preparation.note).toMatch(/1 load and 1 restore.*no hydration/);
  });

  it('data.reuse "never" loads every host, and says why', () => {
    const spec = resolveSpec({ preset: 'nightly', data: { reuse: 'never' } });
    expect(dataSetsOff(spec)).toMatch(/data.reuse is "never"/);
    expect(planPreparation(spec).every((p) => p.step === 'load')).toBe(true);
    expect(planRun(spec, 'r').preparation.note).toMatch(/^4 loads, .*data.reuse is "never".*With data sets: 1 load and 3 restores/);
  });

  it('seed-full as preset (a folder store): 8 loads on AWS, saying why and the fix (an S3 store)', () => {
    const spec = resolveSpec({ preset: 'seed-full' });
    expect(dataSetsOff(spec)).toMatch(/folder, which hosts on AWS do not share.*set durability.backupStore to an S3 store/);
    expect(planRun(spec, 'r').preparation.note).toMatch(/^8 loads, .*With data sets: 1 load and 7 restores/);
    expect(estimateCost(spec).lines.some((l) => l.item.includes('data set'))).toBe(false);
  });

  it('seed-full with an S3 store: 1 load and 7 restores, their time (the wait for the publish included) and the set\'s S3 storage in the cost', () => {
    const s3 = { durability: { backupStore: { kind: 's3', bucket: 'lab-backups' } } };
    const spec = resolveSpec({ preset: 'seed-full', ...s3 });
    expect(dataSetsOff(spec)).toBeNull();
    const prep = planPreparation(spec);
    expect(prep.map((p) => p.step)).toEqual(['load + publish', ...Array(7).fill('restore')]);
    // All 8 start at once (maxParallelClusters 8): the restoring hosts wait for the first host's load and publish.
    expect(prep.slice(1).every((p) => p.waitSeconds === prep[0].seconds)).toBe(true);
    // gp3 restores at its 125 MiB/s: the database in about an hour, less than its load.
    const gp3 = prep.find((p) => p.className === 'gp3')!;
    expect(gp3.seconds / 3600).toBeGreaterThan(0.9);
    expect(gp3.seconds).toBeLessThan(planPreparation(spec, false).find((p) => p.className === 'gp3')!.seconds);
    // A later run (the set published) and a later wave do not wait.
    expect(planPreparation(spec, true, true).every((p) => p.step === 'restore' && !p.waitSeconds)).toBe(true);
    expect(planPreparation(resolveSpec({ preset: 'seed-full', ...s3, maxParallelClusters: 2 })).map((p) => Boolean(p.waitSeconds))).toEqual([false, true, ...Array(6).fill(false)]);
    const note = planRun(spec, 'r').preparation.note;
    expect(note).toMatch(/^1 load and 7 restores, \d+ h of preparation host time \(7 of them .* wait ~\d+ h for its publish.*a later run.*0 loads and 8 restores, \d+ h; every host loading its own: 8 loads, \d+ h/);
    expect(note).toContain('s3://lab-backups/storage-lab/backups/_datasets/ for 7 days');
    expect(note).toMatch(/no hydration and no Fast Snapshot Restore/);
    // The cost: the set's S3 storage for dataSets.keepDays at the S3 Standard price, and the waiting hosts' hours.
    const est = estimateCost(spec);
    const line = est.lines.find((l) => l.item.startsWith('S3: the data set'))!;
    expect(line.item).toMatch(/516 GiB .* kept 7 days/);
    expect(line.quantity).toBeCloseTo((516 * 7 * 24) / HOURS_PER_MONTH, 2);
    expect(line.unitPriceUsd).toBe(0.023);
    const keptLonger = estimateCost(resolveSpec({ preset: 'seed-full', ...s3, dataSets: { keepDays: 14 } })).lines.find((l) => l.item.startsWith('S3: the data set'))!;
    expect(keptLonger.quantity).toBeCloseTo(2 * line.quantity, 2);
    const loadingAll = estimateCost(resolveSpec({ preset: 'seed-full', ...s3, data: { reuse: 'never' } }));
    expect(loadingAll.lines.some((l) => l.item.startsWith('S3: the data set'))).toBe(false);
    // On a run that publishes, the 7 hosts waiting for the publish cost more host-hours than loading each its own;
    // without the waits (a later run, a later wave) the restores save hours.
    const waits = prep.reduce((sum, p) => sum + (p.waitSeconds ?? 0), 0) / 3600;
    expect(est.hostHours).toBeCloseTo(prep.reduce((sum, p) => sum + estimatedHostHours(spec, p.className, p), 0), 2);
    expect(est.hostHours).toBeGreaterThan(loadingAll.hostHours);
    expect(est.hostHours - waits).toBeLessThan(loadingAll.hostHours);
  });

  it('refuses a data.reuse it does not know, naming the field', () => {
    expect(() => resolveSpec({ preset: 'ci', data: { reuse: 'sometimes' } })).toThrow(/data\.reuse: must be "auto" or "never"/);
    expect(() => resolveSpec({ preset: 'ci', dataSets: { keepDays: 0 } })).toThrow(/dataSets\.keepDays: must be positive/);
  });
});

describe('a data set\'s repository in an S3 store, as a host is handed it', () => {
  const key = dataSetKey(base);
  const spec = { kind: 's3' as const, bucket: 'lab-backups', prefix: 'storage-lab/backups', region: 'us-east-1' };
  const store = s3DataSetStore(spec, key);

  it('is /<prefix>/_datasets/<key>, with its claim and manifest beside it', () => {
    expect(store).toEqual({ kind: 's3', bucket: 'lab-backups', path: `/storage-lab/backups/_datasets/${key}`, region: 'us-east-1' });
    expect(s3DataSetPathsAt(store, key)).toEqual({
      bucket: 'lab-backups',
      repositoryPrefix: `storage-lab/backups/_datasets/${key}`,
      claimKey: `storage-lab/backups/_datasets/${key}.claim.json`,
      manifestKey: `storage-lab/backups/_datasets/${key}.manifest.json`,
    });
    expect(s3DataSetPathsAt(s3DataSetStore({ ...spec, prefix: '/x/' }, key), key).claimKey).toBe(`x/_datasets/${key}.claim.json`);
  });

  const other = dataSetKey({ ...base, scale: 2 });
  it.each([
    ['a path that climbs', { ...store, path: `/storage-lab/backups/_datasets/../_datasets/${key}` }, key, /not that set's repository/],
    ['a "." segment', { ...store, path: `/storage-lab/./backups/_datasets/${key}` }, key, /not that set's repository/],
    ['an empty segment', { ...store, path: `/storage-lab//backups/_datasets/${key}` }, key, /not that set's repository/],
    ['a run\'s own prefix', { ...store, path: '/storage-lab/backups/exp-1' }, key, /not that set's repository/],
    ['below the repository', { ...store, path: `/storage-lab/backups/_datasets/${key}/basebackups_005` }, key, /not that set's repository/],
    ['another key\'s repository', { ...store, path: `/storage-lab/backups/_datasets/${other}` }, key, /not that set's repository/],
    ['a different folder than _datasets', { ...store, path: `/storage-lab/backups/datasets/${key}` }, key, /not that set's repository/],
    ['no leading "/"', { ...store, path: `storage-lab/backups/_datasets/${key}` }, key, /not that set's repository/],
    ['a key that is not one', { ...store, path: '/storage-lab/backups/_datasets/..' }, '..', /not a data set key/],
    ['a bucket the spec refuses', { ...store, bucket: 'Lab_Backups' }, key, /bucket "Lab_Backups" is not one the spec accepts/],
    ['an endpoint the spec refuses', { ...store, endpoint: 'http://evil.example' }, key, /endpoint "http:\/\/evil.example" is not one/],
  ])('refuses %s', (_name, s, k, problem) => {
    expect(() => s3DataSetPathsAt(s as typeof store, k)).toThrow(problem);
  });
});
