/**
 * Every phase, in the order a cluster runs them after its TPS run, and what the rest of the lab asks of them all:
 * the spec's `phases` section, the volume they need, their rules, their steps in the progress, their results'
 * types, medians, checks and report sections. Adding a phase is a module (kit.ts says what it declares), a line
 * here, a line in activities/host/phases/index.ts, and the presets that turn it on. Pure and workflow-safe.
 */
import { z } from 'zod';
import type { SpecProblem } from '../core/errors';
import type { Check } from '../results/check';
import type { Phase, PhaseComparisonRow, PhaseContext, ReferenceDevice } from './kit';
import { backlogPhase } from './backlog';
import { checkpointPhase } from './checkpoint';
import { vacuumPhase } from './vacuum';

/** The phases in plan order. */
export const PHASES = [checkpointPhase, vacuumPhase, backlogPhase] as const;

type Registered = (typeof PHASES)[number];
export type PhaseName = Registered['name'];
type Types<P> = P extends Phase<string, string, infer F, infer I, infer R, infer M> ? { fragment: F; input: I; result: R; medians: M } : never;

/** spec.phases: each phase's fragment under its name; a phase left out does not run (specs recorded before it existed). */
export type PhaseSpecs = { [P in Registered as P['name']]?: Types<P>['fragment'] };
/** A cluster's result.phases: each measured phase's result under its name. */
export type PhaseResults = { [P in Registered as P['name']]?: Types<P>['result'] };
/** A class's medians of each phase its clusters measured. */
export type PhaseMedians = { [P in Registered as P['name']]?: Types<P>['medians'] };
/** The host activity of each phase, by its activity name: what activities/host/phases/index.ts must provide. */
export type PhaseActivities = { [P in Registered as P['activity']]: (input: Types<P>['input']) => Promise<Types<P>['result']> };

/**
 * The spec's `phases` section. Each fragment is optional, with no default at this level: a spec recorded in a
 * workflow history before a phase existed must parse unchanged (revalidateSpec), and the presets set every phase.
 */
export const PhasesSchema = z
  .object(Object.fromEntries(PHASES.map((p) => [p.name, p.fragment.optional()])) as { [P in Registered as P['name']]: z.ZodOptional<P['fragment']> })
  .strict();

/** The phases a spec runs, in plan order. */
export function enabledPhases(phases: PhaseSpecs): Registered[] {
  return PHASES.filter((p) => p.enabledIn(phases) !== null);
}

/** Bytes the phases a spec runs write to a volume beyond the data set and its WAL. */
export function phasesVolumeBytes(phases: PhaseSpecs): number {
  return PHASES.reduce((sum, p) => sum + p.volumeBytes(phases), 0);
}

/** Whether a phase the spec runs decodes WAL (wal_level = logical). */
export function phasesNeedLogicalWal(phases: PhaseSpecs): boolean {
  return enabledPhases(phases).some((p) => p.needsLogicalWal);
}

/** What the phases a spec runs ask of the rest of it. */
export function phaseSpecProblems(phases: PhaseSpecs, context: PhaseContext): SpecProblem[] {
  return PHASES.flatMap((p) => p.specProblems(phases, context));
}

/** Seconds the phases a spec runs take on a device like the reference's (the cost estimate). */
export function phasesEstimateSeconds(phases: PhaseSpecs, context: PhaseContext, device: ReferenceDevice): number {
  return PHASES.reduce((sum, p) => sum + p.estimateSeconds(phases, context, device), 0);
}

/** A class's medians of every phase, each over the clusters that measured it. */
export function phaseMedians(clusterPhases: PhaseResults[]): PhaseMedians {
  const medians: Record<string, unknown> = {};
  for (const p of PHASES) {
    const m = p.medians(clusterPhases);
    if (m !== null) medians[p.name] = m;
  }
  return medians as PhaseMedians;
}

/** Every phase's self-checks of one cluster's results. */
export function phaseChecks(hostId: string, results: PhaseResults): Check[] {
  return PHASES.flatMap((p) => p.checks(hostId, results));
}

/** Whether a class (or a cluster) measured every phase its spec asked for. */
export function measuredEveryPhase(phases: PhaseSpecs, measured: PhaseMedians | PhaseResults): boolean {
  return enabledPhases(phases).every((p) => (measured as Record<string, unknown>)[p.name] !== undefined);
}

/** Each phase's section of report.md, over the clusters that measured it (none: no section). */
export function phaseReports(clusters: { hostId: string; phases: PhaseResults }[]): string[] {
  return PHASES.flatMap((p) => p.report(clusters));
}

/** The preparation each phase of a cluster ran with the emulated I/O cap lifted, in words. */
export function uncappedPreparation(results: PhaseResults): string[] {
  return PHASES.flatMap((p) => p.uncapped(results) ?? []);
}

/** The phases with a figure beside the reference, in plan order. */
export function comparedPhases(): PhaseComparisonRow[] {
  return PHASES.flatMap((p) => p.comparison ?? []);
}
