/** Server settings a spec implies. Pure: the workflow computes them and hands them to the host's agent. */
import { debugIoDirect } from './postgres-versions';
import type { ExperimentSpec } from './spec';

/** Connections beyond pgbench's clients: the sampler, the agent's own, replication and a person with psql. */
export const SPARE_CONNECTIONS = 20;

/**
 * The server settings of a spec. `stage` "load": without direct I/O, which only the measured phases need; the load
 * (8 KB direct writes through an emulated volume's cap, then a VACUUM ANALYZE of every page) would take far longer
 * and measure nothing. The data files are the same either way; the cluster restarts with direct I/O after the load.
 */
export function postgresSettings(spec: ExperimentSpec, stage: 'load' | 'measure' = 'measure'): Record<string, string> {
  const settings: Record<string, string> = {
    shared_buffers: `${spec.postgres.sharedBuffersMiB}MB`,
    max_wal_size: `${spec.postgres.maxWalSizeMiB}MB`,
    max_connections: String(spec.workload.clients + SPARE_CONNECTIONS),
    // Logical decoding for the backlog phase; it also serves physical replicas and archiving.
    wal_level: spec.phases.backlog.enabled || spec.durability.enabled ? 'logical' : 'replica',
    // ms per block read (blk_read_time / blks_read) needs it; the reference's diagnostics turn it on.
    track_io_timing: 'on',
    // WAL write and sync time (pg_stat_wal): the server's side of the WAL cross-check of the sampled wait events.
    track_wal_io_timing: 'on',
    log_checkpoints: 'on',
    synchronous_commit: 'on',
  };
  // O_DIRECT data files (and WAL): writes go to the device as the writing backend's own I/O, in its host's cgroup.
  const direct = debugIoDirect(spec.postgres.directIo);
  if (direct && stage === 'measure') settings.debug_io_direct = direct;
  for (const [key, value] of Object.entries(spec.postgres.settings)) settings[key] = String(value);
  return settings;
}
