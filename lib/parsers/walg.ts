/**
 * WAL-G output → typed results: `--version`, the backup name in `backup-push`'s log, `backup-list --detail --json`,
 * a backup's stop sentinel (`st cat basebackups_005/<name>_backup_stop_sentinel.json`), `st ls` of the WAL folder
 * and `wal-verify integrity timeline --json`. Tested on real output of WAL-G 3.0.8 in test/fixtures/wal-g-3.0.8/.
 */
import type { BackupInfo } from '../../common/results/drill-result';
import { formatLsn, parseLsn, parseSegmentName, segmentName, segmentOfLsn } from '../../common/core/lsn';
import type { RepositoryCheck } from '../backup-tool';

/** `wal-g --version`: "wal-g version v3.0.8<TAB>f81943e6<TAB>devel<TAB>PostgreSQL". */
export function parseWalgVersion(text: string): { version: string; revision: string } {
  const m = /^wal-g version v?(\S+)\t(\S+)\t/m.exec(text);
  if (!m) throw new Error(`not wal-g --version output: ${JSON.stringify(text.slice(0, 200))}`);
  return { version: m[1], revision: m[2] };
}

/** The name backup-push gave the backup ("Wrote backup with name base_..." in its log on stderr). */
export function parseBackupPushName(log: string): string {
  const names = [...log.matchAll(/Wrote backup with name (\S+)/g)].map((m) => m[1]);
  if (!names.length) throw new Error(`wal-g backup-push named no backup; its log ends:\n${log.trim().split('\n').slice(-5).join('\n')}`);
  return names[names.length - 1];
}

/** One backup in `backup-list --detail --json`. */
export interface WalgListedBackup {
  name: string;
  startedAt: string;
  finishedAt: string;
  startLsn: string;
  finishLsn: string;
  uncompressedBytes: number;
  compressedBytes: number;
  permanent: boolean;
}

interface ListJson {
  backup_name: string;
  start_time: string;
  finish_time: string;
  start_lsn: number;
  finish_lsn: number;
  uncompressed_size: number;
  compressed_size: number;
  is_permanent: boolean;
}

/** Backups from `backup-list --detail --json` (`[]` when there is none), oldest first. */
export function parseBackupList(json: string): WalgListedBackup[] {
  // LSNs arrive as JSON numbers: exact up to 2^53 bytes of WAL (8 PiB), far beyond a drill's.
  const entries = JSON.parse(json) as ListJson[];
  if (!Array.isArray(entries)) throw new Error(`wal-g backup-list --json: expected an array, got ${JSON.stringify(json.slice(0, 200))}`);
  return entries
    .map((e) => ({
      name: e.backup_name,
      startedAt: e.start_time,
      finishedAt: e.finish_time,
      startLsn: formatLsn(BigInt(e.start_lsn)),
      finishLsn: formatLsn(BigInt(e.finish_lsn)),
      uncompressedBytes: e.uncompressed_size,
      compressedBytes: e.compressed_size,
      permanent: e.is_permanent,
    }))
    .sort((a, b) => Date.parse(a.finishedAt) - Date.parse(b.finishedAt));
}

/** A backup's stop sentinel: what WAL-G knows about one backup, the data folder's size and the delta's base included. */
export interface WalgSentinel {
  startLsn: string;
  finishLsn: string;
  /** The backup this one is a delta of; null for a full backup. */
  deltaFrom: string | null;
  /** Deltas in the chain down to the full backup (0 for a full one). */
  deltaCount: number;
  startedAt: string;
  finishedAt: string;
  /** Size of the data folder that was backed up. */
  dataFolderBytes: number;
  /** What this backup stored: before and after compression. */
  uncompressedBytes: number;
  compressedBytes: number;
}

interface SentinelJson {
  LSN: number;
  FinishLSN: number;
  DeltaFrom?: string;
  DeltaCount?: number;
  StartTime: string;
  FinishTime: string;
  DataCatalogSize: number;
  UncompressedSize: number;
  CompressedSize: number;
}

export function parseBackupSentinel(json: string): WalgSentinel {
  const s = JSON.parse(json) as SentinelJson;
  if (typeof s.LSN !== 'number' || typeof s.FinishLSN !== 'number')
    throw new Error(`not a wal-g backup sentinel: ${JSON.stringify(json.slice(0, 200))}`);
  return {
    startLsn: formatLsn(BigInt(s.LSN)),
    finishLsn: formatLsn(BigInt(s.FinishLSN)),
    deltaFrom: s.DeltaFrom || null,
    deltaCount: s.DeltaCount ?? 0,
    startedAt: s.StartTime,
    finishedAt: s.FinishTime,
    dataFolderBytes: s.DataCatalogSize,
    uncompressedBytes: s.UncompressedSize,
    compressedBytes: s.CompressedSize,
  };
}

/** The drill's BackupInfo fields of one WAL-G backup: its name carries its first segment (and so its timeline). */
export function walgBackupInfo(name: string, s: WalgSentinel): Omit<BackupInfo, 'tool' | 'toolVersion' | 'seconds'> {
  const first = /^base_([0-9A-F]{24})/.exec(name)?.[1];
  const timeline = first ? parseSegmentName(first)?.timeline : undefined;
  if (!first || timeline === undefined) throw new Error(`not a wal-g backup name: ${name}`);
  // The stop LSN is the end of the backup-end record: the record itself lies in the segment before that byte.
  const lastByte = formatLsn(parseLsn(s.finishLsn) - 1n);
  return {
    label: name,
    type: s.deltaFrom ? 'delta' : 'full',
    startedAt: new Date(s.startedAt).toISOString(),
    stoppedAt: new Date(s.finishedAt).toISOString(),
    databaseBytes: s.dataFolderBytes,
    repositoryBytes: s.compressedBytes,
    startLsn: s.startLsn,
    stopLsn: s.finishLsn,
    walStart: first,
    walStop: segmentOfLsn(lastByte, timeline),
  };
}

