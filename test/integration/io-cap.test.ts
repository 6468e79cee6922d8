/**
 * The modelled I/O cap lifted for preparation and back for the measured part, on a real modelled volume (the server,
 * its loop device, ext4, as the local provider makes them), around the real load, VACUUM and backlog phases of a
 * real Postgres at tiny sizes. The volume's own counters tell which I/O ran modelled: during a preparation some I/O
 * ran with the model off, and from the moment the measured window opens (HostCounters.window(), right before VACUUM
 * (VERBOSE) and the drain) every I/O the volume serves is modelled, the kernel's writeback included. A failing or
 * cancelled preparation leaves the model on. An IoCap whose apply() does nothing fails these checks.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBacklogPhase } from '../../activities/host/phases/backlog';
import { loadData } from '../../activities/host/load';
import { configurePostgres } from '../../activities/host/postgres';
import { runVacuumPhase } from '../../activities/host/phases/vacuum';
import type { HostDeps } from '../../activities/host/deps';
import { RANDOM_UPDATE_SCRIPT } from '../../common/input/presets';
import { gp3Model, serverParams } from '../../common/model/devices';
import { IoCap } from '../../lib/io-cap';
import { registerLabRoot } from '../../lib/lab-fs';
import { HostCounters } from '../../lib/sampler';
import { withConnection } from '../../lib/pg';
import type { VolumeStats } from '../../lib/volume';
import { hostSettings, startBenchHost, type BenchHost } from '../../bench/bench-host';
import { createTestVolume, volumeSupport, type TestVolume } from '../helpers/volume';

const SETTINGS = { shared_buffers: '32MB', max_wal_size: '256MB', wal_level: 'logical', max_connections: '40' };
const describeIfVolumes = volumeSupport.ok ? describe : describe.skip;

/** I/O the volume served with its model off, and with it on. */
const unmodelled = (s: VolumeStats) => s.reads + s.writes - s.modelledReads - s.modelledWrites;
const modelled = (s: VolumeStats) => s.modelledReads + s.modelledWrites;

/** The volume's counters around a phase: before it, when its measured window opened, after it; and during preparation. */
interface Moments {
  before: VolumeStats;
  preparation: VolumeStats[];
  measured: VolumeStats[];
  after: VolumeStats;
}

