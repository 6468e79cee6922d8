/**
 * Every self-check a result carries can fail: a complete, healthy run passes every check, and for each check a run
 * broken in the one way it guards against fails exactly it. A new check without a case here fails the last test.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { aggregate, drillChecks, FIRST_SECONDS, restoredStartChecks, STEADY_MIN_SECONDS, steadyWindowCheck } from '../../analysis/aggregate';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { boundBy } from '../../analysis/bottlenecks';
import { latencyBreakdown, waitClassShares } from '../../common/results/breakdown';
import type { SamplerReadings, SamplerSecond } from '../../common/results/sampler-readings';
import type { Check } from '../../common/results/check';
import type { ClusterResult, ExperimentResult } from '../../common/results/result';
import { resolveSpec } from '../../common/input/resolve';
import { gp3Window } from '../helpers/volume-window';

const spec = resolveSpec({ preset: 'ci', storageClasses: { 'local-disk': null }, compare: null });
const env = { cpus: 2, memoryMiB: 24000, kernel: 'test', provider: 'local' };

/** 10 s of an emulated gp3 host at 2,000 TPS and 32 ms: every figure consistent with every other. */
function healthyCluster(): ClusterResult {
  const transactions = 20_000;
  // 60 active backends on average over 200 samples: 30 reading pages, 5 in a WAL sync, 10 waiting for it, 15 on CPU.
  const waitEvents = { 'IO:DataFileRead': 6000, 'IO:WALSync': 1000, 'LWLock:WALWrite': 2000, CPU: 3000 };
  const second: SamplerSecond = { second: 1, activeSessions: 60, dataFileRead: 30, cpuCores: 1, readIops: 2950, writeIops: 2900, readMBps: 23, writeMBps: 30 };
  const diagnostics: SamplerReadings = {
    serverVersionNum: 150018,
    startedAt: 't',
    seconds: 10,
    intervalMs: 50,
    samples: 200,
    samplesPerSecond: 20,
    waitEvents,
    waitClassShares: waitClassShares(waitEvents),
    avgActiveSessions: 60,
    // 15 ms of page reads per transaction: the same as the samples' 30 readers x 10 s / 20,000 transactions.
    database: { xactCommit: transactions, xactRollback: 0, blksRead: 30_000, blksHit: 90_000, blkReadTimeMs: 15 * transactions, blkWriteTimeMs: 0, tupUpdated: transactions, tempBytes: 0, deadlocks: 0, msPerBlockRead: 10, hitRatio: 0.75 },
    // 2.6 ms of WAL write + sync per transaction; the samples see 2.5 (5 syncing backends x 10 s / 20,000).
    wal: { wal_records: transactions, wal_bytes: transactions * 8300, wal_sync: 15_000, wal_write_time: 4_000, wal_sync_time: 48_000 },
    checkpoints: null,
    io: null,
    cpu: { source: 'cgroup', seconds: 10, coresBusy: 1, cores: 2 },
    samplerCpuSeconds: 0.05,
    device: null,
    series: Array.from({ length: 10 }, (_, i) => ({ ...second, second: i + 1, deviceOps: 2950 })),
    notes: [],
    // The modelled gp3 at its budget: what it served, and the kernel's own count of the device beside it.
    volume: gp3Window(2950),
  };
  return {
    hostId: 'h-gp3-0',
    className: 'gp3',
    index: 0,
    status: 'ok',
    emulated: true,
    startedAt: 'a',
    finishedAt: 'b',
    load: { rows: 200_000, chunks: 10, chunksResumed: 0, loadSeconds: 1, indexSeconds: 0, vacuumSeconds: 0, heapBytes: 2 * 384 * 2 ** 20, rowsPerSecond: 1 },
    tpsRun: {
      tps: 2000,
      transactions,
      failedTransactions: 0,
      durationSeconds: 10,
      clients: 64,
      threads: 2,
      latencyMs: { mean: 32, p50: 30, p95: 60, p99: 90 },
      clientGapMs: 0,
      // 30 seconds of it: the shortest window the steadiness check reads.
      tpsSeries: Array(30).fill(2000),
      pgbenchVersion: '15.18',
    },
    diagnostics,
    breakdownMs: latencyBreakdown(32, waitEvents) ?? undefined,
    failedAttempts: [],
    phases: {
      vacuum: {
        table: 'pgbench_accounts', requestedBytes: 8 << 20, deadBytes: 8 << 20, deadTuples: 80_000, deadBytesDeviation: 0, usedBytesGrowth: 8 << 20,
        relationBytesBefore: 1, relationBytesAfter: 2, rowsUpdated: 80_000, bloatSeconds: 1, preVacuumSeconds: 1, vacuumSeconds: 2,
        verbose: { tuples: { removed: 80_000, remain: 200_000, deadNotYetRemovable: 0 }, pages: { removed: 0, remain: 1, scanned: 1000 } } as never,
        device: null, cpu: null, autovacuumSetting: null,
      },
    },
  };
}