/** One entry of `wal-g st ls`: "obj  <size> <last modified, with spaces> <name>". */
export interface StorageEntry {
  type: 'obj' | 'dir';
  bytes: number;
  name: string;
}

export function parseStorageListing(text: string): StorageEntry[] {
  const lines = text.split('\n').filter((l) => l.trim());
  if (!lines.length || !/^type\s+size\s+last modified\s+name/.test(lines[0]))
    throw new Error(`not wal-g st ls output: ${JSON.stringify(text.slice(0, 200))}`);
  return lines.slice(1).map((line) => {
    const m = /^(obj|dir)\s+(\d+)\s+.+?\s(\S+)\s*$/.exec(line);
    if (!m) throw new Error(`wal-g st ls: unreadable line ${JSON.stringify(line)}`);
    return { type: m[1] as 'obj' | 'dir', bytes: Number(m[2]), name: m[3] };
  });
}

/** Archived WAL segments in a listing of the WAL folder, sorted; .backup, .history and partial files are skipped. */
export function archivedSegments(entries: StorageEntry[]): { segment: string; file: string; bytes: number }[] {
  const out: { segment: string; file: string; bytes: number }[] = [];
  for (const e of entries) {
    // <24-hex segment>.<compression extension>; "none" compression leaves the dot with nothing after it.
    const m = /^([0-9A-F]{24})(\.(lz4|zst|lzma|br|gz|lzo)?)?$/.exec(e.name);
    if (e.type === 'obj' && m) out.push({ segment: m[1], file: e.name, bytes: e.bytes });
  }
  return out.sort((a, b) => a.segment.localeCompare(b.segment));
}

type VerifyStatus = 'OK' | 'WARNING' | 'FAILURE';

/** A run of segments with one status: FOUND, or MISSING_DELAYED / MISSING_UPLOADING / MISSING_LOST. */
export interface SegmentRun {
  timeline: number;
  start: string;
  end: string;
  count: number;
  status: string;
}

export interface WalgVerify {
  integrity: { status: VerifyStatus; runs: SegmentRun[] } | null;
  timeline: { status: VerifyStatus; currentTimeline: number; highestStorageTimeline: number } | null;
}

interface VerifyJson {
  integrity?: { status: VerifyStatus; details: { timeline_id: number; start_segment: string; end_segment: string; segments_count: number; status: string }[] | null };
  timeline?: { status: VerifyStatus; details: { current_timeline_id: number; highest_storage_timeline_id: number } };
}

/** `wal-verify integrity timeline --json`. Its exit code is 0 whatever it found: read the statuses. */
export function parseWalVerify(json: string): WalgVerify {
  const v = JSON.parse(json) as VerifyJson;
  if (!v || (!v.integrity && !v.timeline)) throw new Error(`not wal-g wal-verify --json output: ${JSON.stringify(json.slice(0, 200))}`);
  return {
    integrity: v.integrity
      ? {
          status: v.integrity.status,
          runs: (v.integrity.details ?? []).map((d) => ({
            timeline: d.timeline_id,
            start: d.start_segment,
            end: d.end_segment,
            count: d.segments_count,
            status: d.status,
          })),
        }
      : null,
    timeline: v.timeline
      ? { status: v.timeline.status, currentTimeline: v.timeline.details.current_timeline_id, highestStorageTimeline: v.timeline.details.highest_storage_timeline_id }
      : null,
  };
}

/**
 * The repository check from wal-verify. WAL-G calls the newest missing segments "probably uploading" (WARNING) in
 * case a live primary is still pushing them; the caller names the last segment a restore needs, which is archived,
 * so every segment before it must be there: any missing one fails the check, whatever WAL-G called it.
 */
export function walVerifyCheck(v: WalgVerify): RepositoryCheck {
  const runs = v.integrity?.runs ?? [];
  const missing = runs.filter((r) => r.status !== 'FOUND').flatMap((r) => segmentsOf(r));
  const ok = v.integrity?.status === 'OK' && v.timeline?.status === 'OK' && missing.length === 0;
  const status = [v.integrity && `integrity ${v.integrity.status}`, v.timeline && `timeline ${v.timeline.status}`].filter(Boolean).join(', ');
  const found = runs.filter((r) => r.status === 'FOUND');
  const range = runs.length ? `${runs[0].start}..${runs[runs.length - 1].end}` : 'no segments';
  const detail = [
    `wal-g wal-verify: ${status}`,
    `${found.reduce((s, r) => s + r.count, 0)} segments found in ${range}`,
    missing.length ? `missing: ${missing.join(', ')} (${runs.filter((r) => r.status !== 'FOUND').map((r) => r.status).join(', ')})` : 'none missing',
    v.timeline ? `timeline ${v.timeline.currentTimeline}, highest in storage ${v.timeline.highestStorageTimeline}` : 'timeline not checked',
  ].join('; ');
  return {
    ok,
    status,
    detail,
    walChecked: runs.reduce((s, r) => s + r.count, 0),
    walInvalid: missing.length,
    backupFilesChecked: null,
    backupFilesInvalid: null,
    missingWal: missing,
  };
}

/** Every segment name of a run (one timeline, consecutive). */
function segmentsOf(run: SegmentRun): string[] {
  const a = parseSegmentName(run.start);
  const b = parseSegmentName(run.end);
  if (!a || !b) throw new Error(`wal-g wal-verify: not segment names: ${run.start}, ${run.end}`);
  const names: string[] = [];
  for (let s = a.segno; s <= b.segno; s++) names.push(segmentName(run.timeline, s));
  return names;
}
