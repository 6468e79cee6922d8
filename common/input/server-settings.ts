/**
 * `postgres.settings` of a spec: the settings no spec may set, each with its reason, and the schema that refuses
 * them. Pure and workflow-safe. A spec is untrusted input (anyone who can start a workflow writes one), and these
 * settings would run a program, load code, read or write files outside the host's data folder, listen beyond the
 * host, or take over what the lab itself manages. Names, types, units and ranges of the rest are checked by the
 * real server of the version that will run (lib/spec-checks.ts), before any host exists.
 */
import { z } from 'zod';
import type { SpecProblem } from '../core/errors';

/** Why a family of settings is refused; docs/threat-model.md lists them by family. */
export const REFUSED_FAMILIES = {
  program: 'runs a program of its choosing as the Postgres OS user',
  code: 'loads code (a shared library) into the server',
  files: 'reads or writes files outside the data folder',
  network: 'listens, advertises or connects beyond the host',
  tls: 'TLS: reads key and certificate files anywhere, or runs a passphrase program',
  developer: 'a developer option: corrupts or hides what the lab verifies, or writes files outside the data folder',
  lab: 'managed by the lab itself',
} as const;
export type RefusedFamily = keyof typeof REFUSED_FAMILIES;

/** One refused setting (or a pattern of them), why, and what to do instead. */
export interface RefusedSetting {
  /** A lower-case name, or a pattern that also catches the same kind of setting in other versions. */
  name: string | RegExp;
  family: RefusedFamily;
  /** What the setting would do here, or what the lab already does with it. */
  reason: string;
  /** The spec field to use instead, when there is one. */
  instead?: string;
}

/**
 * Every setting a spec may not set, checked against `postgres --describe-config` of PostgreSQL 15 and the
 * release notes up to 18. Exact names come first; the patterns after them catch the same kinds in any version.
 */
