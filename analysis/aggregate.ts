/**
 * From cluster results to the run's result: medians per class, the candidate's speedup over the baseline, and
 * self-checks that flag a run whose figures disagree with themselves. Pure, so it is unit-tested directly.
 */
import type { DrillSummary } from '../common/results/drill-result';
import { classLimits, type ExperimentSpec } from '../common/input/spec';
import { mean, median } from '../common/core/stats';
import { deviceModelOf } from '../common/model/devices';
import type { Check } from '../common/results/check';
import {
  RESULT_SCHEMA_VERSION,
  type ClassResult,
  type ClusterResult,
  type ExperimentResult,
  type TpsRun,
} from '../common/results/result';
import { classReadings, samplerChecks } from './bottlenecks';
import { comparedPhases, measuredEveryPhase, phaseChecks, phaseMedians } from '../common/phases/registry';
import { clientGapShare, LOAD_GENERATOR_GAP_SHARE } from './cross-checks';

export interface EnvironmentInfo {
  cpus: number;
  memoryMiB: number;
  kernel: string;
  provider: string;
}

export interface AggregateInput {
  runId: string;
  spec: ExperimentSpec;
  clusters: ClusterResult[];
  startedAt: string;
  finishedAt: string;
  environment: EnvironmentInfo;
  cancelled: boolean;
}

/** pgbench's summary and its own transaction log must agree within this. */
export const PGBENCH_CONSISTENCY_TOLERANCE = 0.05;

/**
 * pgbench against itself, not against the server: its summary's TPS vs clients / (mean latency + the clients' own
 * time between transactions), both from its per-transaction log. It catches a log that lost lines or a summary that
 * counts another window; whether the server agrees is checked from the server's side (cross-checks.ts). And whether
 * pgbench kept up: a client that needed more than the tolerance of the latency for itself is a warning (the host was
 * short of CPU for the load generator, so TPS understates what the server could do).
 */
export function pgbenchConsistencyChecks(hostId: string, run: TpsRun): Check[] {
  const gap = run.clientGapMs ?? 0;
  const predicted = run.clients / ((run.latencyMs.mean + gap) / 1000);
  const deviation = Math.abs(predicted - run.tps) / run.tps;
  const gapShare = clientGapShare(run);
  return [
    {
      name: 'pgbench summary matches its transaction log',
      scope: hostId,
      ok: deviation <= PGBENCH_CONSISTENCY_TOLERANCE,
      detail: `TPS ${round(run.tps)} vs clients / (mean latency + client gap) = ${run.clients} / (${round(run.latencyMs.mean, 2)} + ${round(gap, 2)} ms) = ${round(predicted)} from the log (${round(deviation * 100)} % apart, tolerance ${PGBENCH_CONSISTENCY_TOLERANCE * 100} %)`,
    },
    {
      name: 'load generator kept up',
      scope: hostId,
      ok: gapShare <= LOAD_GENERATOR_GAP_SHARE,
      severity: 'warning',
      detail: `clients spent ${round(gap, 2)} ms between transactions, ${round(gapShare * 100)} % of the ${round(run.latencyMs.mean, 2)} ms latency${gapShare > LOAD_GENERATOR_GAP_SHARE ? ': pgbench was short of CPU on this host, so TPS < clients / latency and understates the server' : ''}`,
    },
  ];
}

/** A TPS window of fewer seconds than this is too short to tell settling from noise: not checked. */
export const STEADY_MIN_SECONDS = 30;
/** The window's mean TPS may lie this far from its last half's before the window counts as still settling. */
export const STEADY_TOLERANCE = 0.05;

/**
 * Whether the TPS window measured a steady state: its mean per-second TPS against its last half's. local-quick's gp3
 * hosts ran 4.2 to 7.5 % above their last half (2026-12-04): after a 15 s warm-up their first 10 s ran at 1,166 to
 * 1,271 TPS and the rest at 880 to 904, about when the kernel begins writing back the pages dirtied at the warm-up's
 * start (dirty_expire_centisecs, 30 s by default), whose writes then share the budget with the reads. Windows after a
 * 60 s warm-up (predict-check-2 and -3) lay within 0.1 to 6.3 %. A warning: the figure is a measurement, of a state
 * that had not settled.
 */
