/**
 * WAL-G against pgBackRest on the same data, the same Postgres and the same disk, in one run, alternating which goes
 * first each round: a full base backup (time, database and repository bytes), the repository check (time), and a
 * restore onto an empty data folder (fetch time, then replay and promote from the server's log). Both on a folder
 * store, lz4, the tools' default parallelism. Prints each round, the medians, and WAL-G / pgBackRest ratios.
 *   node dist/bench/backup-tools.js [--scale 20] [--rounds 2]
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  checkArchive,
  configureBackups,
  initBackupRepository,
  recoverFromBackup,
  restoreBackup,
  takeBackup,
} from '../activities/host/backup';
import { waitForArchive } from '../activities/host/restore-drill';
import { loadData } from '../activities/host/load';
import { configurePostgres, stopPostgres } from '../activities/host/postgres';
import { withConnection } from '../lib/pg';
import type { BackupToolName, ResolvedBackupStore } from '../common/input/backup-store';
import { segmentOfLsn } from '../common/core/lsn';
import { hostSettings, median, startBenchHost, type BenchHost } from './bench-host';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
  },
});
const scale = Number(values.scale);
const rounds = Number(values.rounds);

const SETTINGS = { shared_buffers: '128MB', max_wal_size: '4096MB', wal_level: 'replica', max_connections: '50', log_line_prefix: '%m [%p] ', log_timezone: 'UTC' };
const TOOLS: BackupToolName[] = ['wal-g', 'pgbackrest'];

interface Round {
  backupSeconds: number;
  databaseMiB: number;
  repositoryMiB: number;
  verifySeconds: number;
  fetchSeconds: number;
  replaySeconds: number;
  promoteSeconds: number;
}

const MiB = 2 ** 20;

async function oneRound(tool: BackupToolName, source: BenchHost, restore: BenchHost, storeRoot: string, round: number): Promise<Round> {
  const store: ResolvedBackupStore = { kind: 'folder', path: path.join(storeRoot, `${tool}-${round}`) };
  const src = source.deps.config.hostId;
  const dst = restore.deps.config.hostId;
  await source.run(configureBackups, { hostId: src, store, tool });
  await source.run(configurePostgres, { hostId: src, ...hostSettings(SETTINGS), archiving: { archiveTimeoutSeconds: 60 } });
  await source.run(initBackupRepository, { hostId: src, store, tool });
  const backup = await source.run(takeBackup, { hostId: src, store, tool, kind: 'full' });
  // The restore needs WAL up to the backup's end: close that segment and let it reach the store. The restore point
  // writes WAL after the backup's history file, so the segment closed is the newest thing archived.
  const lastByte = await withConnection(source.deps.config, async (c) => {
    await c.query("SELECT pg_create_restore_point('bench')");
    return (await c.query<{ lsn: string }>('SELECT (pg_switch_wal() - 1)::text AS lsn')).rows[0].lsn;
  });
  await source.run(waitForArchive, { hostId: src, lsn: lastByte, timeoutSeconds: 60 });

  const t0 = process.hrtime.bigint();
  await source.run(checkArchive, { hostId: src, store, tool, from: backup.walStart, to: segmentOfLsn(lastByte, 1) });
  const verifySeconds = Number(process.hrtime.bigint() - t0) / 1e9;

  await restore.run(stopPostgres, { hostId: dst, mode: 'immediate' });
  rmSync(restore.deps.config.dataDir, { recursive: true, force: true });
  await restore.run(configureBackups, { hostId: dst, store, tool });
  const fetched = await restore.run(restoreBackup, { hostId: dst, store, tool, target: { type: 'latest' } });
  const recovery = await restore.run(recoverFromBackup, { hostId: dst, ...hostSettings(SETTINGS), timeoutSeconds: 600 });
  if (!recovery.ok) throw new Error(`${tool}: recovery failed: ${recovery.detail}`);
  rmSync(store.path, { recursive: true, force: true });
  return {
    backupSeconds: backup.seconds,
    databaseMiB: backup.databaseBytes / MiB,
    repositoryMiB: backup.repositoryBytes / MiB,
    verifySeconds,
    fetchSeconds: fetched.fetchSeconds,
    replaySeconds: recovery.replaySeconds!,
    promoteSeconds: recovery.promoteSeconds!,
  };
}

async function main(): Promise<void> {
  console.log(`backup tools benchmark: scale ${scale} (${(scale * 1e5).toLocaleString('en-US')} rows), ${rounds} rounds, folder store, lz4`);
  const storeRoot = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-bench-stores-'));
  chmodSync(storeRoot, 0o755);
  const source = await startBenchHost('backup-source', SETTINGS);
  const restore = await startBenchHost('backup-restore', SETTINGS);
  const results: Record<BackupToolName, Round[]> = { 'wal-g': [], pgbackrest: [] };
  try {
    await source.run(loadData, { hostId: source.deps.config.hostId, scale, chunkRows: 100_000, writers: 2 });
    for (let r = 1; r <= rounds; r++) {
      // Alternate which goes first, so warm caches and background writeback favour neither.
      for (const tool of r % 2 ? TOOLS : [...TOOLS].reverse()) {
        const x = await oneRound(tool, source, restore, storeRoot, r);
        results[tool].push(x);
        console.log(
          `  round ${r}: ${tool.padEnd(10)} backup ${x.backupSeconds.toFixed(2)} s, ${x.databaseMiB.toFixed(0)} MiB -> ${x.repositoryMiB.toFixed(1)} MiB; ` +
            `check ${x.verifySeconds.toFixed(2)} s; restore: fetch ${x.fetchSeconds.toFixed(2)} s, replay ${x.replaySeconds.toFixed(2)} s, promote ${x.promoteSeconds.toFixed(2)} s`,
        );
      }
    }
  } finally {
    await source.close();
    await restore.close();
    rmSync(storeRoot, { recursive: true, force: true });
  }
  const fields: (keyof Round)[] = ['backupSeconds', 'repositoryMiB', 'verifySeconds', 'fetchSeconds', 'replaySeconds', 'promoteSeconds'];
  console.log(`median       ${fields.map((f) => f.padStart(15)).join('')}`);
  const med = (tool: BackupToolName, f: keyof Round) => median(results[tool].map((x) => x[f]));
  for (const tool of TOOLS) console.log(`${tool.padEnd(13)}${fields.map((f) => med(tool, f).toFixed(2).padStart(15)).join('')}`);
  console.log(`wal-g / pgbr ${fields.map((f) => (med('wal-g', f) / med('pgbackrest', f)).toFixed(2).padStart(15)).join('')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
