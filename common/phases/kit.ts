/**
 * What a phase is: one measurement after a cluster's TPS run, declared in one module. Its workflow-safe half
 * (common/phases/<name>.ts, built with definePhase) holds its spec fragment, its step (the host activity's input,
 * summary and bound), its result, medians, self-checks, report section and progress weight; its host half
 * (activities/host/phases/<name>.ts) is the activity. The registry (registry.ts) lists the phases in plan order; the
 * cluster workflow, the spec, the aggregation and the report iterate it and never name a phase. Pure and workflow-safe.
 */
import { z } from 'zod';
import type { SpecProblem } from '../core/errors';
import type { Check } from '../results/check';

/** What a phase reads of its run beside its own fragment (built from the spec by whoever runs or plans it). */
export interface PhaseContext {
  /** The data set's pgbench scale. */
  scale: number;
  /** The class's pgbench workload (its own client count where it sets one). */
  workload: { clients: number; threads: number; script: string };
  sharedBuffersMiB: number;
  /** MiB/s the class's storage sustains (common/input/bounds.ts storageMiBps): what bounds are estimated from. */
  storageMiBps: number;
}

/** The two devices of the published reference: a phase's seconds on a device like one of them (the cost estimate). */
export type ReferenceDevice = 'gp3' | 'nvme';

/** One phase's figure set beside the reference's: a row of the summary table, a bar of the speedup chart. */
export interface PhaseComparison<F, M> {
  /** Its key in result.ratios (stored: never renamed). */
  ratioKey: string;
  /** Its name on the speedup chart. */
  label: string;
  /** Its row in the summary table, with the run's own size. */
  metric(fragment: F): string;
  /** The class median compared: seconds, so the speedup is baseline over candidate. */
  seconds(medians: M): number;
  /** The reference's seconds (gp3 baseline, NVMe candidate) and its ratio; null where it measured nothing alike. */
  reference: { baseline: number; candidate: number; ratio: number } | null;
}

/** The typed declaration a phase module writes (definePhase turns it into a registry entry). */
export interface PhaseDeclaration<N extends string, A extends string, F extends { enabled: boolean }, I extends { hostId: string }, R, M> {
  /** Its key under spec.phases and result.phases, and its step in the progress. Stored: never renamed. */
  name: N;
  /** What it measures, in a few words (the dry run's plan, the docs). */
  title: string;
  /** Its host activity's type name. Recorded in workflow histories: never renamed. */
  activity: A;
  /** Its spec fragment: the fields under spec.phases.<name>, with their defaults and bounds. */
  fragment: z.ZodType<F>;
  /** Its share of a cluster's usual wall time, for the progress percentage (the load is 50, the TPS run 20). */
  progressWeight: number;
  /** Its host activity's input. */
  input(fragment: F, context: PhaseContext, hostId: string): I;
  /** What the step does, in one line with its sizes: the activity's summary in the UI and the dry run's plan. */
  summary(fragment: F, context: PhaseContext): string;
  /** Its activity's start-to-close bound: a generous multiple of an estimate from its own inputs. */
  boundSeconds(fragment: F, context: PhaseContext): number;
  /** Its seconds on a device like the reference's, for the cost estimate. */
  estimateSeconds(fragment: F, context: PhaseContext, device: ReferenceDevice): number;
  /** Bytes it writes to the volume beyond the data set and its WAL (the volume is sized for them). */
  volumeBytes(fragment: F): number;
  /** Rules on the rest of the spec that it needs (a workload that writes WAL); paths are the spec's. */
  specProblems?(fragment: F, context: PhaseContext): SpecProblem[];
  /** It decodes WAL (wal_level = logical). */
  needsLogicalWal?: boolean;
  /** Medians of a class over the clusters that measured it. */
  medians(results: R[]): M;
  /** Self-checks of one cluster's result: each compares figures measured independently, so each can fail. */
  checks(hostId: string, result: R): Check[];
  /** Its section of report.md (and report.html, which converts it): a heading and a table over every cluster. */
  report(clusters: { hostId: string; result: R }[]): string[];
  /** Preparation it ran with the emulated I/O cap lifted, in words ("making the dead tuples"); null: none. */
  uncapped?(result: R): string | null;
  /** Its figure beside the reference, where the reference has one. */
  comparison?: PhaseComparison<F, M>;
  /**
   * Its own proof that its checks can fail: a plausible result that passes them all, and for each check (by name)
   * how to break that result so that it fails. test/unit/phase-checks.test.ts holds every registered phase to it.
   */
  selfTest: { healthy: R; breaks: Record<string, (result: R) => void> };
}

