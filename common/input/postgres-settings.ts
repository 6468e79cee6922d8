/**
 * Server settings a spec implies. Pure: the workflow computes them and hands them to the host's agent, the lab's own
 * (typed, from this module and the drills') apart from the spec's `postgres.settings`, so no value of the spec can
 * pose as one of the lab's; the host checks both again before it writes anything.
 */
import { phasesNeedLogicalWal } from '../phases/registry';
import type { SpecProblem } from '../core/errors';
import { debugIoDirect } from './postgres-versions';
import type { ExperimentSpec } from './spec';

/** Connections beyond pgbench's clients: the sampler, the agent's own, replication and a person with psql. */
export const SPARE_CONNECTIONS = 20;

const SIZE = /^\d+(kB|MB|GB|TB)$/;
const INTEGER = /^\d+$/;
const ON_OFF = /^(on|off)$/;

/**
 * Every setting the lab writes itself (experiments here, drills in common/input/drill-spec.ts drillLabSettings), with the
 * shape its value must have. A host refuses any other name, or a value of another shape, in the lab's settings.
 */
export const LAB_SETTINGS = {
  shared_buffers: SIZE,
  max_wal_size: SIZE,
  max_connections: INTEGER,
  wal_level: /^(minimal|replica|logical)$/,
  track_io_timing: ON_OFF,
  track_wal_io_timing: ON_OFF,
  log_checkpoints: ON_OFF,
  synchronous_commit: /^(on|off|local|remote_write|remote_apply)$/,
  debug_io_direct: /^data(, wal)?$/,
  hot_standby: ON_OFF,
  max_wal_senders: INTEGER,
  wal_log_hints: ON_OFF,
  wal_keep_size: SIZE,
  wal_retrieve_retry_interval: /^\d+(ms|s)$/,
  // The restore drill reads recovery timings from the log in this format.
  log_line_prefix: /^%m \[%p\] $/,
  log_timezone: /^UTC$/,
} as const satisfies Record<string, RegExp>;

/** A setting the lab manages. */
export type LabSettingName = keyof typeof LAB_SETTINGS;

/** The lab's own server settings, as a workflow hands them to a host (the spec's travel apart, as `user`). */
export type LabServerSettings = Partial<Record<LabSettingName, string>>;

/** Problems of the lab's settings as a host receives them (paths `server.<name>`); empty when every one fits. */
export function labSettingProblems(settings: Record<string, unknown>): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [name, value] of Object.entries(settings)) {
    const shape: RegExp | undefined = Object.hasOwn(LAB_SETTINGS, name) ? LAB_SETTINGS[name as LabSettingName] : undefined;
    if (!shape) problems.push({ path: `server.${name}`, message: `not a setting the lab manages (${Object.keys(LAB_SETTINGS).join(', ')}); the spec's settings travel as postgres.settings` });
    else if (typeof value !== 'string' || !shape.test(value))
      problems.push({ path: `server.${name}`, message: `${JSON.stringify(value)} is not of the form ${shape.source}` });
  }
  return problems;
}

/**
 * The lab's own server settings of a spec. `stage` "load": without direct I/O, which only the measured phases need;
 * the load (8 KB direct writes through an emulated volume's cap, then a VACUUM ANALYZE of every page) would take far
 * longer and measure nothing. The data files are the same either way; the cluster restarts with direct I/O after it.
 */
export function labPostgresSettings(spec: ExperimentSpec, stage: 'load' | 'measure' = 'measure'): LabServerSettings {
  const settings: LabServerSettings = {
    shared_buffers: `${spec.postgres.sharedBuffersMiB}MB`,
    max_wal_size: `${spec.postgres.maxWalSizeMiB}MB`,
    max_connections: String(spec.workload.clients + SPARE_CONNECTIONS),
    // Logical decoding for a phase that decodes WAL; it also serves physical replicas and archiving.
    wal_level: phasesNeedLogicalWal(spec.phases) || spec.durability.enabled ? 'logical' : 'replica',
    // ms per block read (blk_read_time / blks_read) needs it; the reference's measurements turn it on.
    track_io_timing: 'on',
    // WAL write and sync time (pg_stat_wal): the server's side of the WAL cross-check of the sampled wait events.
    track_wal_io_timing: 'on',
    log_checkpoints: 'on',
    synchronous_commit: 'on',
  };
  // O_DIRECT data files (and WAL): writes go to the device as the writing backend's own I/O, in its host's cgroup.
  const direct = debugIoDirect(spec.postgres.directIo);
  if (direct && stage === 'measure') settings.debug_io_direct = direct;
  return settings;
}

/** The spec's `postgres.settings` as a host receives them: every value a string, as postgresql.conf holds it. */
export function userPostgresSettings(settings: Record<string, string | number | boolean>): Record<string, string> {
  return Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, String(v)]));
}

/** Every server setting of a spec as the host writes it: the lab's, then the spec's on top (the preflight checks them so). */
export function postgresSettings(spec: ExperimentSpec, stage: 'load' | 'measure' = 'measure'): Record<string, string> {
  return { ...labPostgresSettings(spec, stage), ...userPostgresSettings(spec.postgres.settings) };
}

/** synchronous_standby_names of a primary whose commits wait for any one of `standbys` ('' for none: asynchronous). */
export function synchronousStandbyNames(standbys: string[]): string {
  return standbys.length ? `ANY 1 (${standbys.join(', ')})` : '';
}

/** The share of the data volume every session together may fill with temporary files (sorts, hashes, CTEs). */
export const TEMP_FILES_VOLUME_SHARE = 0.25;
/** The least temp_file_limit a host gets, whatever its volume: one sort of a few MB spills no further. */
const MIN_TEMP_FILE_LIMIT_KB = 1024;

/**
 * temp_file_limit (kB) of a host: a quarter of its data volume, shared by every connection the server allows
 * (temp_file_limit bounds each session), so the workload's sessions together cannot fill the volume. The lab's own
 * sessions, whose sorts grow with the data set (primary keys, row checks), lift it (lib/pg.ts).
 */
export function tempFileLimitKb(volumeBytes: number, maxConnections: number): number {
  return Math.max(MIN_TEMP_FILE_LIMIT_KB, Math.floor((volumeBytes * TEMP_FILES_VOLUME_SHARE) / Math.max(1, maxConnections) / 1024));
}
