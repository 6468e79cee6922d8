/**
 * WAL positions and segment names, as Postgres writes them ("16/B374D848", "000000010000001600000003").
 * Pure and workflow-safe: the failover drill compares standbys' LSNs, the restore drill maps segments to LSNs.
 */

/** The default WAL segment size (initdb --wal-segsize): 16 MiB. */
export const DEFAULT_WAL_SEGMENT_BYTES = 16 * 1024 * 1024;

const LSN_PATTERN = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;
const SEGMENT_PATTERN = /^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})$/;

/** An LSN as a byte position; throws on text that is not one. */
export function parseLsn(lsn: string): bigint {
  const m = LSN_PATTERN.exec(lsn.trim());
  if (!m) throw new Error(`not an LSN: ${JSON.stringify(lsn)}`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

/** A byte position as Postgres prints an LSN. */
export function formatLsn(position: bigint): string {
  return `${(position >> 32n).toString(16).toUpperCase()}/${(position & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** Negative, zero or positive as a is before, at or after b. */
export function compareLsn(a: string, b: string): number {
  const d = parseLsn(a) - parseLsn(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** Bytes from b to a (negative when a is before b). */
export function lsnDiff(a: string, b: string): number {
  return Number(parseLsn(a) - parseLsn(b));
}

/** Timeline and segment number of a WAL segment file name; null for other archive files (.history, .backup). */
export function parseSegmentName(name: string, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): { timeline: number; segno: bigint } | null {
  const m = SEGMENT_PATTERN.exec(name);
  if (!m) return null;
  const perLog = 0x100000000n / BigInt(segmentBytes);
  return { timeline: parseInt(m[1], 16), segno: BigInt(`0x${m[2]}`) * perLog + BigInt(`0x${m[3]}`) };
}

/** The file name of a segment on a timeline. */
export function segmentName(timeline: number, segno: bigint, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): string {
  const perLog = 0x100000000n / BigInt(segmentBytes);
  const hex = (v: bigint | number) => v.toString(16).toUpperCase().padStart(8, '0');
  return `${hex(timeline)}${hex(segno / perLog)}${hex(segno % perLog)}`;
}

/** The segment that holds an LSN on a timeline. */
export function segmentOfLsn(lsn: string, timeline: number, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): string {
  return segmentName(timeline, parseLsn(lsn) / BigInt(segmentBytes), segmentBytes);
}

/** The LSN just past a segment's end: everything before it is in the segment or earlier ones. */
export function segmentEndLsn(name: string, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): string {
  const seg = parseSegmentName(name, segmentBytes);
  if (!seg) throw new Error(`not a WAL segment name: ${JSON.stringify(name)}`);
  return formatLsn((seg.segno + 1n) * BigInt(segmentBytes));
}

/**
 * The newest whole segment pg_stat_archiver's last_archived_wal says is archived. A backup history file
 * ("…05.00000028.backup") is named after the segment its backup started in and is archived after it (the archiver
 * takes the oldest name first), so it counts as that segment. A timeline history file or a .partial segment (the old
 * timeline's tail, archived at a promotion) names no whole segment: null.
 */
export function lastArchivedSegment(lastArchivedWal: string | null): string | null {
  return /^([0-9A-F]{24})(\.[0-9A-F]{8}\.backup)?$/.exec(lastArchivedWal ?? '')?.[1] ?? null;
}

/** The LSN before which every WAL byte is archived (the end of the last archived segment); null when none is known. */
export function archivedThroughLsn(lastArchivedWal: string | null, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): string | null {
  const segment = lastArchivedSegment(lastArchivedWal);
  return segment ? segmentEndLsn(segment, segmentBytes) : null;
}

/** Whether the archive holds every WAL byte before lsn, by last_archived_wal: an lsn at a segment's end needs that segment only. */
export function archiveCovers(lastArchivedWal: string | null, lsn: string, segmentBytes = DEFAULT_WAL_SEGMENT_BYTES): boolean {
  const through = archivedThroughLsn(lastArchivedWal, segmentBytes);
  return through !== null && compareLsn(through, lsn) >= 0;
}

/**
 * Whether the server has archived a segment, from its files in pg_wal/archive_status: `.ready` until archive_command
 * succeeded, then `.done` (removed when the segment is recycled, only after it was archived). A segment closed by
 * pg_switch_wal has one of the two at once.
 */
export function segmentArchived(segment: string, statusFiles: string[]): boolean {
  return statusFiles.includes(`${segment}.done`) && !statusFiles.includes(`${segment}.ready`);
}