/** The records that hold every phase's piece by its name: a spec's `phases`, a cluster result's `phases`. */
export type ByPhase = Readonly<Record<string, unknown>>;

/**
 * A registry entry: the declaration, reading its own fragment and result out of the records that hold every
 * phase's by its name, so the lab iterates the registry without the phases' types. `types` carries them for the
 * registry's mapped types (PhaseSpecs, PhaseResults, ...) and is never set.
 */
export interface Phase<
  N extends string = string,
  A extends string = string,
  F extends { enabled: boolean } = { enabled: boolean },
  I extends { hostId: string } = { hostId: string },
  R = unknown,
  M = unknown,
> {
  readonly name: N;
  readonly title: string;
  readonly activity: A;
  readonly fragment: z.ZodType<F>;
  readonly progressWeight: number;
  readonly needsLogicalWal: boolean;
  /** Its fragment in a spec's `phases`, when the spec asks for it (present and enabled). */
  enabledIn(phases: ByPhase): F | null;
  /** Its step: the activity's input, summary and bound; null when the spec leaves it out. */
  step(phases: ByPhase, context: PhaseContext, hostId: string): PhaseStep | null;
  /** Its line in the dry run's plan, with its bound; null when the spec leaves it out. */
  planLine(phases: ByPhase, context: PhaseContext, bound: (seconds: number) => string): string | null;
  estimateSeconds(phases: ByPhase, context: PhaseContext, device: ReferenceDevice): number;
  volumeBytes(phases: ByPhase): number;
  specProblems(phases: ByPhase, context: PhaseContext): SpecProblem[];
  /** Its result in a cluster result's `phases`, if the cluster measured it. */
  resultIn(phases: ByPhase): R | null;
  /** Its medians over the clusters' `phases` that hold its result; null when none does. */
  medians(clusterPhases: ByPhase[]): M | null;
  /** Its self-checks of one cluster's `phases` (none when the cluster did not measure it). */
  checks(hostId: string, phases: ByPhase): Check[];
  /** Its report section over the clusters that measured it (none: no section). */
  report(clusters: { hostId: string; phases: ByPhase }[]): string[];
  /** The preparation it ran with the emulated I/O cap lifted, in words; null: none, or not measured. */
  uncapped(phases: ByPhase): string | null;
  /** Its figure beside the reference (the summary table, the speedup chart, result.ratios); null without one. */
  readonly comparison: PhaseComparisonRow | null;
  readonly selfTest: { healthy: R; breaks: Record<string, Breaker<R>> };
  readonly types?: { fragment: F; input: I; result: R; medians: M };
}

/**
 * Breaks a result so that one check fails. A method's type, so that an entry's typed breakers pass where the registry
 * iterates phases without their types (method parameters are checked both ways).
 */
type Breaker<R> = { breaks(result: R): void }['breaks'];

/** A phase's figure beside the reference, read out of the records that hold every phase's. */
export interface PhaseComparisonRow {
  ratioKey: string;
  label: string;
  /** The summary table's row name with the run's own size; null when the spec leaves the phase out. */
  metric(phases: ByPhase): string | null;
  /** The seconds compared, from a class's medians; null when the class did not measure it. */
  seconds(medians: ByPhase): number | null;
  reference: { baseline: number; candidate: number; ratio: number } | null;
}