describeIfVolumes('the modelled I/O cap around preparation and measurement (integration, root)', () => {
  let dir: string;
  let vol: TestVolume;
  let host: BenchHost;
  let deps: HostDeps;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-io-cap-'));
    chmodSync(dir, 0o755);
    registerLabRoot(dir);
    // A gp3 at 3,000 IOPS with the model's own latencies: slow enough to tell, fast enough for a test.
    vol = await createTestVolume(dir, { params: serverParams(gp3Model()), sizeBytes: 768 * 2 ** 20, filesystem: true });
    host = await startBenchHost('io-cap', SETTINGS, { hostDir: vol.mount! });
    const config = { ...host.deps.config, kind: 'emulated-ebs' as const, emulated: true, device: vol.loop.name, volume: vol.volume };
    deps = { ...host.deps, config, ioCap: new IoCap(config) };
    await deps.ioCap.apply(); // As the agent does when it starts.
    await new MockActivityEnvironment().run(() => loadData(deps, { hostId: config.hostId, scale: 2, chunkRows: 50_000, writers: 2 }));
  });

  afterAll(async () => {
    await host?.close();
    await vol?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a phase with these deps, reading the volume in every heartbeat of `prepStep` and when the measured window opens. */
  async function watched<R>(d: HostDeps, prepStep: string, run: (d: HostDeps) => Promise<R>): Promise<{ result: R; moments: Moments }> {
    const before = await vol.control.stats();
    const preparation: Promise<VolumeStats>[] = [];
    const measured: Promise<VolumeStats>[] = [];
    const env = new MockActivityEnvironment();
    env.on('heartbeat', (p: { detail?: { step?: string } }) => {
      if (p.detail?.step === prepStep && preparation.length === 0) preparation.push(vol.control.stats());
    });
    const original = HostCounters.prototype.window;
    const spy = jest.spyOn(HostCounters.prototype, 'window').mockImplementation(function (this: HostCounters) {
      measured.push(vol.control.stats());
      return original.call(this);
    });
    try {
      const result = (await env.run(() => run(d))) as R;
      return { result, moments: { before, preparation: await Promise.all(preparation), measured: await Promise.all(measured), after: await vol.control.stats() } };
    } finally {
      spy.mockRestore();
    }
  }

  /** The cap's contract on one phase: the model off while preparing, every I/O from the measured window on modelled. */
  function expectLiftedThenModelled(m: Moments): void {
    expect(m.preparation.length).toBe(1);
    expect(m.preparation[0].on).toBe(false);
    expect(m.measured).toHaveLength(1);
    const [open] = m.measured;
    expect(open.on).toBe(true);
    expect(unmodelled(open)).toBeGreaterThan(unmodelled(m.before)); // preparation's I/O ran unmodelled
    expect(unmodelled(m.after)).toBe(unmodelled(open)); // nothing measured ran outside the model
    expect(modelled(m.after)).toBeGreaterThan(modelled(open));
    expect(m.after.on).toBe(true);
  }

  it('the agent turns the model on', async () => {
    expect(deps.ioCap.liftable).toBe(true);
    expect((await vol.control.stats()).on).toBe(true);
  });

  it('the load ran unmodelled and the model is back on after it', async () => {
    const { result, moments } = await watched(deps, 'rows', (d) => loadData(d, { hostId: d.config.hostId, scale: 2, chunkRows: 50_000, writers: 2 }));
    // The load is done already (beforeAll): it returns at once, still through the lift, and records it.
    expect(result.preparedWithoutCap).toBe(true);
    expect(moments.measured).toEqual([]);
    expect(moments.after.on).toBe(true);
  });

  it('VACUUM: dead tuples made unmodelled, VACUUM (VERBOSE) measured on the model', async () => {
    const { result, moments } = await watched(deps, 'making dead tuples', (d) => runVacuumPhase(d, { hostId: d.config.hostId, bloatMB: 4 }));
    expectLiftedThenModelled(moments);
    expect(result.preparedWithoutCap).toBe(true);
    expect(result.vacuumSeconds).toBeGreaterThan(0);
    expect(result.device?.name).toBe(vol.loop.name);
  });

  it('backlog: written unmodelled, drained on the model', async () => {
    const { result, moments } = await watched(deps, 'writing backlog', (d) =>
      runBacklogPhase(d, { hostId: d.config.hostId, backlogMB: 8, scale: 2, clients: 4, threads: 2, script: RANDOM_UPDATE_SCRIPT }),
    );
    expectLiftedThenModelled(moments);
    expect(result.preparedWithoutCap).toBe(true);
    expect(result.reachedBeforeDrain).toBe(true);
  });

  it('a failing preparation leaves the model on', async () => {
    // An empty table fails the vacuum phase inside its preparation (after the clearing VACUUM, with the model off).
    await withConnection(deps.config, (c) => c.query('CREATE TABLE public.keep AS SELECT * FROM public.pgbench_accounts; TRUNCATE public.pgbench_accounts'));
    try {
      await expect(new MockActivityEnvironment().run(() => runVacuumPhase(deps, { hostId: deps.config.hostId, bloatMB: 4 }))).rejects.toThrow(/is empty/);
      expect(deps.ioCap.capped).toBe(true);
      expect((await vol.control.stats()).on).toBe(true);
    } finally {
      await withConnection(deps.config, (c) => c.query('INSERT INTO public.pgbench_accounts SELECT * FROM public.keep; DROP TABLE public.keep'));
    }
  });

  it('a cancelled backlog fill leaves the model on', async () => {
    const env = new MockActivityEnvironment();
    let cancelled = false;
    env.on('heartbeat', (p: { detail?: { step?: string } }) => {
      if (p.detail?.step === 'writing backlog' && !deps.ioCap.capped && !cancelled) {
        cancelled = true;
        env.cancel();
      }
    });
    await expect(env.run(() => runBacklogPhase(deps, { hostId: deps.config.hostId, backlogMB: 4096, scale: 2, clients: 2, threads: 1, script: RANDOM_UPDATE_SCRIPT }))).rejects.toThrow();
    expect(cancelled).toBe(true);
    expect((await vol.control.stats()).on).toBe(true);
  });

  it('a preparation that restarts the server stays unmodelled to its end, and says so from the volume count', async () => {
    // A restore and a publish restart the server inside their preparation; configurePostgres lifts the cap around
    // initdb itself, and its apply used to switch the model back on there: gp3 restores' checks ran at its budget.
    const before = await vol.control.stats();
    const prepared = await deps.ioCap.prepare(
      () =>
        new MockActivityEnvironment().run(async () => {
          await configurePostgres(deps, { hostId: deps.config.hostId, ...hostSettings({ ...SETTINGS, work_mem: '5MB' }) });
          const during = await vol.control.stats();
          await withConnection(deps.config, (c) => c.query('SELECT sum(abalance) FROM public.pgbench_accounts; CHECKPOINT'));
          return during;
        }) as Promise<VolumeStats>,
    );
    expect(prepared.value.on).toBe(false);
    expect(prepared).toMatchObject({ preparedWithoutCap: true, modelledIos: 0 });
    const after = await vol.control.stats();
    expect(after.on).toBe(true);
    expect(after.modelledAdmitted).toBe(before.modelledAdmitted);
    expect(unmodelled(after)).toBeGreaterThan(unmodelled(before));
    // The same count says no when the model comes back half-way.
    const halfway = await deps.ioCap.prepare(async () => {
      await vol.control.setModel(true);
      await withConnection(deps.config, (c) => c.query("CREATE TABLE public.halfway AS SELECT g FROM generate_series(1, 100000) g; CHECKPOINT; DROP TABLE public.halfway"));
    });
    expect(halfway.preparedWithoutCap).toBe(false);
    expect(halfway.modelledIos).toBeGreaterThan(0);
    expect((await vol.control.stats()).on).toBe(true);
  });

  it('these checks catch a model never switched on again', async () => {
    class SkippedApply extends IoCap {
      override async apply(): Promise<void> {}
    }
    const broken = { ...deps, ioCap: new SkippedApply(deps.config) };
    try {
      const { moments } = await watched(broken, 'making dead tuples', (d) => runVacuumPhase(d, { hostId: d.config.hostId, bloatMB: 4 }));
      expect(() => expectLiftedThenModelled(moments)).toThrow();
      expect(moments.measured[0].on).toBe(false); // VACUUM (VERBOSE) would have been measured unmodelled.
    } finally {
      await deps.ioCap.apply();
    }
  });
});