export function steadyWindowCheck(hostId: string, run: Pick<TpsRun, 'tpsSeries'>): Check | null {
  const series = run.tpsSeries ?? [];
  if (series.length < STEADY_MIN_SECONDS) return null;
  const half = Math.floor(series.length / 2);
  const whole = mean(series);
  const last = mean(series.slice(half));
  const apart = last > 0 ? whole / last - 1 : Infinity;
  const ok = Math.abs(apart) <= STEADY_TOLERANCE;
  return {
    name: 'TPS window steady',
    scope: hostId,
    ok,
    severity: 'warning',
    detail:
      `mean ${round(whole)} TPS over the ${series.length} s window, ${round(last)} over its last ${series.length - half} s ` +
      `(${apart >= 0 ? '+' : ''}${round(apart * 100)} %, tolerance ${STEADY_TOLERANCE * 100} %)` +
      (ok ? '' : `: the window was still settling, so its figure is not the steady state; a longer warm-up (workload.warmupSeconds) measures it`),
  };
}

/** The first seconds of a TPS window that a restored host's start is compared on (issue 31). */
export const FIRST_SECONDS = 10;
/** How far a restored host's first seconds may lie from its class's loaded hosts' (relative to theirs). */
export const RESTORED_START_TOLERANCE = 0.1;

/**
 * Whether a restored host starts as a loaded one of its class: the mean TPS of each restored host's first
 * FIRST_SECONDS against the loaded hosts' mean over theirs. A restore that left the server in another physical
 * state than a fresh load (hint bits to set, a visibility map to build, statistics missing, a cold or a warmer cache)
 * shows in the first seconds of the window, before the workload has rewritten what it touches. Only within one run
 * and one class, where the device, the host and the settings are the same: a class whose hosts all restored (a
 * run that reused a set) or all loaded has nothing to compare, and gets no check. A warning: the figures are
 * measurements, of hosts that did not start alike.
 */
export function restoredStartChecks(className: string, clusters: ClusterResult[]): Check[] {
  const firstOf = (c: ClusterResult): number | null => {
    const series = c.status === 'ok' ? c.tpsRun?.tpsSeries : undefined;
    return series && series.length >= FIRST_SECONDS ? mean(series.slice(0, FIRST_SECONDS)) : null;
  };
  const loaded = clusters.filter((c) => c.dataSet && c.dataSet.prepared !== 'restored').map(firstOf).filter((v): v is number => v !== null);
  if (!loaded.length) return [];
  const reference = mean(loaded);
  const checks: Check[] = [];
  for (const c of clusters.filter((x) => x.dataSet?.prepared === 'restored')) {
    const first = firstOf(c);
    if (first === null) continue;
    const apart = reference > 0 ? first / reference - 1 : Infinity;
    const ok = Math.abs(apart) <= RESTORED_START_TOLERANCE;
    checks.push({
      name: 'restored host starts as a loaded one',
      scope: c.hostId,
      ok,
      severity: 'warning',
      detail:
        `its first ${FIRST_SECONDS} s ran ${round(first)} TPS, the ${loaded.length} loaded ${className} ${loaded.length === 1 ? "host's" : "hosts'"} ${round(reference)} ` +
        `(${apart >= 0 ? '+' : ''}${round(apart * 100)} %, tolerance ${RESTORED_START_TOLERANCE * 100} %)` +
        (ok ? '' : ': the restored server did not start in the loaded one\'s state; data.reuse "never" loads every host'),
    });
  }
  return checks;
}

export { median };

/** Speedup of `fast` over `slow` where bigger is better (TPS), or null when either is missing. */
export function speedup(fast: number | null, slow: number | null): number | null {
  if (fast === null || slow === null || slow === 0) return null;
  return round(fast / slow, 2);
}