function checksOf(c: ClusterResult, drills: Parameters<typeof drillChecks>[0] = []): Check[] {
  const result: ExperimentResult = aggregate({ runId: 'r', spec, clusters: [c], startedAt: 'a', finishedAt: 'b', environment: env, cancelled: false });
  return [...result.checks, ...drillChecks(drills)];
}

const passedDrill = { runId: 'd', kind: 'restore-drill' as const, status: 'passed' as const, verdict: 'passed: ...', location: '', figures: {} };

/** For each check: how to break a healthy run so that it, and it alone, fails. */
const BREAKERS: Record<string, (c: ClusterResult) => Parameters<typeof drillChecks>[0] | void> = {
  'cluster completed': (c) => void (c.status = 'failed'),
  'attempt failed (not averaged in)': (c) => void c.failedAttempts.push({ phase: 'tps', attempt: 1, error: 'heartbeat timeout', at: 't' }),
  // A summary whose clients do not match its log: 90 clients at 32 ms would make 2,812 TPS, not 2,000.
  'pgbench summary matches its transaction log': (c) => void (c.tpsRun!.clients = 90),
  // pgbench short of CPU: its clients spend 5 ms between transactions (and the TPS follows, so the log still agrees).
  'load generator kept up': (c) => void Object.assign(c.tpsRun!, { clientGapMs: 5, tps: 64 / 0.037 }),
  'no failed transactions': (c) => void (c.tpsRun!.failedTransactions = 12),
  // The first half at 2,600 TPS and the second at 2,000: the window's mean 15 % above its end's.
  'TPS window steady': (c) => void (c.tpsRun!.tpsSeries = [...Array(15).fill(2600), ...Array(15).fill(2000)]),
  'data set larger than memory': (c) => void (c.load!.heapBytes = 100 * 2 ** 20),
  'storage emulated': (c) => void (c.emulated = false),
  'sampler readings taken': (c) => void delete c.diagnostics,
  'sampler rate': (c) => void Object.assign(c.diagnostics!, { samplesPerSecond: 6 }),
  'sampler cost': (c) => void (c.diagnostics!.samplerCpuSeconds = 1),
  // The server timed 40 ms of reads per transaction, the samples saw 15: a sampler that misses reading backends.
  'page-read time: samples vs server': (c) => void (c.diagnostics!.database.blkReadTimeMs = 40 * 20_000),
  // WAL time in the samples but none in the server's statistics beyond a tenth of it.
  'WAL time: samples vs server': (c) => void Object.assign(c.diagnostics!.wal!, { wal_write_time: 500, wal_sync_time: 4_500 }),
  // 40 active backends / 2,000 TPS = 20 ms in the server for a 32 ms latency: time spent outside the server.
  'server occupancy matches the latency': (c) => void (c.diagnostics!.avgActiveSessions = 40),
  // The device far below its budget while the data exceeds memory: the model was not what bound the class.
  'budget engaged': (c) => void (c.diagnostics!.volume = gp3Window(1200)),
  // The kernel completed 700 writes (5.5 MiB) on the volume's device that the server never served: they escaped.
  'nothing escaped the device model': (c) => void Object.assign(c.diagnostics!.volume!.kernel!, { writes: c.diagnostics!.volume!.kernel!.writes + 700, writeBytes: c.diagnostics!.volume!.kernel!.writeBytes + 700 * 8192 }),
  'dead bytes as requested': (c) => void Object.assign(c.phases.vacuum!, { deadBytes: 5 << 20, deadBytesDeviation: -0.375 }),
  'VACUUM removed the dead tuples': (c) => void (c.phases.vacuum!.verbose.tuples.removed = 20_000),
  'restore-drill passes': () => [{ ...passedDrill, status: 'failed', verdict: 'failed: missing WAL segment 000000010000000000000003' }],
};

