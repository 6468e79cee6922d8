/**
 * A data set's relation files, read byte for byte (issue 31): each table of the set, its indexes, its TOAST table and
 * TOAST index, every fork and segment, with its size and its XXH128. A restored host whose files are the publisher's
 * holds the publisher's rows, hint bits, visibility map and free space map: the same physical state, shown directly,
 * and it need not scan its rows again (their checksums are the costliest part of its checks: 25 M rows take about
 * 8 CPU seconds; xxhsum reads the 3.9 GB of files in about 0.7, docs/data-sets.md).
 *
 * xxhsum (Debian's xxhash package, infra/bootstrap.sh and the EC2 user data install it) runs as the server's user,
 * on paths the server names and this module checks, within the data folder. Without it, nothing is read and the
 * rows are scanned as before.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import { DATA_SET_TABLES, type RelationFiles } from '../../common/input/data-set';
import { labFileSize, listLabDir } from '../../lib/lab-fs';
import { runProcess } from '../../lib/process-runner';
import { asPostgresUser, type HostDeps } from './deps';

/** Where Debian's xxhash package puts xxhsum: a fixed path, never one looked up on a PATH a request could change. */
export const XXHSUM = '/usr/bin/xxhsum';

/** A relation's file path as pg_relation_filepath gives it in the default tablespace: base/<database>/<filenode>. */
const RELATION_PATH = /^base\/(\d+)\/(\d+)$/;

/**
 * The set's relations with their file paths: each table, its indexes, its TOAST table (named "<table> TOAST") and
 * the TOAST table's index ("<table> TOAST index"), so that the names are the same on every host.
 */
const RELATIONS_SQL = `
  SELECT CASE WHEN r.oid = t.oid THEN t.relname
              WHEN r.oid = t.reltoastrelid THEN t.relname || ' TOAST'
              WHEN i.indrelid = t.reltoastrelid THEN t.relname || ' TOAST index'
              ELSE r.relname END AS name,
         pg_catalog.pg_relation_filepath(r.oid) AS path
    FROM pg_catalog.pg_class t
    JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
    JOIN pg_catalog.pg_class r ON r.oid = t.oid OR r.oid = t.reltoastrelid
      OR r.oid IN (SELECT x.indexrelid FROM pg_catalog.pg_index x WHERE x.indrelid IN (t.oid, t.reltoastrelid))
    LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = r.oid
   WHERE n.nspname = 'public' AND t.relkind = 'r' AND t.relname = ANY($1::text[])`;

/** One relation's files in its folder: the main fork's name, the other forks' suffixes, a segment number past the first. */
export function relationFileLabel(filenode: string, name: string): string | null {
  const m = new RegExp(`^${filenode}(?:_(fsm|vm|init))?(?:\\.([1-9]\\d*))?$`).exec(name);
  if (!m) return null;
  return `${m[1] ?? 'main'}${m[2] ? `.${m[2]}` : ''}`;
}

/** xxhsum -H2's lines: the 32 hex digits of a file's XXH128, two spaces, the path as given. */
export function parseXxhsum(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    const m = /^([0-9a-f]{32}) {2}(.+)$/.exec(line);
    if (!m) throw new Error(`xxhsum printed ${JSON.stringify(line.slice(0, 120))}, not "<XXH128>  <file>"`);
    out.set(m[2], m[1]);
  }
  return out;
}

/**
 * The set's relation files on this host, read now, or null where they cannot be read as such (no xxhsum here, a
 * relation outside the default tablespace): the caller then scans the rows. Read after a checkpoint with nothing
 * writing, so the files hold every change.
 */
export async function relationFileDigests(deps: HostDeps, c: Client): Promise<RelationFiles | null> {
  if (!existsSync(XXHSUM)) return null;
  const r = await c.query<{ name: string; path: string }>(RELATIONS_SQL, [[...DATA_SET_TABLES]]);
  const wanted: { relation: string; file: string; rel: string }[] = [];
  const listed = new Map<string, string[]>();
  for (const row of r.rows) {
    const m = RELATION_PATH.exec(row.path);
    if (!m) return null;
    const folder = path.join('base', m[1]);
    if (!listed.has(folder)) listed.set(folder, listLabDir(path.join(deps.config.dataDir, folder)) ?? []);
    for (const name of listed.get(folder)!) {
      const label = relationFileLabel(m[2], name);
      if (label) wanted.push({ relation: row.name, file: label, rel: path.join(folder, name) });
    }
  }
  if (wanted.length === 0) return null;
  const digests = parseXxhsum(
    (await runProcess(XXHSUM, ['-H2', '--', ...wanted.map((w) => w.rel)], { ...asPostgresUser(deps), cwd: deps.config.dataDir, timeoutMs: 30 * 60_000, maxCaptureBytes: 1 << 20 })).stdout,
  );
  const files: RelationFiles = {};
  for (const w of wanted) {
    const xxh128 = digests.get(w.rel);
    const bytes = labFileSize(path.join(deps.config.dataDir, w.rel));
    if (!xxh128 || bytes === null) throw new Error(`xxhsum read no ${w.rel} (${w.relation} ${w.file})`);
    (files[w.relation] ??= {})[w.file] = { bytes, xxh128 };
  }
  return files;
}
