/**
 * pgBackRest output → typed results: `info --output=json` (backups and the archive's range), `repo-ls --output=json`
 * (archived WAL files) and `verify --output=text --verbose` (2.45 has no JSON mode for verify).
 * Tested on real output of pgBackRest 2.45 in test/fixtures/pgbackrest-2.45/.
 */
import type { BackupInfo } from '../../common/results/drill-result';

/** One backup in `pgbackrest info`: the drill's BackupInfo fields pgBackRest knows, and whether it failed. */
export interface PgbackrestBackup extends Omit<BackupInfo, 'tool' | 'toolVersion' | 'seconds'> {
  error: boolean;
}

export interface PgbackrestStanzaInfo {
  name: string;
  /** 0 is ok; pgBackRest's own codes otherwise (1 missing stanza path, 2 no valid backups, ...). */
  statusCode: number;
  statusMessage: string;
  backups: PgbackrestBackup[];
  /** Archived WAL per database, oldest and newest segment. */
  archives: { id: string; min: string | null; max: string | null }[];
}

interface InfoJson {
  name: string;
  status: { code: number; message: string };
  archive?: { id: string; min: string | null; max: string | null }[];
  backup?: {
    label: string;
    type: string;
    error?: boolean;
    timestamp: { start: number; stop: number };
    info: { size: number; repository: { size: number; delta: number } };
    lsn: { start: string; stop: string };
    archive: { start: string; stop: string };
  }[];
}

/** The stanza's entry in `pgbackrest info --output=json`; throws when the output has no such stanza. */
export function parseInfo(json: string, stanza: string): PgbackrestStanzaInfo {
  // system-id exceeds 2^53 and loses precision here; nothing below reads it.
  const entries = JSON.parse(json) as InfoJson[];
  const entry = entries.find((e) => e.name === stanza);
  if (!entry) throw new Error(`pgbackrest info has no stanza "${stanza}" (found: ${entries.map((e) => e.name).join(', ') || 'none'})`);
  return {
    name: entry.name,
    statusCode: entry.status.code,
    statusMessage: entry.status.message,
    backups: (entry.backup ?? []).map((b) => ({
      label: b.label,
      type: b.type,
      startedAt: new Date(b.timestamp.start * 1000).toISOString(),
      stoppedAt: new Date(b.timestamp.stop * 1000).toISOString(),
      databaseBytes: b.info.size,
      // What this backup stored (an incr's size counts the files it references in earlier backups too).
      repositoryBytes: b.info.repository.delta,
      startLsn: b.lsn.start,
      stopLsn: b.lsn.stop,
      walStart: b.archive.start,
      walStop: b.archive.stop,
      error: b.error ?? false,
    })),
    archives: (entry.archive ?? []).map((a) => ({ id: a.id, min: a.min, max: a.max })),
  };
}

/** One archived WAL segment in the repository. */
export interface ArchivedSegment {
  /** Path relative to the repository's archive folder: <stanza>/<archive id>/<dir>/<file>. */
  path: string;
  archiveId: string;
  segment: string;
  bytes: number;
}

/** Archived WAL segments from `repo-ls --recurse --output=json archive`, sorted by name; .backup and .history files are skipped. */
export function parseArchiveListing(json: string): ArchivedSegment[] {
  const entries = JSON.parse(json) as Record<string, { type: string; size?: number }>;
  const segments: ArchivedSegment[] = [];
  for (const [p, e] of Object.entries(entries)) {
    if (e.type !== 'file') continue;
    const parts = p.split('/');
    // <stanza>/<archive id>/<16-hex dir>/<24-hex segment>-<sha1>[.<compression>]
    const m = /^([0-9A-F]{24})-[0-9a-f]{40}(\.\w+)?$/.exec(parts[parts.length - 1]);
    if (!m || parts.length < 4) continue;
    segments.push({ path: p, archiveId: parts[parts.length - 3], segment: m[1], bytes: e.size ?? 0 });
  }
  return segments.sort((a, b) => a.segment.localeCompare(b.segment));
}

export interface VerifyCounts {
  checked: number;
  valid: number;
  missing: number;
  checksumInvalid: number;
  sizeInvalid: number;
  other: number;
}

export interface PgbackrestVerify {
  stanza: string;
  status: string;
  archives: ({ archiveId: string } & VerifyCounts)[];
  backups: ({ label: string; status: string } & VerifyCounts)[];
}

/** `pgbackrest verify --output=text --verbose`. Its exit code is 0 even for status "error": read the status. */
export function parseVerify(text: string): PgbackrestVerify {
  const lines = text.split('\n').map((l) => l.trim());
  const stanza = /^stanza: (\S+)/.exec(lines.find((l) => l.startsWith('stanza:')) ?? '')?.[1];
  const status = /^status: (\S+)/.exec(lines.find((l) => l.startsWith('status:')) ?? '')?.[1];
  if (!stanza || !status) throw new Error(`not pgbackrest verify --verbose output: ${JSON.stringify(text.slice(0, 200))}`);
  const result: PgbackrestVerify = { stanza, status, archives: [], backups: [] };
  for (let i = 0; i < lines.length; i++) {
    const archive = /^archiveId: ([^,]+), total WAL checked: (\d+), total valid WAL: (\d+)/.exec(lines[i]);
    const backup = /^backup: ([^,]+), status: ([^,]+), total files checked: (\d+), total valid files: (\d+)/.exec(lines[i]);
    const counts = /^missing: (\d+), checksum invalid: (\d+), size invalid: (\d+), other: (\d+)/.exec(lines[i + 1] ?? '');
    const detail = counts
      ? { missing: Number(counts[1]), checksumInvalid: Number(counts[2]), sizeInvalid: Number(counts[3]), other: Number(counts[4]) }
      : { missing: 0, checksumInvalid: 0, sizeInvalid: 0, other: 0 };
    if (archive) result.archives.push({ archiveId: archive[1], checked: Number(archive[2]), valid: Number(archive[3]), ...detail });
    if (backup)
      result.backups.push({ label: backup[1], status: backup[2], checked: Number(backup[3]), valid: Number(backup[4]), ...detail });
  }
  return result;
}