describe('self-checks', () => {
  it('a healthy run passes every check it carries', () => {
    const checks = checksOf(healthyCluster(), [passedDrill]);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.length).toBeGreaterThanOrEqual(14);
  });

  it.each(Object.keys(BREAKERS))('"%s" fails on data made to break it', (name) => {
    const c = healthyCluster();
    const drills = BREAKERS[name](c) ?? [passedDrill];
    const failed = checksOf(c, drills).filter((check) => !check.ok);
    expect(failed.map((f) => f.name)).toContain(name);
    // Broken in one way, the run fails the check that guards it and no unrelated one.
    const related: Record<string, string[]> = {
      'cluster completed': ['cluster completed'],
      'sampler readings taken': ['sampler readings taken'],
      'storage emulated': ['storage emulated', 'data set larger than memory'],
    };
    expect(failed.every((f) => (related[name] ?? [name]).includes(f.name))).toBe(true);
  });

  it('reads WAL waits in PostgreSQL 17 names (IO:WalSync), as captured from a 17 server', () => {
    // 17 renamed the IO events; the same run sampled from a 17 server must pass the same checks.
    const c = healthyCluster();
    const { 'IO:WALSync': syncing, ...rest } = c.diagnostics!.waitEvents;
    c.diagnostics!.waitEvents = { ...rest, 'IO:WalSync': syncing };
    c.diagnostics!.serverVersionNum = 170010;
    c.breakdownMs = latencyBreakdown(32, c.diagnostics!.waitEvents) ?? undefined;
    expect(checksOf(c, [passedDrill]).filter((check) => !check.ok)).toEqual([]);
    expect(c.breakdownMs!.walFsync).toBeCloseTo(latencyBreakdown(32, healthyCluster().diagnostics!.waitEvents)!.walFsync);
  });

  it('a VACUUM that fell short says what it left dead and why (from its own VERBOSE report)', () => {
    const c = healthyCluster();
    const vacuum = c.phases.vacuum!;
    const detail = () => checksOf(c, [passedDrill]).find((check) => check.name === 'VACUUM removed the dead tuples')!;
    expect(detail().detail).not.toMatch(/left dead/);
    Object.assign(vacuum.verbose.tuples, { removed: 20_000, deadNotYetRemovable: 59_801 });
    vacuum.verbose.missedDead = { tuples: 199, pages: 3 };
    expect(detail().ok).toBe(false);
    expect(detail().detail).toMatch(/left dead: 59801 still visible to another session's snapshot, 199 on 3 pages another backend had pinned$/);
  });

  it('every check a result can carry has a case above', () => {
    const names = new Set<string>();
    for (const name of Object.keys(BREAKERS)) {
      const c = healthyCluster();
      const drills = BREAKERS[name](c) ?? [passedDrill];
      for (const check of checksOf(c, drills)) names.add(check.name);
    }
    expect([...names].filter((n) => !(n in BREAKERS))).toEqual([]);
  });
});