export const REFUSED_SETTINGS: readonly RefusedSetting[] = [
  { name: 'archive_command', family: 'program', reason: 'runs a shell command for every WAL segment' },
  { name: 'archive_cleanup_command', family: 'program', reason: 'runs a shell command on a standby at every restart point' },
  { name: 'restore_command', family: 'program', reason: 'runs a shell command to fetch each WAL segment during recovery' },
  { name: 'recovery_end_command', family: 'program', reason: 'runs a shell command at the end of recovery' },
  { name: 'archive_library', family: 'code', reason: 'loads an archive module library' },
  { name: 'shared_preload_libraries', family: 'code', reason: 'loads libraries into the postmaster' },
  { name: 'session_preload_libraries', family: 'code', reason: 'loads libraries into every session' },
  { name: 'local_preload_libraries', family: 'code', reason: 'loads libraries into every session' },
  { name: 'oauth_validator_libraries', family: 'code', reason: 'loads OAuth validator libraries (18+)' },
  { name: 'dynamic_library_path', family: 'code', reason: 'lets LOAD and CREATE FUNCTION find libraries in any folder' },
  { name: 'jit_provider', family: 'code', reason: 'loads the named JIT library' },
  { name: 'extension_destdir', family: 'code', reason: 'makes extensions (and their libraries) load from another folder' },
  { name: 'extension_control_path', family: 'code', reason: 'makes extensions (and their libraries) load from other folders (18+)' },
  { name: 'data_directory', family: 'files', reason: 'moves the data folder anywhere on the host' },
  { name: 'config_file', family: 'files', reason: 'reads the configuration from another file' },
  { name: 'hba_file', family: 'files', reason: 'reads client authentication rules from another file' },
  { name: 'ident_file', family: 'files', reason: 'reads user name maps from another file' },
  { name: 'external_pid_file', family: 'files', reason: 'writes a pid file anywhere' },
  { name: 'log_directory', family: 'files', reason: 'writes server logs into any folder' },
  { name: 'log_filename', family: 'files', reason: 'names log files, a path relative to log_directory (../ escapes it)' },
  { name: 'stats_temp_directory', family: 'files', reason: 'writes statistics files into any folder (12-14)' },
  { name: 'promote_trigger_file', family: 'files', reason: 'promotes a standby when a file anywhere appears (12-15); the lab promotes' },
  { name: 'krb_server_keyfile', family: 'files', reason: 'reads a Kerberos key file anywhere' },
  { name: 'include', family: 'files', reason: 'reads another configuration file' },
  { name: 'include_if_exists', family: 'files', reason: 'reads another configuration file' },
  { name: 'include_dir', family: 'files', reason: 'reads every configuration file of a folder' },
  { name: 'listen_addresses', family: 'network', reason: "the lab binds the host's own address (loopback locally, the VPC address on AWS)" },
  { name: 'port', family: 'network', reason: 'the lab picks a free port per host' },
  { name: 'unix_socket_directories', family: 'network', reason: "the lab puts the socket in the host's own folder" },
  { name: 'unix_socket_group', family: 'network', reason: "changes who may reach the host's socket" },
  { name: 'unix_socket_permissions', family: 'network', reason: "changes who may reach the host's socket" },
  { name: 'bonjour', family: 'network', reason: 'advertises the server on the network' },
  { name: 'bonjour_name', family: 'network', reason: 'advertises the server on the network' },
  { name: 'primary_conninfo', family: 'network', reason: 'connects to any server as a standby; the drills set it' },
  { name: 'zero_damaged_pages', family: 'developer', reason: 'silently zeroes damaged pages, hiding what pg_amcheck and checksums would find' },
  { name: 'fsync', family: 'developer', reason: 'off acknowledges commits the device never made durable: a power cut loses them and can corrupt the cluster (the power-cut drill shows it, through a test seam only)' },
  { name: 'full_page_writes', family: 'developer', reason: 'off leaves pages torn by a power cut unrepairable by crash recovery' },
  { name: 'ignore_checksum_failure', family: 'developer', reason: 'reads pages whose checksums fail' },
  { name: 'ignore_invalid_pages', family: 'developer', reason: 'lets recovery go on over invalid pages' },
  { name: 'ignore_system_indexes', family: 'developer', reason: 'ignores system indexes' },
  { name: 'allow_system_table_mods', family: 'developer', reason: 'allows changing system catalogs' },
  { name: 'allow_in_place_tablespaces', family: 'developer', reason: 'creates tablespaces inside pg_tblspc' },
  { name: 'jit_profiling_support', family: 'developer', reason: 'writes perf map files to /tmp' },
  { name: 'jit_debugging_support', family: 'developer', reason: 'registers JIT code with a debugger' },
  { name: 'pre_auth_delay', family: 'developer', reason: 'makes every connection sleep before authentication' },
  { name: 'post_auth_delay', family: 'developer', reason: 'makes every connection sleep after authentication' },
  { name: 'shared_buffers', family: 'lab', reason: 'the memory rules size the host from it', instead: 'postgres.sharedBuffersMiB' },
  { name: 'max_wal_size', family: 'lab', reason: "the volume is sized from it (drills keep the server's default)", instead: 'postgres.maxWalSizeMiB' },
  { name: 'debug_io_direct', family: 'lab', reason: 'direct I/O is a spec field (16+)', instead: 'postgres.directIo' },
  { name: 'wal_level', family: 'lab', reason: 'the lab sets it from the phases: logical for a phase that decodes WAL, replica for backups and standbys' },
  { name: 'archive_mode', family: 'lab', reason: 'the lab archives WAL when backups are on', instead: 'durability.enabled' },
  { name: 'archive_timeout', family: 'lab', reason: 'the lab sets it with archiving (drills: backup.archiveTimeoutSeconds)', instead: 'durability.archiveTimeoutSeconds' },
  { name: 'synchronous_standby_names', family: 'lab', reason: 'the failover drill sets it from its mode (sync or async), the partition drill to ANY 1 of the standbys' },
  { name: 'synchronous_commit', family: 'lab', reason: 'the lab acknowledges a commit once it is durable (on); the drills count what is lost otherwise (off: a test seam only)' },
  { name: 'primary_slot_name', family: 'lab', reason: 'the drills set up replication' },
  { name: 'hot_standby', family: 'lab', reason: "the drills' standbys must answer their queries" },
  { name: 'logging_collector', family: 'lab', reason: "the lab reads the server's log where pg_ctl writes it (failures, recovery timings)" },
  { name: 'log_destination', family: 'lab', reason: "the lab reads the server's log where pg_ctl writes it (failures, recovery timings)" },
  { name: 'log_line_prefix', family: 'lab', reason: "the restore drill reads recovery timings from the log in the lab's format" },
  { name: 'log_timezone', family: 'lab', reason: "the restore drill reads recovery timings from the log in the lab's format" },
  { name: 'temp_file_limit', family: 'lab', reason: "the lab bounds temporary files from the data volume's size, so the workload cannot fill it" },
  { name: /^ssl/, family: 'tls', reason: 'the lab serves no TLS (no certificate on hosts; connections stay on loopback or inside the VPC)' },
  { name: /_command$/, family: 'program', reason: 'a *_command setting runs a shell command' },
  { name: /_librar(y|ies)$/, family: 'code', reason: 'a *_library / *_libraries setting loads code' },
  { name: /_file$/, family: 'files', reason: 'a *_file setting names a file anywhere on the host' },
  { name: /_director(y|ies)$/, family: 'files', reason: 'a *_directory setting names a folder anywhere on the host' },
  { name: /^recovery_target/, family: 'lab', reason: "the restore drill sets the recovery target from its target (time, lsn or latest)" },
];

