/**
 * The emulated I/O cap lifted for preparation and back for the measured part, on a real loop device in a real host
 * cgroup (emulated-ebs as the local provider makes it), around the real VACUUM and backlog phases of a real Postgres
 * at tiny sizes. The cgroup's throttle rules are read at the moments that matter: in a heartbeat of the preparation
 * (making dead tuples, writing the backlog) they are gone; when the measured window opens (HostCounters.window(),
 * right before VACUUM (VERBOSE) and the drain) they are the class's, and the cgroup's I/O counters still count. A
 * failing or cancelled preparation leaves the cap in place. An IoCap whose apply() does nothing fails these checks.
 * Postgres itself runs outside the cgroup here (its data lives on the loop device): the test is about the rules.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdtempSync, chmodSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBacklogPhase } from '../../activities/host/phases/backlog';
import { loadData } from '../../activities/host/load';
import { runVacuumPhase } from '../../activities/host/phases/vacuum';
import type { HostDeps } from '../../activities/host/deps';
import { RANDOM_UPDATE_SCRIPT } from '../../common/input/presets';
import { createHostCgroup, detectCgroups, readIoLimits, removeHostCgroup, type HostCgroup } from '../../lib/cgroups';
import { createLoopVolume, detachLoop, unmount, type LoopDevice } from '../../lib/block-devices';
import { IoCap } from '../../lib/io-cap';
import { registerLabRoot } from '../../lib/lab-fs';
import { HostCounters } from '../../lib/sampler';
import { withConnection } from '../../lib/pg';
import { startBenchHost, type BenchHost } from '../../bench/bench-host';

const IOPS = 3000;
const MIBPS = 125;
const SETTINGS = { shared_buffers: '32MB', max_wal_size: '256MB', wal_level: 'logical', max_connections: '40' };
const support = detectCgroups();
const describeIfCgroups = support.kind ? describe : describe.skip;

/** What the cgroup's rules were at each moment of a phase. */
interface Moments {
  preparation: (Record<string, string> | null)[];
  measured: { rules: Record<string, string> | null; cgroupIo: boolean }[];
}