describe('a restored host against the loaded hosts of its class', () => {
  /** A host of gp3 prepared one way, whose window starts at `first` TPS for FIRST_SECONDS and runs at 2,000 after. */
  const host = (i: number, prepared: 'loaded' | 'loaded-and-published' | 'restored', first: number): ClusterResult => {
    const c = healthyCluster();
    c.hostId = `h-gp3-${i}`;
    c.index = i;
    c.dataSet = { key: 'ds-x', prepared };
    c.tpsRun!.tpsSeries = [...Array(FIRST_SECONDS).fill(first), ...Array(20).fill(2000)];
    return c;
  };
  const inRun = (clusters: ClusterResult[]) =>
    aggregate({ runId: 'r', spec, clusters, startedAt: 'a', finishedAt: 'b', environment: env, cancelled: false }).checks.filter((k) => k.name === 'restored host starts as a loaded one');

  it('passes a restored host that starts as the loaded one did, in the aggregate of a whole run', () => {
    const checks = inRun([host(0, 'loaded-and-published', 2200), host(1, 'restored', 2150)]);
    expect(checks).toEqual([expect.objectContaining({ scope: 'h-gp3-1', ok: true, severity: 'warning' })]);
    expect(checks[0].detail).toBe('its first 10 s ran 2150 TPS, the 1 loaded gp3 host\'s 2200 (-2.3 %, tolerance 10 %)');
  });

  it('fails one that starts 20 % slower (a cold cache, hint bits to set), and one 20 % faster', () => {
    const slow = inRun([host(0, 'loaded-and-published', 2200), host(1, 'restored', 1760), host(2, 'restored', 2640)]);
    expect(slow.map((k) => [k.scope, k.ok])).toEqual([
      ['h-gp3-1', false],
      ['h-gp3-2', false],
    ]);
    expect(slow[0].detail).toMatch(/\(-20 %, tolerance 10 %\): the restored server did not start in the loaded one's state/);
  });

  it('compares only the first seconds: a restored host that differs later is not its business', () => {
    const later = host(1, 'restored', 2200);
    later.tpsRun!.tpsSeries = [...Array(FIRST_SECONDS).fill(2200), ...Array(20).fill(1000)];
    expect(inRun([host(0, 'loaded', 2200), later]).map((k) => k.ok)).toEqual([true]);
  });

  it('has nothing to say where a class has no loaded host, no restored one, or no data sets', () => {
    expect(restoredStartChecks('gp3', [host(0, 'restored', 2200), host(1, 'restored', 1000)])).toEqual([]);
    expect(restoredStartChecks('gp3', [host(0, 'loaded-and-published', 2200), host(1, 'loaded', 1000)])).toEqual([]);
    const neither = [host(0, 'loaded', 2200), host(1, 'restored', 1000)];
    for (const c of neither) delete c.dataSet;
    expect(restoredStartChecks('gp3', neither)).toEqual([]);
    // A failed loaded host, or a window shorter than the seconds compared, is no reference.
    const failed = host(0, 'loaded', 2200);
    failed.status = 'failed';
    expect(restoredStartChecks('gp3', [failed, host(1, 'restored', 1000)])).toEqual([]);
    const short = host(0, 'loaded', 2200);
    short.tpsRun!.tpsSeries = short.tpsRun!.tpsSeries!.slice(0, FIRST_SECONDS - 1);
    expect(restoredStartChecks('gp3', [short, host(1, 'restored', 1000)])).toEqual([]);
  });
});

describe('a restored host against its loaded one, on captured pairs', () => {
  const captured = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'tps-series', 'restored-pairs-2026-12-04.json'), 'utf8')) as {
    runs: Record<string, { className: string; hosts: { prepared: 'loaded-and-published' | 'restored'; tpsSeries: number[] }[] }>;
  };
  const clustersOf = (run: string, scaleRestoredStart = 1): ClusterResult[] =>
    captured.runs[run].hosts.map((h, i) => {
      const c = { hostId: `${run}-${i}`, className: captured.runs[run].className, index: i, status: 'ok', dataSet: { key: 'ds-x', prepared: h.prepared } } as ClusterResult;
      const series = h.prepared === 'restored' ? h.tpsSeries.map((v, s) => (s < FIRST_SECONDS ? v * scaleRestoredStart : v)) : h.tpsSeries;
      c.tpsRun = { tpsSeries: series } as ClusterResult['tpsRun'];
      return c;
    });

  it('passes both classes: the restored hosts started 6.7 % (gp3) and 4.1 % (nvme) below their loaded ones', () => {
    const checks = ['pair-gp3-1', 'pair-nvme-1'].flatMap((run) => restoredStartChecks(captured.runs[run].className, clustersOf(run)));
    expect(checks.map((k) => [k.ok, /\(([-+][\d.]+) %/.exec(k.detail)![1]])).toEqual([
      [true, '-6.7'],
      [true, '-4.1'],
    ]);
  });

  it('fails the same pairs with the restored hosts\' first seconds 10 % lower still', () => {
    const checks = ['pair-gp3-1', 'pair-nvme-1'].flatMap((run) => restoredStartChecks(captured.runs[run].className, clustersOf(run, 0.9)));
    expect(checks.map((k) => k.ok)).toEqual([false, false]);
  });
});