/** A phase's step as the cluster workflow schedules it. */
export interface PhaseStep {
  activity: string;
  input: { hostId: string };
  summary: string;
  boundSeconds: number;
}

/** A registry entry from a phase module's declaration. */
export function definePhase<const N extends string, const A extends string, F extends { enabled: boolean }, I extends { hostId: string }, R, M>(
  d: PhaseDeclaration<N, A, F, I, R, M>,
): Phase<N, A, F, I, R, M> {
  // The spec's schema holds each phase's fragment under its name (registry.ts PhasesSchema), the cluster stores each
  // phase's result under it, and the aggregation its medians: what is read back by the name is what was put there.
  const enabledIn = (phases: ByPhase) => {
    const f = phases[d.name] as F | undefined;
    return f?.enabled ? f : null;
  };
  const resultIn = (phases: ByPhase) => (phases[d.name] as R | undefined) ?? null;
  const measured = (clusters: { hostId: string; phases: ByPhase }[]) =>
    clusters.flatMap((c) => {
      const result = resultIn(c.phases);
      return result === null ? [] : [{ hostId: c.hostId, result }];
    });
  return {
    name: d.name,
    title: d.title,
    activity: d.activity,
    fragment: d.fragment,
    progressWeight: d.progressWeight,
    needsLogicalWal: d.needsLogicalWal ?? false,
    enabledIn,
    step(phases, context, hostId) {
      const f = enabledIn(phases);
      return f && { activity: d.activity, input: d.input(f, context, hostId), summary: d.summary(f, context), boundSeconds: d.boundSeconds(f, context) };
    },
    planLine(phases, context, bound) {
      const f = enabledIn(phases);
      return f && `${d.summary(f, context)}${bound(d.boundSeconds(f, context))}`;
    },
    estimateSeconds(phases, context, device) {
      const f = enabledIn(phases);
      return f ? d.estimateSeconds(f, context, device) : 0;
    },
    volumeBytes(phases) {
      const f = enabledIn(phases);
      return f ? d.volumeBytes(f) : 0;
    },
    specProblems(phases, context) {
      const f = enabledIn(phases);
      return f && d.specProblems ? d.specProblems(f, context) : [];
    },
    resultIn,
    medians(clusterPhases) {
      const results = clusterPhases.flatMap((p) => resultIn(p) ?? []);
      return results.length ? d.medians(results) : null;
    },
    checks: (hostId, phases) => {
      const result = resultIn(phases);
      return result === null ? [] : d.checks(hostId, result);
    },
    report(clusters) {
      const rows = measured(clusters);
      return rows.length ? d.report(rows) : [];
    },
    uncapped(phases) {
      const result = resultIn(phases);
      return result === null ? null : (d.uncapped?.(result) ?? null);
    },
    comparison: d.comparison
      ? {
          ratioKey: d.comparison.ratioKey,
          label: d.comparison.label,
          metric: (phases) => {
            const f = enabledIn(phases);
            return f && d.comparison!.metric(f);
          },
          seconds: (medians) => {
            const m = medians[d.name] as M | undefined;
            return m === undefined ? null : d.comparison!.seconds(m);
          },
          reference: d.comparison.reference,
        }
      : null,
    selfTest: d.selfTest,
  };
}

/** Megabytes a phase makes or moves: positive, at most a terabyte (the reference used 10 GB). */
export const PHASE_MAX_MB = 1_000_000;

/** A fragment's field of megabytes a phase makes or moves, its errors naming what they are. */
export const megabytes = (what: string) =>
  z
    .number({ error: `must be a number (${what})` })
    .positive({ error: `must be positive (${what})` })
    .max(PHASE_MAX_MB, { error: `must be at most ${PHASE_MAX_MB} (${what}, 1 TB)` });

/** Seconds of a bound: it exists to end a hung step with a reason, never to cut a healthy one short. */
export const BOUND_SAFETY = 3;
/** Every phase's bound starts here: connecting, leftovers of an earlier attempt, the host's own noise. */
export const BOUND_BASE_SECONDS = 1800;