describeIfCgroups('the emulated I/O cap around preparation and measurement (integration, root)', () => {
  let dir: string;
  let loop: LoopDevice;
  let cg: HostCgroup;
  let host: BenchHost;
  let deps: HostDeps;
  const kind = support.kind!;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-io-cap-'));
    chmodSync(dir, 0o755);
    registerLabRoot(dir);
    const mount = path.join(dir, 'volume');
    mkdirSync(mount);
    loop = await createLoopVolume(path.join(dir, 'volume.img'), mount, 768 * 2 ** 20);
    cg = createHostCgroup(kind, `io-cap-test-${process.pid}`, 1024);
    host = await startBenchHost('io-cap', SETTINGS, { hostDir: mount });
    const config = {
      ...host.deps.config,
      kind: 'emulated-ebs' as const,
      emulated: true,
      limits: { iops: IOPS, throughputMiBps: MIBPS, memoryLimitMiB: 1024 },
      device: loop.name,
      cgroup: { kind, cpuDir: null, memoryDir: cg.memoryDir, ioDir: cg.ioDir },
    };
    deps = { ...host.deps, config, ioCap: new IoCap(config) };
    deps.ioCap.apply(); // As the provider does at provisioning.
    await new MockActivityEnvironment().run(() => loadData(deps, { hostId: config.hostId, scale: 2, chunkRows: 50_000, writers: 2 }));
  });

  afterAll(async () => {
    await host?.close();
    await unmount(path.join(dir, 'volume')).catch(() => undefined);
    if (loop) await detachLoop(loop.device).catch(() => undefined);
    if (cg) removeHostCgroup(cg);
    rmSync(dir, { recursive: true, force: true });
  });

  const rules = () => readIoLimits(cg, loop.majMin);
  const CAP = kind === 'v1'
    ? { read_iops_device: String(IOPS), write_iops_device: String(IOPS), read_bps_device: String(MIBPS * 2 ** 20), write_bps_device: String(MIBPS * 2 ** 20) }
    : { riops: String(IOPS), wiops: String(IOPS), rbps: String(MIBPS * 2 ** 20), wbps: String(MIBPS * 2 ** 20) };

  /** Runs a phase with these deps, reading the rules in every heartbeat of `prepStep` and when the measured window opens. */
  async function watched<R>(d: HostDeps, prepStep: string, run: (d: HostDeps) => Promise<R>): Promise<{ result: R; moments: Moments }> {
    const moments: Moments = { preparation: [], measured: [] };
    const env = new MockActivityEnvironment();
    env.on('heartbeat', (p: { detail?: { step?: string } }) => {
      if (p.detail?.step === prepStep) moments.preparation.push(rules());
    });
    const original = HostCounters.prototype.window;
    const spy = jest.spyOn(HostCounters.prototype, 'window').mockImplementation(function (this: HostCounters) {
      moments.measured.push({ rules: rules(), cgroupIo: this.cgroupIo() !== null });
      return original.call(this);
    });
    try {
      return { result: await env.run(() => run(d)), moments };
    } finally {
      spy.mockRestore();
    }
  }

  /** The cap's contract on one phase's moments: lifted in every preparation heartbeat, the class's cap when measuring. */
  function expectLiftedThenCapped(moments: Moments): void {
    expect(moments.preparation.length).toBeGreaterThan(0);
    for (const m of moments.preparation) expect(m).toBeNull();
    expect(moments.measured).toEqual([{ rules: CAP, cgroupIo: true }]);
    expect(rules()).toEqual(CAP);
  }

  it('the agent applies the class cap on the loop device', () => {
    expect(deps.ioCap.liftable).toBe(true);
    expect(rules()).toEqual(CAP);
  });

  it('the load ran uncapped and the cap is back after it', async () => {
    const { result, moments } = await watched(deps, 'rows', (d) => loadData(d, { hostId: d.config.hostId, scale: 2, chunkRows: 50_000, writers: 2 }));
    // The load is done already (beforeAll): it returns at once, still through the lift, and records it.
    expect(result.preparedWithoutCap).toBe(true);
    expect(moments.measured).toEqual([]);
    expect(rules()).toEqual(CAP);
  });

  it('VACUUM: dead tuples made without the cap, VACUUM (VERBOSE) measured under it', async () => {
    const { result, moments } = await watched(deps, 'making dead tuples', (d) => runVacuumPhase(d, { hostId: d.config.hostId, bloatMB: 4 }));
    expectLiftedThenCapped(moments);
    expect(result.preparedWithoutCap).toBe(true);
    expect(result.vacuumSeconds).toBeGreaterThan(0);
    expect(result.device?.name).toBe(loop.name);
  });

  it('backlog: written without the cap, drained under it', async () => {
    const { result, moments } = await watched(deps, 'writing backlog', (d) =>
      runBacklogPhase(d, { hostId: d.config.hostId, backlogMB: 8, scale: 2, clients: 4, threads: 2, script: RANDOM_UPDATE_SCRIPT }),
    );
    expectLiftedThenCapped(moments);
    expect(result.preparedWithoutCap).toBe(true);
    expect(result.reachedBeforeDrain).toBe(true);
  });

  it('a failing preparation leaves the cap in place', async () => {
    // An empty table fails the vacuum phase inside its preparation (after the clearing VACUUM, with the cap lifted).
    await withConnection(deps.config, (c) => c.query('CREATE TABLE public.keep AS SELECT * FROM public.pgbench_accounts; TRUNCATE public.pgbench_accounts'));
    try {
      await expect(new MockActivityEnvironment().run(() => runVacuumPhase(deps, { hostId: deps.config.hostId, bloatMB: 4 }))).rejects.toThrow(/is empty/);
      expect(deps.ioCap.capped).toBe(true);
      expect(rules()).toEqual(CAP);
    } finally {
      await withConnection(deps.config, (c) => c.query('INSERT INTO public.pgbench_accounts SELECT * FROM public.keep; DROP TABLE public.keep'));
    }
  });

  it('a cancelled backlog fill leaves the cap in place', async () => {
    const env = new MockActivityEnvironment();
    let lifted = false;
    env.on('heartbeat', (p: { detail?: { step?: string } }) => {
      if (p.detail?.step === 'writing backlog' && rules() === null && !lifted) {
        lifted = true;
        env.cancel();
      }
    });
    await expect(env.run(() => runBacklogPhase(deps, { hostId: deps.config.hostId, backlogMB: 4096, scale: 2, clients: 2, threads: 1, script: RANDOM_UPDATE_SCRIPT }))).rejects.toThrow();
    expect(lifted).toBe(true);
    expect(rules()).toEqual(CAP);
  });

  it('these checks catch a cap that is never applied again', async () => {
    class SkippedApply extends IoCap {
      override apply(): void {}
    }
    const broken = { ...deps, ioCap: new SkippedApply(deps.config) };
    try {
      const { moments } = await watched(broken, 'making dead tuples', (d) => runVacuumPhase(d, { hostId: d.config.hostId, bloatMB: 4 }));
      expect(() => expectLiftedThenCapped(moments)).toThrow();
      expect(moments.measured[0].rules).toBeNull(); // VACUUM (VERBOSE) would have been measured uncapped.
    } finally {
      deps.ioCap.apply();
    }
  });
});
