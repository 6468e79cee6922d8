/**
 * pg_test_fsync's report → ops per second and µs per operation of each sync method, by section. Pure; tested on
 * output captured from PostgreSQL 15's pg_test_fsync on this machine (test/fixtures/postgres-15).
 */

/** One method's figures; null where the platform does not support it ("n/a"). */
export interface FsyncMethodResult {
  opsPerSecond: number;
  usecsPerOp: number;
}

export interface PgTestFsyncReport {
  /** "Compare file sync methods using one 8kB write": what a WAL flush of one page costs, per wal_sync_method. */
  oneWrite: Record<string, FsyncMethodResult | null>;
  /** "... using two 8kB writes". */
  twoWrites: Record<string, FsyncMethodResult | null>;
}

const METHOD_LINE = /^\s+(open_datasync|fdatasync|fsync_writethrough|fsync|open_sync)\s+(?:([\d.]+) ops\/sec\s+(\d+) usecs\/op|n\/a\*?)\s*$/;

/** Parses the sync-method sections of the report; throws when the first one is missing (not pg_test_fsync's output). */
export function parsePgTestFsync(text: string): PgTestFsyncReport {
  const report: PgTestFsyncReport = { oneWrite: {}, twoWrites: {} };
  let section: Record<string, FsyncMethodResult | null> | null = null;
  for (const line of text.split('\n')) {
    if (/^Compare file sync methods using one 8kB write/.test(line)) section = report.oneWrite;
    else if (/^Compare file sync methods using two 8kB writes/.test(line)) section = report.twoWrites;
    else if (/^\S/.test(line) && !line.startsWith('(')) section = null;
    const m = section ? METHOD_LINE.exec(line) : null;
    if (m && section) section[m[1]] = m[2] === undefined ? null : { opsPerSecond: Number(m[2]), usecsPerOp: Number(m[3]) };
  }
  if (Object.keys(report.oneWrite).length === 0) throw new Error('not a pg_test_fsync report: no "Compare file sync methods using one 8kB write" section');
  return report;
}