export function round(v: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

export function aggregate(input: AggregateInput): ExperimentResult {
  const { spec } = input;
  const classes: Record<string, ClassResult> = {};
  for (const [name, cls] of Object.entries(spec.storageClasses)) {
    const clusters = input.clusters.filter((c) => c.className === name).sort((a, b) => a.index - b.index);
    const ok = clusters.filter((c) => c.status === 'ok' && c.tpsRun);
    const limits = classLimits(cls);
    const emulated = clusters.length > 0 && clusters.every((c) => c.emulated);
    const device = deviceModelOf(cls);
    classes[name] = {
      kind: cls.kind,
      emulated,
      emulationNote: clusters.find((c) => c.emulationNote)?.emulationNote,
      limits: {
        iops: emulated ? (limits?.iops ?? null) : null,
        throughputMiBps: emulated ? (limits?.throughputMiBps ?? null) : null,
        memoryLimitMiB: cls.memoryLimitMiB ?? spec.host.memoryLimitMiB,
        ...(emulated && cls.kind === 'emulated-ebs' && limits ? { iopsBudget: limits.iopsBudget } : {}),
      },
      ...(emulated && device ? { device } : {}),
      clusters,
      medianTps: nullableRound(median(ok.map((c) => c.tpsRun!.tps))),
      medianLatencyMs: nullableRound(median(ok.map((c) => c.tpsRun!.latencyMs.mean)), 2),
      // Each phase's median counts the clusters that measured it.
      phases: phaseMedians(clusters.map((c) => c.phases)),
    };
    Object.assign(classes[name], classReadings(ok, classes[name].limits));
  }
  const compare = spec.compare ?? null;
  const base = compare ? classes[compare.baseline] : undefined;
  const cand = compare ? classes[compare.candidate] : undefined;
  const ratios: Record<string, number | null> = {
    tps: speedup(cand?.medianTps ?? null, base?.medianTps ?? null),
    // Latency: lower is better, so the speedup is baseline over candidate.
    latency: speedup(base?.medianLatencyMs ?? null, cand?.medianLatencyMs ?? null),
    // A phase's seconds: lower is better, so baseline over candidate, as the reference's ratios are.
    ...Object.fromEntries(comparedPhases().map((p) => [p.ratioKey, speedup(p.seconds(base?.phases ?? {}), p.seconds(cand?.phases ?? {}))])),
  };
  const postgresVersion = input.clusters.find((c) => c.postgresVersion)?.postgresVersion ?? null;
  const everyClassMeasured = Object.values(classes).every((c) => c.medianTps !== null && measuredEveryPhase(spec.phases, c.phases));
  return {
    schemaVersion: RESULT_SCHEMA_VERSION,
    runId: input.runId,
    name: spec.name,
    preset: spec.preset ?? null,
    status: input.cancelled ? 'cancelled' : everyClassMeasured ? 'completed' : 'failed',
    startedAt: input.startedAt,
    finishedAt: input.finishedAt,
    postgresVersion,
    host: input.environment,
    spec,
    classes,
    ratios,
    compare,
    checks: runChecks(classes),
  };
}

function nullableRound(v: number | null, digits = 1): number | null {
  return v === null ? null : round(v, digits);
}

/** A check per durability drill the experiment ran: it passed, or its verdict says why not. */
export function drillChecks(drills: DrillSummary[]): Check[] {
  return drills.map((d) => ({ name: `${d.kind} passes`, scope: 'durability', ok: d.status === 'passed', detail: d.verdict }));
}

/** Checks every result carries; a failed one is shown in the report, never hidden. */
export function runChecks(classes: Record<string, ClassResult>): Check[] {
  const checks: Check[] = [];
  for (const [name, cls] of Object.entries(classes)) {
    for (const c of cls.clusters) {
      if (c.status !== 'ok')
        checks.push({ name: 'cluster completed', scope: c.hostId, ok: false, detail: `${c.status}: ${c.error ?? ''}` });
      for (const f of c.failedAttempts)
        checks.push({
          name: 'attempt failed (not averaged in)',
          scope: c.hostId,
          ok: false,
          detail: `${f.phase} attempt ${f.attempt}: ${f.error}`,
        });
      const run = c.tpsRun;
      if (!run) continue;
      checks.push(...pgbenchConsistencyChecks(c.hostId, run));
      const steady = steadyWindowCheck(c.hostId, run);
      if (steady) checks.push(steady);
      checks.push({
        name: 'no failed transactions',
        scope: c.hostId,
        ok: run.failedTransactions === 0,
        detail: `${run.failedTransactions} failed of ${run.transactions + run.failedTransactions}`,
      });
      // A restored host has no load result: its heap is the data set's.
      const heapBytes = c.load?.heapBytes ?? c.dataSet?.heapBytes;
      const memoryRatio = heapBytes ? heapBytes / (cls.limits.memoryLimitMiB * 1024 * 1024) : 0;
      checks.push(...samplerChecks(c, cls, memoryRatio >= 1));
      checks.push(...phaseChecks(c.hostId, c.phases));
      if (heapBytes) {
        checks.push({
          name: 'data set larger than memory',
          scope: c.hostId,
          ok: !cls.emulated || memoryRatio >= 1,
          // A caveat of the sizes chosen (tiny presets fit in RAM), not a wrong figure.
          severity: 'warning',
          detail: `heap ${round(heapBytes / 2 ** 30, 2)} GiB = ${round(memoryRatio, 1)}x the ${cls.limits.memoryLimitMiB} MiB memory limit${memoryRatio < 1 ? ': a working set that fits in RAM shows little difference between storage classes' : ''}`,
        });
      }
    }
    checks.push(...restoredStartChecks(name, cls.clusters));
    if (!cls.emulated)
      checks.push({
        name: 'storage emulated',
        scope: name,
        ok: false,
        detail: cls.emulationNote ?? 'memory and I/O limits not enforced',
      });
  }
  return checks;
}
