/**
 * What each PostgreSQL major can do in the lab, as spec rules. Pure and workflow-safe: the experiment and drill
 * specs call these from their semantic rules, so a spec asking a version for what it cannot do is refused before
 * anything is provisioned, naming the field.
 *
 * Locally, PostgreSQL 15 is Debian's full installation (server, client tools, pgBackRest 2.45); 16+ runs from
 * server-only binaries (infra/bootstrap.sh installs 17) driven by Debian's 15 client tools. pgbench, psql,
 * pg_recvlogical and pg_amcheck 15 work against a 17 server; pg_basebackup and pg_rewind 15 refuse it ("incompatible
 * server version", "clusters are not compatible with this version of pg_rewind") and pgBackRest 2.45 does not know
 * its control file ("unexpected control version = 1700"); WAL-G v3.0.8 backs 17 up and restores it (backup-push,
 * wal-push, backup-fetch, wal-fetch replay: checked here). A provider whose hosts install the requested major with
 * matching tools (EC2 hosts, from apt.postgresql.org) declares no client tools major, so these limits are local only.
 */
import type { BackupToolName } from './backup-store';
import type { SpecProblem } from '../core/errors';

/** The major whose client tools (and backup tool) a local host has: Debian 12's. */
export const LOCAL_CLIENT_MAJOR = 15;
/** The major local-quick runs: the newest the bootstrap installs. */
export const LOCAL_SERVER_MAJOR = 17;
/** `debug_io_direct` exists from PostgreSQL 16 on. */
export const DIRECT_IO_MIN_MAJOR = 16;

/** Which files Postgres opens with O_DIRECT (`debug_io_direct`): none, the data files, or data files and WAL. */
export const DIRECT_IO_MODES = ['off', 'data', 'data+wal'] as const;
export type DirectIoMode = (typeof DIRECT_IO_MODES)[number];

/** The `debug_io_direct` value of a mode, or null for off (the setting is then left out). */
export function debugIoDirect(mode: DirectIoMode): string | null {
  return mode === 'off' ? null : mode === 'data' ? 'data' : 'data, wal';
}

/** What a spec asks a PostgreSQL version for, and what its provider's hosts have (common/providers/registry.ts clientToolsOf). */
export interface VersionNeeds {
  /** The major of the hosts' client tools when a newer server runs with them; null: each host has its server's. */
  clientToolsMajor: number | null;
  /** Where else a run could go whose hosts have matching tools, in words ("on AWS"); null: nowhere. */
  elsewhere: string | null;
  version: number | undefined;
  directIo: DirectIoMode;
  /** WAL archiving and base backups (experiment durability, restore drill). */
  backups: boolean;
  /** The tool that takes them; absent means pgBackRest (what hosts run until a spec names one). */
  backupTool?: BackupToolName;
  /** Streaming replicas cloned with pg_basebackup and rejoined with pg_rewind (failover drill). */
  replicas: boolean;
  /** Where in the spec each need comes from, for the messages. */
  fields: { version: string; directIo: string; backups: string; replicas: string };
}

/** Problems of asking the spec's version for what it cannot do; empty when it can. */
export function versionProblems(needs: VersionNeeds): SpecProblem[] {
  const { version, fields } = needs;
  const problems: SpecProblem[] = [];
  if (needs.directIo !== 'off' && (version === undefined || version < DIRECT_IO_MIN_MAJOR))
    problems.push({
      path: fields.directIo,
      message: `"${needs.directIo}" needs PostgreSQL ${DIRECT_IO_MIN_MAJOR}+ (debug_io_direct); set ${fields.version} to ${LOCAL_SERVER_MAJOR}${version === undefined ? '' : ` (it is ${version})`} or ${fields.directIo} to "off"`,
    });
  const tools = needs.clientToolsMajor;
  if (tools === null || version === undefined || version <= tools) return problems;
  if (needs.backups && needs.backupTool !== 'wal-g')
    problems.push({
      path: fields.backups,
      message: `backups with pgBackRest need PostgreSQL ${tools} here (Debian's pgBackRest 2.45 does not know ${version}'s control file); back up with WAL-G${needs.elsewhere ? ', ' : ' or '}set ${fields.version} to ${tools}${needs.elsewhere ? `, or run ${needs.elsewhere}` : ''}`,
    });
  if (needs.replicas)
    problems.push({
      path: fields.replicas,
      message: `PostgreSQL ${version} runs here from server-only binaries with Debian's ${tools} client tools, and pg_basebackup / pg_rewind ${tools} refuse a ${version} server; the failover drill needs them: set ${fields.version} to ${tools}${needs.elsewhere ? ` (or run ${needs.elsewhere})` : ''}`,
    });
  return problems;
}
