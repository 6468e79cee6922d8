/**
 * Cumulative statistics views (pg_stat_database, pg_stat_wal, pg_stat_bgwriter / pg_stat_checkpointer, pg_stat_io)
 * read as to_jsonb rows → deltas over a window. Pure; tested on snapshots captured from PostgreSQL 15
 * (test/fixtures/postgres-15). Columns are looked up by name, so a version that adds or renames some still parses.
 */
import type { CheckpointDeltas, DatabaseDeltas, IoDeltas } from '../../common/results/sampler-readings';

export type StatRow = Record<string, unknown>;

/** One reading of the views; a view the server lacks is null. */
export interface StatSnapshot {
  db: StatRow;
  wal: StatRow | null;
  bgwriter: StatRow | null;
  checkpointer: StatRow | null;
  io: StatRow[] | null;
}

const num = (row: StatRow | null | undefined, key: string): number => {
  const v = row?.[key];
  return typeof v === 'number' ? v : typeof v === 'string' && /^-?[\d.]+$/.test(v) ? Number(v) : 0;
};

/** after - before of every numeric column both readings have (counters; resets show as 0, not negative). */
export function numericDeltas(before: StatRow, after: StatRow): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    if (typeof value !== 'number' || typeof before[key] !== 'number') continue;
    out[key] = Math.max(0, value - (before[key] as number));
  }
  return out;
}

export function databaseDeltas(before: StatRow, after: StatRow): DatabaseDeltas {
  const d = (k: string) => Math.max(0, num(after, k) - num(before, k));
  const blksRead = d('blks_read');
  const blksHit = d('blks_hit');
  return {
    xactCommit: d('xact_commit'),
    xactRollback: d('xact_rollback'),
    blksRead,
    blksHit,
    blkReadTimeMs: d('blk_read_time'),
    blkWriteTimeMs: d('blk_write_time'),
    tupUpdated: d('tup_updated'),
    tempBytes: d('temp_bytes'),
    deadlocks: d('deadlocks'),
    msPerBlockRead: blksRead > 0 ? d('blk_read_time') / blksRead : null,
    hitRatio: blksRead + blksHit > 0 ? blksHit / (blksRead + blksHit) : null,
  };
}

/** Checkpoints from pg_stat_checkpointer (17+) when the server has it, else from pg_stat_bgwriter. */
export function checkpointDeltas(before: StatSnapshot, after: StatSnapshot): CheckpointDeltas | null {
  if (after.checkpointer && before.checkpointer) {
    const d = (k: string) => Math.max(0, num(after.checkpointer, k) - num(before.checkpointer, k));
    return {
      timed: d('num_timed'),
      requested: d('num_requested'),
      writeTimeMs: d('write_time'),
      syncTimeMs: d('sync_time'),
      buffersWritten: d('buffers_written'),
    };
  }
  if (!after.bgwriter || !before.bgwriter) return null;
  const d = (k: string) => Math.max(0, num(after.bgwriter, k) - num(before.bgwriter, k));
  return {
    timed: d('checkpoints_timed'),
    requested: d('checkpoints_req'),
    writeTimeMs: d('checkpoint_write_time'),
    syncTimeMs: d('checkpoint_sync_time'),
    buffersWritten: d('buffers_checkpoint'),
  };
}

/** pg_stat_io (16+) summed per backend type over objects and contexts; null when the server has no such view. */
export function ioDeltas(before: StatRow[] | null, after: StatRow[] | null): Record<string, IoDeltas> | null {
  if (!before || !after) return null;
  const key = (r: StatRow) => `${String(r.backend_type)}|${String(r.object)}|${String(r.context)}`;
  const earlier = new Map(before.map((r) => [key(r), r]));
  const out: Record<string, IoDeltas> = {};
  for (const row of after) {
    const prev = earlier.get(key(row));
    const d = (k: string) => Math.max(0, num(row, k) - num(prev, k));
    const type = String(row.backend_type);
    const acc = (out[type] ??= { reads: 0, readTimeMs: 0, writes: 0, writeTimeMs: 0, extends: 0, fsyncs: 0 });
    acc.reads += d('reads');
    acc.readTimeMs += d('read_time');
    acc.writes += d('writes');
    acc.writeTimeMs += d('write_time');
    acc.extends += d('extends');
    acc.fsyncs += d('fsyncs');
  }
  return out;
}