/** The refusal that applies to a setting name (case-insensitive, as the server treats names), if any. */
export function refusedSetting(name: string): RefusedSetting | undefined {
  const lower = name.toLowerCase();
  return REFUSED_SETTINGS.find((r) => (typeof r.name === 'string' ? r.name === lower : r.name.test(lower)));
}

/** The message for a refused setting: what it would do and what to do instead. */
export function refusalMessage(r: RefusedSetting): string {
  return `refused: ${REFUSED_FAMILIES[r.family]} (${r.reason}); ${r.instead ? `set ${r.instead} instead` : 'remove it'}`;
}

/** Control characters other than none at all: a setting's value is one line of postgresql.conf. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** Problems of one setting that need no server to find, keyed by nothing but the setting itself; empty when none. */
export function settingProblems(name: string, value: unknown): string[] {
  const problems: string[] = [];
  const refused = refusedSetting(name);
  if (refused) problems.push(refusalMessage(refused));
  else if (name.includes('.'))
    problems.push(
      "an extension's setting; the lab loads no extension libraries (shared_preload_libraries is refused), so it would do nothing; remove it",
    );
  if (typeof value === 'string' && CONTROL_CHARACTER.test(value))
    problems.push(
      `the value contains a control character (${JSON.stringify(value.match(CONTROL_CHARACTER)![0])}); a setting is one line of postgresql.conf: remove newlines, tabs and other control characters`,
    );
  return problems;
}

/** What a setting's name may be: it is written unquoted into postgresql.conf. */
export const SETTING_NAME = /^[a-z_.]+$/;

/**
 * Every problem of `postgres.settings` that needs no server to find, with its dotted path: what the spec's rules
 * check, and what a host checks again before it writes anything (a value may have reached it without those rules).
 */
export function serverSettingsProblems(settings: Record<string, unknown>): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [name, value] of Object.entries(settings)) {
    const path = `postgres.settings.${name}`;
    if (!SETTING_NAME.test(name)) problems.push({ path, message: 'must be a server setting name: lower-case letters, underscores (and dots)' });
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
      problems.push({ path, message: 'must be a string, a number or a boolean' });
    for (const message of settingProblems(name, value)) problems.push({ path, message });
  }
  return problems;
}

/** Extra server settings, written to postgresql.conf as they are, once no refusal applies. */
export const ServerSettingsSchema = z
  .record(
    z.string().regex(SETTING_NAME, { error: 'must be a server setting name: lower-case letters, underscores (and dots)' }),
    z.union([z.string(), z.number(), z.boolean()], { error: 'must be a string, a number or a boolean' }),
  )
  .superRefine((settings, ctx) => {
    for (const [name, value] of Object.entries(settings))
      for (const message of settingProblems(name, value)) ctx.addIssue({ code: 'custom', path: [name], message });
  })
  .default({});

/** The refused settings as Markdown, by family, for docs/threat-model.md (a unit test keeps the doc equal to this). */
export function refusedSettingsMarkdown(): string {
  const lines: string[] = [];
  for (const [family, why] of Object.entries(REFUSED_FAMILIES)) {
    lines.push(`- ${why[0].toUpperCase()}${why.slice(1)}:`);
    for (const r of REFUSED_SETTINGS.filter((e) => e.family === family)) {
      const name = typeof r.name === 'string' ? `\`${r.name}\`` : `any name matching \`${r.name.source}\``;
      lines.push(`  - ${name}: ${r.reason}${r.instead ? `; use \`${r.instead}\`` : ''}`);
    }
  }
  return lines.join('\n');
}