describe('the TPS window steadiness, on captured series', () => {
  const captured = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'tps-series', 'local-quick-2026-12-04.json'), 'utf8')) as {
    runs: Record<string, { tps: number; tpsSeries: number[] }>;
  };
  const verdicts = Object.fromEntries(Object.entries(captured.runs).map(([name, run]) => [name, steadyWindowCheck(name, run)!.ok]));

  it('warns on local-quick gp3 windows that began before the writeback, and passes nvme windows', () => {
    // gp3 windows 4.2, 7.3 and 7.5 % above their last halves; nvme -2.3, +0.6, +4.6 %.
    expect(verdicts).toEqual({ '181135-gp3': false, '181135-nvme': true, '182252-gp3': false, '182252-nvme': true, '184220-gp3': true, '184220-nvme': true });
    expect(steadyWindowCheck('h', captured.runs['182252-gp3'])!.detail).toMatch(/^mean 920 TPS over the 60 s window, 857\.\d over its last 30 s \(\+7\.\d %, tolerance 5 %\): the window was still settling/);
  });

  it('does not judge a window too short to tell settling from noise', () => {
    expect(steadyWindowCheck('h', { tpsSeries: captured.runs['182252-gp3'].tpsSeries.slice(0, STEADY_MIN_SECONDS - 1) })).toBeNull();
    expect(steadyWindowCheck('h', { tpsSeries: captured.runs['182252-gp3'].tpsSeries.slice(0, STEADY_MIN_SECONDS) })).not.toBeNull();
  });
});

describe('the device checks of a modelled volume', () => {
  const accounting = (change: (c: ClusterResult) => void) => {
    const c = healthyCluster();
    change(c);
    return checksOf(c).find((k) => k.name === 'nothing escaped the device model')!;
  };

  it('passes when the kernel\'s count of the device and the server\'s agree within what was in flight', () => {
    expect(accounting((c) => void (c.diagnostics!.volume!.kernel!.reads += 70))).toMatchObject({ ok: true });
    expect(accounting(() => undefined).detail).toMatch(
      /29500 I\/Os served by the gp3 model \(20650 reads, 8850 writes, 500 flushes\), the kernel completed 20650 reads and 9350 writes \(its 500 flushes among them as empty writes\) on the device: 0 beyond the model's \(up to 88 may be in flight\), 0.0 MiB moved apart/,
    );
  });

  it('fails when the kernel moved bytes the server never served, however it counted requests', () => {
    const failed = accounting((c) => void (c.diagnostics!.volume!.kernel!.writeBytes += 200 * 2 ** 20));
    expect(failed.ok).toBe(false);
    expect(failed.detail).toMatch(/200.0 MiB moved apart/);
  });

  it('fails when I/O ran with the model off in the window', () => {
    const failed = accounting((c) => {
      const v = c.diagnostics!.volume!;
      v.modelled.reads -= 300;
      v.modelled.units -= 300;
    });
    expect(failed.ok).toBe(false);
    expect(failed.detail).toMatch(/300 served with the model off/);
    expect(accounting((c) => void (c.diagnostics!.volume!.modelOn.end = false)).ok).toBe(false);
  });

  it('fails when the device passed more than its budget over the window, or in one second', () => {
    const over = accounting((c) => void (c.diagnostics!.volume!.modelled.units = 3100 * 10));
    expect(over.ok).toBe(false);
    expect(over.detail).toMatch(/beyond its budget: operations 31000 in 10.0 s, more than the 3000 a second allow/);
    const second = accounting((c) => void (c.diagnostics!.series[4].deviceOps = 3300));
    expect(second.ok).toBe(false);
    expect(second.detail).toMatch(/3300 operations in one second on a budget of 3000/);
  });

  it('fails when the server counted I/Os the kernel never saw (a request split in two)', () => {
    expect(accounting((c) => void (c.diagnostics!.volume!.served.reads += 500)).ok).toBe(false);
  });

  it('names the bound by what the backends waited on at the budget', () => {
    const c = healthyCluster();
    expect(boundBy(c, { iops: 3000, throughputMiBps: 125, iopsBudget: 'shared' })?.resource).toBe('IO-bound (page reads at the IOPS budget)');
  });
});

describe('server occupancy with pgbench short of CPU', () => {
  const occupancy = (clientGapMs: number) => {
    const c = healthyCluster();
    c.diagnostics!.avgActiveSessions = 40; // 20 ms in the server of a 32 ms latency
    c.tpsRun!.clientGapMs = clientGapMs;
    return checksOf(c).find((k) => k.name === 'server occupancy matches the latency')!;
  };

  it('fails as an error while pgbench kept up: the sampler then missed backends', () => {
    expect(occupancy(0.5)).toMatchObject({ ok: false });
    expect(occupancy(0.5).severity ?? 'error').toBe('error');
  });

  it('fails as a warning that says why when pgbench was short of CPU (its clients waited for a core)', () => {
    const check = occupancy(4);
    expect(check).toMatchObject({ ok: false, severity: 'warning' });
    expect(check.detail).toMatch(/pgbench was short of CPU \(its clients spent 13 % of the latency between transactions\)/);
  });
});
