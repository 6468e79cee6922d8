/**
 * The checkpoint phase's host half against a real Postgres at a tiny size, on 15 (pg_stat_bgwriter) and on 17
 * (pg_stat_checkpointer): a bare host in a temporary folder, the activity in a mock activity context. What the phase
 * measures must agree with itself (its own checks pass on what the server measured), and the workload's seconds must
 * fall before, through and after the CHECKPOINT.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { loadData } from '../../activities/host/load';
import { runPgbench } from '../../activities/host/pgbench';
import { runCheckpointPhase } from '../../activities/host/phases/checkpoint';
import { checkpointPhase, type CheckpointPhaseInput } from '../../common/phases/checkpoint';
import { RANDOM_UPDATE_SCRIPT } from '../../common/input/presets';
import { withConnection } from '../../lib/pg';
import { findPostgresBinDir } from '../../lib/postgres-binaries';
import { startBenchHost, type BenchHost } from '../../bench/bench-host';

const SETTINGS = { shared_buffers: '32MB', max_wal_size: '256MB', track_io_timing: 'on', max_connections: '40', checkpoint_timeout: '30min' };
const VERSIONS = [15, 17].filter((v) => findPostgresBinDir(v) !== null);

describe.each(VERSIONS)('the checkpoint phase on PostgreSQL %i (integration)', (version) => {
  let host: BenchHost;
  let hostId: string;
  let input: CheckpointPhaseInput;
  const query = <T extends Record<string, unknown>>(sql: string) => withConnection(host.deps.config, async (c) => (await c.query<T>(sql)).rows);
  /** Dirties buffers as a TPS run does just before the phase. */
  const tpsRun = () => host.run(runPgbench, { hostId, label: 'tps', scale: 2, clients: 4, threads: 2, durationSeconds: 2, script: RANDOM_UPDATE_SCRIPT });

  beforeAll(async () => {
    host = await startBenchHost(`checkpoint-${version}`, SETTINGS, { version });
    hostId = host.deps.config.hostId;
    input = { hostId, workload: false, scale: 2, clients: 4, threads: 2, script: RANDOM_UPDATE_SCRIPT, leadSeconds: 3, tailSeconds: 2 };
    await host.run(loadData, { hostId, scale: 2, chunkRows: 50_000, writers: 2 });
  });
  afterAll(async () => {
    await host?.close();
  });

  it('times a CHECKPOINT alone: the buffers it wrote are the buffers that were dirty, and the device saw them', async () => {
    await tpsRun();
    const r = await host.run(runCheckpointPhase, input);
    expect(r.statsView).toBe(version >= 17 ? 'pg_stat_checkpointer' : 'pg_stat_bgwriter');
    expect(r.counters).toMatchObject({ requested: 1, timed: 0 });
    expect(r.dirtyBuffersBefore).toBeGreaterThan(100);
    // Nothing else ran: the checkpoint wrote every buffer that was dirty, and only those.
    expect(Math.abs(r.counters.buffersWritten - r.dirtyBuffersBefore)).toBeLessThanOrEqual(0.1 * r.dirtyBuffersBefore);
    expect(r.sharedBuffers * r.blockBytes).toBe(32 * 2 ** 20);
    expect(r.checkpointSeconds).toBeGreaterThan(0);
    expect(r.workload).toBeNull();
    expect(checkpointPhase.checks(hostId, { checkpoint: r }).filter((c) => !c.ok)).toEqual([]);
  });

  it('runs the workload through it: seconds before, overlapping and after the CHECKPOINT, and the dip from them', async () => {
    await tpsRun();
    const r = await host.run(runCheckpointPhase, { ...input, workload: true });
    const w = r.workload!;
    expect(w.series.filter((s) => s.at <= 0).length).toBeGreaterThanOrEqual(input.leadSeconds);
    expect(w.series.filter((s) => s.at - 1 >= r.checkpointSeconds).length).toBeGreaterThanOrEqual(input.tailSeconds);
    expect(w.tpsBefore).toBeGreaterThan(0);
    expect(w.tpsMinDuring).not.toBeNull();
    expect(w.dip).toBeCloseTo(1 - w.tpsMinDuring! / w.tpsBefore, 9);
    expect(checkpointPhase.checks(hostId, { checkpoint: r }).filter((c) => !c.ok)).toEqual([]);
    // The workload is gone when the phase ends.
    expect(await query("SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'storage-lab pgbench%'")).toEqual([]);
  });

  it('stops its workload when cancelled', async () => {
    const env = new MockActivityEnvironment();
    const running = env.run(() => runCheckpointPhase(host.deps, { ...input, workload: true, leadSeconds: 600 }));
    for (let i = 0; i < 100 && (await query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'storage-lab pgbench checkpoint'")).length === 0; i++)
      await new Promise((r) => setTimeout(r, 100));
    env.cancel();
    await expect(running).rejects.toThrow();
    expect(await query("SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'storage-lab pgbench%'")).toEqual([]);
  });
});
