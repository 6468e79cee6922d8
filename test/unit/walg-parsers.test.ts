/** WAL-G's parsers on real output captured from WAL-G 3.0.8 with PostgreSQL 15, and the pure parts of the WalG tool. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { renderPgbackrestConfig } from '../../lib/pgbackrest';
import { renderWalgConfig, walgRecoverySettings, walVerifyStartLsn } from '../../lib/walg';
import {
  archivedSegments,
  parseBackupList,
  parseBackupPushName,
  parseBackupSentinel,
  parseStorageListing,
  parseWalgVersion,
  parseWalVerify,
  walgBackupInfo,
  walVerifyCheck,
} from '../../lib/parsers/walg';

const fixture = (name: string) => readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'wal-g-3.0.8', name), 'utf8');

describe('wal-g parsers', () => {
  it('reads the version', () => {
    expect(parseWalgVersion(fixture('version.txt'))).toEqual({ version: '3.0.8', revision: 'f81943e6' });
    expect(() => parseWalgVersion('pgBackRest 2.45\n')).toThrow(/not wal-g --version/);
  });

  it("finds the backup's name in backup-push's log, and fails on a log without one", () => {
    expect(parseBackupPushName(fixture('backup-push-full.stderr.txt'))).toBe('base_000000010000000000000003');
    expect(parseBackupPushName(fixture('backup-push-delta.stderr.txt'))).toBe('base_000000010000000000000006_D_000000010000000000000003');
    const cut = fixture('backup-push-full.stderr.txt').replace(/.*Wrote backup with name.*\n/, '');
    expect(() => parseBackupPushName(cut)).toThrow(/named no backup[\s\S]*Querying pg_database/);
  });

  it('lists backups from backup-list --detail --json, oldest first', () => {
    const list = parseBackupList(fixture('backup-list-detail.json'));
    expect(list.map((b) => b.name)).toEqual(['base_000000010000000000000003', 'base_000000010000000000000006_D_000000010000000000000003']);
    expect(list[0]).toMatchObject({ startLsn: '0/3000028', finishLsn: '0/3000100', uncompressedBytes: 54730134, compressedBytes: 7644041, permanent: false });
    expect(list[1]).toMatchObject({ startLsn: '0/6000028', finishLsn: '0/6000100', compressedBytes: 3209569 });
    const reversed = JSON.stringify([...JSON.parse(fixture('backup-list-detail.json'))].reverse());
    expect(parseBackupList(reversed).map((b) => b.name)).toEqual(list.map((b) => b.name));
    expect(parseBackupList('[]\n')).toEqual([]);
    expect(() => parseBackupList('')).toThrow(SyntaxError);
    expect(() => parseBackupList('{"backup_name":"x"}')).toThrow(/expected an array/);
  });

  it("turns a full and a delta backup's sentinel into the drill's backup info", () => {
    const full = walgBackupInfo('base_000000010000000000000003', parseBackupSentinel(fixture('backup-sentinel-full.json')));
    expect(full).toEqual({
      label: 'base_000000010000000000000003',
      type: 'full',
      startedAt: '2026-12-01T02:12:27.807Z',
      stoppedAt: '2026-12-01T02:12:28.102Z',
      databaseBytes: 54844717,
      repositoryBytes: 7644041,
      startLsn: '0/3000028',
      stopLsn: '0/3000100',
      walStart: '000000010000000000000003',
      walStop: '000000010000000000000003',
    });
    const deltaSentinel = parseBackupSentinel(fixture('backup-sentinel-delta.json'));
    expect(deltaSentinel).toMatchObject({ deltaFrom: 'base_000000010000000000000003', deltaCount: 1, dataFolderBytes: 55597201 });
    const delta = walgBackupInfo('base_000000010000000000000006_D_000000010000000000000003', deltaSentinel);
    expect(delta).toMatchObject({ type: 'delta', walStart: '000000010000000000000006', repositoryBytes: 3209569, databaseBytes: 55597201 });
    // A stop LSN on a segment boundary ends a record in the segment before it.
    const onBoundary = fixture('backup-sentinel-full.json').replace('"FinishLSN":50331904', `"FinishLSN":${0x4000000}`);
    expect(walgBackupInfo('base_000000010000000000000003', parseBackupSentinel(onBoundary)).walStop).toBe('000000010000000000000003');
    const past = fixture('backup-sentinel-full.json').replace('"FinishLSN":50331904', `"FinishLSN":${0x4000001}`);
    expect(walgBackupInfo('base_000000010000000000000003', parseBackupSentinel(past)).walStop).toBe('000000010000000000000004');
    expect(() => walgBackupInfo('20261130-073845F', deltaSentinel)).toThrow(/not a wal-g backup name/);
    expect(() => parseBackupSentinel('{"name":"x"}')).toThrow(/not a wal-g backup sentinel/);
  });

  it('lists archived segments from st ls (times with spaces), skipping .backup files', () => {
    const entries = parseStorageListing(fixture('st-ls-wal.txt'));
    expect(entries).toHaveLength(8);
    expect(entries[2]).toEqual({ type: 'obj', bytes: 263, name: '000000010000000000000003.00000028.backup.lz4' });
    const segments = archivedSegments(entries);
    expect(segments.map((s) => s.segment)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `00000001000000000000000${i}`));
    expect(segments[3]).toEqual({ segment: '000000010000000000000004', file: '000000010000000000000004.lz4', bytes: 3032650 });
    // wal-push with "none" compression names a segment "<segment>." (seen from 3.0.8); zstd ".zst"; history files are not segments.
    const other = [
      { type: 'obj' as const, bytes: 16777216, name: '000000020000000000000009.' },
      { type: 'obj' as const, bytes: 9000, name: '00000002000000000000000A.zst' },
      { type: 'obj' as const, bytes: 41, name: '00000002.history.lz4' },
    ];
    expect(archivedSegments(other)).toEqual([
      { segment: '000000020000000000000009', file: '000000020000000000000009.', bytes: 16777216 },
      { segment: '00000002000000000000000A', file: '00000002000000000000000A.zst', bytes: 9000 },
    ]);
    expect(() => parseStorageListing('ls: no such folder')).toThrow(/not wal-g st ls/);
    expect(() => parseStorageListing(`${fixture('st-ls-wal.txt')}garbage line\n`)).toThrow(/unreadable line "garbage line"/);
  });

  it('passes wal-verify when every segment is found on the right timeline', () => {
    const check = walVerifyCheck(parseWalVerify(fixture('wal-verify-ok.json')));
    expect(check).toMatchObject({ ok: true, status: 'integrity OK, timeline OK', walChecked: 4, walInvalid: 0, missingWal: [], backupFilesChecked: null });
    expect(check.detail).toBe(
      'wal-g wal-verify: integrity OK, timeline OK; 4 segments found in 000000010000000000000003..000000010000000000000006; none missing; timeline 1, highest in storage 1',
    );
  });

  it('fails wal-verify on a missing segment, even one WAL-G calls "probably uploading", naming it', () => {
    const check = walVerifyCheck(parseWalVerify(fixture('wal-verify-missing.json')));
    expect(check).toMatchObject({ ok: false, status: 'integrity WARNING, timeline OK', walChecked: 5, walInvalid: 1, missingWal: ['000000010000000000000007'] });
    expect(check.detail).toContain('missing: 000000010000000000000007 (MISSING_UPLOADING)');
    // A lost run of two segments names both.
    const lost = fixture('wal-verify-missing.json')
      .replace('"start_segment":"000000010000000000000007"', '"start_segment":"000000010000000000000006"')
      .replace('"segments_count":1,"status":"MISSING_UPLOADING"', '"segments_count":2,"status":"MISSING_LOST"');
    expect(walVerifyCheck(parseWalVerify(lost)).missingWal).toEqual(['000000010000000000000006', '000000010000000000000007']);
  });

  it('fails wal-verify on a newer timeline in storage, and on output without the checks', () => {
    const newer = fixture('wal-verify-ok.json').replace('"timeline":{"status":"OK"', '"timeline":{"status":"FAILURE"').replace('"highest_storage_timeline_id":1', '"highest_storage_timeline_id":2');
    const check = walVerifyCheck(parseWalVerify(newer));
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('timeline 1, highest in storage 2');
    const integrityOnly = JSON.stringify({ integrity: JSON.parse(fixture('wal-verify-ok.json')).integrity });
    expect(walVerifyCheck(parseWalVerify(integrityOnly)).ok).toBe(false);
    expect(() => parseWalVerify('{}')).toThrow(/not wal-g wal-verify/);
  });
});

describe('wal-g tool, pure parts', () => {
  const pg = { dataDir: '/h/disk/pgdata', socketDir: '/h/run', port: 5433 };

  it('configures a folder store, an S3 store with a plain-HTTP endpoint, and AWS S3; never with credentials', () => {
    const folder = renderWalgConfig({ store: { kind: 'folder', path: '/b/run-1' }, pg, compression: 'lz4' });
    expect(folder).toMatchObject({ WALG_FILE_PREFIX: '/b/run-1', WALG_COMPRESSION_METHOD: 'lz4', PGHOST: '/h/run', PGPORT: '5433', PGUSER: 'lab' });
    // Postgres, not wal-push's look-ahead, marks segments done: pg_stat_archiver (the drills' archive lag) sees them all.
    expect(folder.PG_READY_RENAME).toBe('false');
    // wal-push's own marks live with the host's data, not in a /tmp folder every host shares.
    expect(folder.PGDATA).toBe('/h/disk/pgdata');
    expect(folder).not.toHaveProperty('WALG_S3_PREFIX');
    const moto = renderWalgConfig({
      store: { kind: 's3', bucket: 'lab', path: '/storage-lab/backups/run-1', region: 'us-east-1', endpoint: 'http://127.0.0.1:5000' },
      pg,
      compression: 'zstd',
    });
    expect(moto).toMatchObject({
      WALG_S3_PREFIX: 's3://lab/storage-lab/backups/run-1',
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT: 'http://127.0.0.1:5000',
      AWS_S3_FORCE_PATH_STYLE: 'true',
      WALG_COMPRESSION_METHOD: 'zstd',
    });
    const aws = renderWalgConfig({ store: { kind: 's3', bucket: 'lab', path: '/p', region: 'eu-west-1' }, pg, compression: 'lzma' });
    expect(aws).not.toHaveProperty('AWS_ENDPOINT');
    expect(aws).not.toHaveProperty('AWS_S3_FORCE_PATH_STYLE');
    for (const c of [folder, moto, aws]) expect(Object.keys(c).filter((k) => /KEY|SECRET|TOKEN|PASSWORD/.test(k))).toEqual([]);
    expect(() => renderWalgConfig({ store: { kind: 'folder', path: '/b' }, pg, compression: 'gzip' })).toThrow(/wal-g writes lz4, zstd, lzma, none; it cannot compress with gzip/);
  });

  it('names each compression as each tool spells it', () => {
    const dirs = { logDir: '/l', lockDir: '/k', spoolDir: '/s' };
    const render = (compression: 'zstd' | 'lzma' | undefined) =>
      renderPgbackrestConfig({ stanza: 's', store: { kind: 'folder', path: '/b' }, pg, ...dirs, compression });
    expect(render(undefined)).toMatch(/^compress-type=lz4$/m);
    expect(render('zstd')).toMatch(/^compress-type=zst$/m);
    expect(() => render('lzma')).toThrow(/cannot compress with lzma/);
  });

  it('writes recovery settings for a time, an LSN and the end of the archive', () => {
    const cmd = '/c/wal-g --config /h/wal-g/walg.json wal-fetch %f %p';
    expect(walgRecoverySettings(cmd, { type: 'lsn', lsn: '0/8000028' })).toEqual({
      restore_command: cmd,
      recovery_target_lsn: '0/8000028',
      recovery_target_action: 'promote',
      archive_mode: 'off',
      hot_standby: 'off',
    });
    expect(walgRecoverySettings(cmd, { type: 'time', time: '2026-12-01T02:12:53.376Z' })).toMatchObject({ recovery_target_time: '2026-12-01T02:12:53.376Z' });
    expect(walgRecoverySettings(cmd, { type: 'latest' })).toEqual({ restore_command: cmd, archive_mode: 'off', hot_standby: 'off' });
  });

  it("starts wal-verify's backward scan one byte into the segment after the last one needed", () => {
    expect(walVerifyStartLsn('000000010000000000000007')).toBe('0/8000001');
    expect(walVerifyStartLsn('0000000100000001000000FF')).toBe('2/1');
  });
});
