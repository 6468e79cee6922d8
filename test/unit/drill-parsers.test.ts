/** Parsers and pure helpers of the durability drills, on real output captured from pgBackRest 2.45 and PostgreSQL 15. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { exitedRecoveryDetail, missingSegments } from '../../activities/host/backup';
import { renderPgbackrestConfig } from '../../lib/pgbackrest';
import { parseAmcheck } from '../../lib/parsers/pg-amcheck';
import { parseArchiveListing, parseInfo, parseVerify } from '../../lib/parsers/pgbackrest';
import { isoTimestamp, parseRecoveryLog } from '../../lib/parsers/recovery-log';
import { archiveCovers, archivedThroughLsn, compareLsn, lastArchivedSegment, lsnDiff, parseSegmentName, segmentArchived, segmentEndLsn, segmentOfLsn } from '../../common/core/lsn';
import { resumedState } from '../../workflows/failover-continuation';
import { mostAdvanced } from '../../workflows/failover-round';
import { quorumOf } from '../../workflows/failover-steps';
import { resolveFailoverDrill } from '../../common/input/drill-spec';

const fixture = (tool: string, name: string) => readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'fixtures', tool, name), 'utf8');

describe('pgbackrest parsers', () => {
  it('reads the backup and the archive range from info --output=json', () => {
    const info = parseInfo(fixture('pgbackrest-2.45', 'info.json'), 'drill');
    expect(info.statusCode).toBe(0);
    expect(info.archives).toEqual([{ id: '15-1', min: '000000010000000000000001', max: '000000010000000000000004' }]);
    expect(info.backups).toHaveLength(1);
    expect(info.backups[0]).toMatchObject({
      label: '20261130-073845F',
      type: 'full',
      databaseBytes: 38860562,
      repositoryBytes: 6248370,
      startLsn: '0/3000028',
      stopLsn: '0/4000050',
      walStart: '000000010000000000000003',
      walStop: '000000010000000000000004',
      error: false,
    });
    expect(info.backups[0].stoppedAt).toBe('2026-11-30T07:38:49.000Z');
    expect(() => parseInfo(fixture('pgbackrest-2.45', 'info.json'), 'other')).toThrow(/no stanza "other".*drill/);
  });

  it("counts what an incremental backup stored, not the files it references", () => {
    const incr = fixture('pgbackrest-2.45', 'info.json').replace('"repository":{"delta":6248370,"size":6248370}', '"repository":{"delta":49791,"size":6248370}');
    expect(parseInfo(incr, 'drill').backups[0].repositoryBytes).toBe(49791);
  });

  it('lists archived segments from repo-ls, skipping .backup files', () => {
    const segments = parseArchiveListing(fixture('pgbackrest-2.45', 'repo-ls-archive.json'));
    expect(segments.map((s) => s.segment)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => `00000001000000000000000${i}`));
    expect(segments[4]).toMatchObject({ archiveId: '15-1', bytes: 124964 });
    expect(segments[4].path).toBe('drill/15-1/0000000100000000/000000010000000000000005-c2a8cd5413a7f4e932c3caf83d9d01cc11aaf1a6.lz4');
  });

  it('reads verify --verbose, ok and error (exit code 0 for both)', () => {
    const ok = parseVerify(fixture('pgbackrest-2.45', 'verify-verbose.txt'));
    expect(ok.status).toBe('ok');
    expect(ok.archives).toEqual([{ archiveId: '15-1', checked: 9, valid: 9, missing: 0, checksumInvalid: 0, sizeInvalid: 0, other: 0 }]);
    expect(ok.backups[0]).toMatchObject({ label: '20261130-073845F', status: 'valid', checked: 977, valid: 977 });
    const bad = parseVerify(fixture('pgbackrest-2.45', 'verify-verbose-error.txt'));
    expect(bad.status).toBe('error');
    expect(bad.archives[0]).toMatchObject({ checked: 4, valid: 3, other: 1 });
    expect(() => parseVerify('')).toThrow(/not pgbackrest verify/);
  });

  it('renders a folder repository and an S3 one (TLS only, path style for custom endpoints)', () => {
    const pg = { dataDir: '/h/disk/pgdata', socketDir: '/h/run', port: 5433 };
    const dirs = { logDir: '/h/logs/pgbackrest', lockDir: '/h/pgbackrest/lock', spoolDir: '/h/pgbackrest/spool' };
    const folder = renderPgbackrestConfig({ stanza: 'storage-lab', store: { kind: 'folder', path: '/b/run-1' }, pg, ...dirs });
    expect(folder).toMatch(/^repo1-type=posix$/m);
    expect(folder).toMatch(/^repo1-path=\/b\/run-1$/m);
    expect(folder).toMatch(/^\[storage-lab\]\npg1-path=\/h\/disk\/pgdata\npg1-socket-path=\/h\/run\npg1-port=5433\npg1-user=lab$/m);
    const s3 = renderPgbackrestConfig({
      stanza: 'storage-lab',
      store: { kind: 's3', bucket: 'lab', path: '/storage-lab/backups/run-1', region: 'eu-west-1' },
      pg,
      ...dirs,
    });
    expect(s3).toMatch(/^repo1-s3-endpoint=s3\.eu-west-1\.amazonaws\.com$/m);
    expect(s3).toMatch(/^repo1-s3-key-type=auto$/m);
    expect(s3).not.toMatch(/uri-style/);
    const custom = renderPgbackrestConfig({
      stanza: 'storage-lab',
      store: { kind: 's3', bucket: 'lab', path: '/p', region: 'us-east-1', endpoint: 'https://minio.local:9000' },
      pg,
      ...dirs,
    });
    expect(custom).toMatch(/^repo1-s3-endpoint=minio\.local$/m);
    expect(custom).toMatch(/^repo1-storage-port=9000$/m);
    expect(custom).toMatch(/^repo1-s3-uri-style=path$/m);
    expect(() =>
      renderPgbackrestConfig({ stanza: 's', store: { kind: 's3', bucket: 'lab', path: '/p', region: 'us-east-1', endpoint: 'http://127.0.0.1:5000' }, pg, ...dirs }),
    ).toThrow(/TLS only/);
  });
});

describe('recovery log parser', () => {
  it('times a recovery to a time target: replay end, where it stopped, promotion', () => {
    const log = parseRecoveryLog(fixture('postgres-15', 'recovery-time-target.txt'));
    expect(log.startedAt).toBe('2026-11-30T07:39:11.045Z');
    expect(log.redoStartAt).toBe('2026-11-30T07:39:11.176Z');
    expect(log.stopped?.message).toMatch(/^recovery stopping before commit of transaction 741/);
    expect(log.redoDoneAt).toBe('2026-11-30T07:39:11.507Z');
    expect(log.redoDoneLsn).toBe('0/6000398');
    expect(log.lastTransactionAt).toBe('2026-11-30T07:38:54.868Z');
    expect(log.newTimeline).toBe(2);
    // Not the read-only one at 11.333: ready for writes.
    expect(log.readyAt).toBe('2026-11-30T07:39:11.718Z');
    expect(log.fatal).toBeNull();
    expect(log.restoredSegments).toEqual(['3', '4', '5', '6', '7', '6'].map((i) => `00000001000000000000000${i}`));
  });

  it("does not take a client turned away during recovery for the recovery's FATAL", () => {
    // The time-target recovery with the refusals a loaded machine's drill logged (CI, 2026-12-03: the message and
    // its DETAIL as PostgreSQL wrote them) put in before consistency and before promotion.
    const lines = fixture('postgres-15', 'recovery-time-target.txt').split('\n');
    const at = (i: number) => lines.findIndex((l) => l.includes(i === 0 ? 'redo starts at' : 'selected new timeline ID'));
    const refusal = (ts: string, pid: number, text: string, detail?: string) =>
      [`2026-11-30 07:39:${ts} UTC [${pid}] FATAL:  the database system is ${text}`, ...(detail ? [`2026-11-30 07:39:${ts} UTC [${pid}] DETAIL:  ${detail}`] : [])];
    lines.splice(at(0), 0, ...refusal('11.170', 31601, 'not yet accepting connections', 'Consistent recovery state has not been yet reached.'), ...refusal('11.171', 31602, 'starting up'));
    lines.splice(at(1), 0, ...refusal('11.500', 31603, 'in recovery mode'));
    const log = parseRecoveryLog(lines.join('\n'));
    expect(log.fatal).toBeNull();
    expect(log.readyAt).toBe('2026-11-30T07:39:11.718Z');
    expect(log.redoDoneLsn).toBe('0/6000398');
    // The recovery's own FATAL is still the recovery's, after a refusal too.
    const failed = fixture('postgres-15', 'recovery-missing-segment.txt').split('\n');
    failed.splice(2, 0, ...refusal('20.000', 31604, 'starting up'));
    expect(parseRecoveryLog(failed.join('\n')).fatal).toEqual({ at: '2026-11-30T07:39:20.031Z', message: 'recovery ended before configured recovery target was reached' });
  });

  it('reports the FATAL of a recovery that ran out of WAL before its target', () => {
    const log = parseRecoveryLog(fixture('postgres-15', 'recovery-missing-segment.txt'));
    expect(log.fatal).toEqual({ at: '2026-11-30T07:39:20.031Z', message: 'recovery ended before configured recovery target was reached' });
    expect(log.readyAt).toBeNull();
    expect(log.restoredSegments).toEqual(['000000010000000000000003', '000000010000000000000004']);
  });

  it('gives the FATAL of a recovery whose server exited before the poll saw it, else the last lines', () => {
    // The server wrote its FATAL and exited between the poll's read of the log and its check that the server runs.
    expect(exitedRecoveryDetail(fixture('postgres-15', 'recovery-missing-segment.txt'), '(last lines)')).toBe(
      'recovery failed: recovery ended before configured recovery target was reached',
    );
    // A server gone without a FATAL (killed): the log's last lines say what there is.
    expect(exitedRecoveryDetail(fixture('postgres-15', 'recovery-latest.txt').split('\n').slice(0, 3).join('\n'), 'LOG:  redo starts at 0/3000028')).toBe(
      'the server exited during recovery:\nLOG:  redo starts at 0/3000028',
    );
  });

  it('times a recovery to the end of the archive', () => {
    const log = parseRecoveryLog(fixture('postgres-15', 'recovery-latest.txt'));
    expect(log.stopped).toBeNull();
    expect(log.redoDoneLsn).toBe('0/9034650');
    expect(log.lastTransactionAt).toBe('2026-11-30T07:39:00.352Z');
    expect(log.readyAt).toBe('2026-11-30T07:39:30.939Z');
  });

  it('reads timestamptz text with any offset', () => {
    expect(isoTimestamp('2026-11-30 07:38:54.868076+00')).toBe('2026-11-30T07:38:54.868Z');
    expect(isoTimestamp('2026-11-30 08:38:54+01')).toBe('2026-11-30T07:38:54.000Z');
    expect(isoTimestamp('2026-11-30 02:08:54.5-05:30')).toBe('2026-11-30T07:38:54.500Z');
    expect(() => isoTimestamp('yesterday')).toThrow(/not a Postgres timestamp/);
  });
});

describe('pg_amcheck parser', () => {
  it('finds nothing in a clean run and every problem in a corrupt one', () => {
    expect(parseAmcheck(fixture('postgres-15', 'pg_amcheck-clean.txt'))).toEqual({ problems: 0, relations: [], sample: [] });
    const report = parseAmcheck(fixture('postgres-15', 'pg_amcheck-corrupt.txt'), 2);
    expect(report.problems).toBe(18);
    expect(report.relations).toEqual(['postgres.public.pgbench_accounts', 'postgres.public.pgbench_accounts_pkey']);
    expect(report.sample).toEqual([
      'heap table postgres.public.pgbench_accounts, block 3, offset 45: line pointer to page offset 11742 is not maximally aligned',
      'heap table postgres.public.pgbench_accounts, block 3, offset 46: line pointer to page offset 11742 is not maximally aligned',
    ]);
  });
});

describe('WAL positions and segments', () => {
  it('compares LSNs and maps segments to LSNs', () => {
    expect(compareLsn('0/A000000', '0/9FFFFFF')).toBe(1);
    expect(compareLsn('1/0', 'FFFFFFFF/0')).toBe(-1);
    expect(lsnDiff('1/10', '0/FFFFFFF0')).toBe(0x20);
    expect(segmentEndLsn('000000010000000000000009')).toBe('0/A000000');
    expect(segmentEndLsn('0000000200000001000000FF')).toBe('2/0');
    expect(segmentOfLsn('0/6000398', 1)).toBe('000000010000000000000006');
    expect(segmentOfLsn('1/FF000000', 3)).toBe('0000000300000001000000FF');
    expect(parseSegmentName('00000002.history')).toBeNull();
  });

  it('finds the segments an archive lacks between two', () => {
    const archived = ['000000010000000000000003', '000000010000000000000004', '000000010000000000000006'];
    expect(missingSegments(archived, '000000010000000000000003', '000000010000000000000006')).toEqual(['000000010000000000000005']);
    expect(missingSegments(archived, '000000010000000000000003', '000000010000000000000004')).toEqual([]);
    expect(missingSegments(['0000000100000000000000FF', '000000010000000100000000'], '0000000100000000000000FF', '000000010000000100000000')).toEqual([]);
  });
});

describe('the archive as the server reports it', () => {
  // Real last_archived_wal values of PostgreSQL 15 (a switch, a base backup, a promotion), one per moment.
  const captured = Object.fromEntries(
    fixture('postgres-15', 'last-archived-wal.txt')
      .split('\n')
      .filter((l) => l && !l.startsWith('#') && !l.startsWith('archived:'))
      .map((l) => l.split(': ') as [string, string]),
  );

  it('reads a backup history file as the segment it is named after, and a .partial or history file as no whole segment', () => {
    expect(lastArchivedSegment(captured['after switch'])).toBe('000000010000000000000001');
    expect(captured['after backup']).toBe('000000010000000000000002.00000028.backup');
    expect(lastArchivedSegment(captured['after backup'])).toBe('000000010000000000000002');
    expect(archivedThroughLsn(captured['after backup'])).toBe('0/3000000');
    expect(lastArchivedSegment(captured['after promote'])).toBeNull();
    expect(lastArchivedSegment('00000002.history')).toBeNull();
    expect(archivedThroughLsn(null)).toBeNull();
  });

  it('counts an LSN at a segment\'s end as covered by that segment, not the next', () => {
    // pg_switch_wal() returns the end of the segment it closed: everything before it is in that segment.
    expect(archiveCovers('000000010000000000000002', '0/3000000')).toBe(true);
    expect(archiveCovers('000000010000000000000002', '0/2FFFFFF')).toBe(true);
    expect(archiveCovers('000000010000000000000002', '0/3000001')).toBe(false);
    expect(archiveCovers(captured['after backup'], '0/3000000')).toBe(true);
    expect(archiveCovers(captured['after promote'], '0/1000000')).toBe(false);
    expect(archiveCovers(null, '0/1')).toBe(false);
  });

  it('judges a segment archived by its own archive status, whatever was archived last', () => {
    // After the promotion the server archived an older segment after a newer one: last_archived_wal went back.
    expect(captured['after switch on the new primary']).toBe('000000010000000000000003');
    expect(segmentArchived('000000020000000000000005', ['000000020000000000000005.done', '000000010000000000000003.done'])).toBe(true);
    expect(segmentArchived('000000020000000000000005', ['000000020000000000000005.ready'])).toBe(false);
    expect(segmentArchived('000000020000000000000005', [])).toBe(false);
  });
});

describe('failover choices', () => {
  it('promotes the standby that received the most WAL, then the one that replayed the most', () => {
    const s = (node: string, receiveLsn: string | null, replayLsn: string | null) => ({ hostId: node, node, receiveLsn, replayLsn });
    expect(mostAdvanced([s('n2', '0/4000100', '0/4000100'), s('n3', '0/4000200', '0/4000000')]).node).toBe('n3');
    expect(mostAdvanced([s('n2', '0/4000100', '0/4000100'), s('n3', '0/4000100', '0/4000000')]).node).toBe('n2');
    expect(mostAdvanced([s('n2', null, null), s('n3', '0/1', '0/1')]).node).toBe('n3');
    expect(quorumOf('sync', ['n3', 'n1'])).toBe('ANY 1 (n3, n1)');
    expect(quorumOf('async', ['n3', 'n1'])).toBe('');
  });

  it('resumes a continuation of either shape: typed peers, or the pg_hba lines of a drill started before them', () => {
    const spec = resolveFailoverDrill({ preset: 'ci' });
    const store = { kind: 'folder' as const, path: '/b/run-1' };
    const legacy = {
      hbaLines: ['host all all 10.0.0.5/32 scram-sha-256', 'host replication all 10.0.0.5/32 scram-sha-256', 'host all all 10.0.0.6/32 scram-sha-256'],
      archiving: { store, settings: { n1: { archive_command: 'x' } } },
    };
    expect(resumedState(spec, legacy)).toEqual({ peers: ['10.0.0.5', '10.0.0.6'], archiving: { store, tool: spec.backup.tool } });
    expect(resumedState(spec, { peers: ['10.0.0.7'], archiving: { store, tool: 'pgbackrest' } })).toEqual({ peers: ['10.0.0.7'], archiving: { store, tool: 'pgbackrest' } });
    expect(resumedState(spec, { peers: [], archiving: null })).toEqual({ peers: [], archiving: null });
  });
});
