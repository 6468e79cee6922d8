/**
 * A spec as a run takes it: an input (a preset name plus overrides) resolved into a validated spec, or a resolved
 * spec checked again (a child run's input). Parse → normalise → semantic rules (rules.ts: sizes, connections, the
 * workload; cost.ts: the run's own cost ceiling), every problem reported at once with its dotted path. Pure and
 * deterministic: workflows resolve with it too, so a bad spec fails before anything is provisioned.
 */
import { costCeilingProblems } from './cost';
import { PRESETS, PRESET_NAMES, type PresetName } from './presets';
import { experimentSpecRules } from './rules';
import { ExperimentSpecSchema, InvalidSpecError, isPlainObject, mergeSpec, toProblem, volumeBytes, withBudgetDefault, type ExperimentSpec } from './spec';

/** The schema with the rules that read the whole spec: sizes that cannot fit, a workload that cannot run, the cost. */
const ResolvedSpecSchema = ExperimentSpecSchema.superRefine((spec, ctx) => {
  const add = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: path.split('.'), message });
  // Sizes that cannot fit (memory, connections, volume) and a workload that cannot run here (issue 9).
  for (const p of experimentSpecRules(spec, volumeBytes(spec))) add(p.path, p.message);
  // The run's own ceiling, at its own prices; the control worker's preflight applies its ceiling and prices too.
  if (spec.provider === 'aws' && spec.aws?.maxCostUsd !== undefined)
    for (const p of costCeilingProblems(spec, { usd: spec.aws.maxCostUsd, field: 'aws.maxCostUsd', source: 'aws.maxCostUsd' })) add(p.path, p.message);
});

/**
 * Resolves an input (a preset name plus overrides) into a validated spec.
 * Parse → normalise → semantic rules; every problem is reported at once with its dotted path.
 */
export function resolveSpec(input: unknown): ExperimentSpec {
  if (!isPlainObject(input))
    throw new InvalidSpecError([{ path: '', message: 'must be a JSON object, for example {"preset":"local-quick"}' }]);
  const presetName = input.preset ?? 'local-quick';
  if (typeof presetName !== 'string' || !(PRESET_NAMES as readonly string[]).includes(presetName))
    throw new InvalidSpecError([
      { path: 'preset', message: `unknown preset ${JSON.stringify(presetName)}; use one of: ${PRESET_NAMES.join(', ')}` },
    ]);
  const merged = mergeSpec(PRESETS[presetName as PresetName], { ...input, preset: presetName });
  const parsed = ResolvedSpecSchema.safeParse(merged, { reportInput: true });
  if (!parsed.success) throw new InvalidSpecError(parsed.error.issues.map(toProblem));
  const spec = parsed.data;
  for (const cls of Object.values(spec.storageClasses)) withBudgetDefault(cls);
  if (!spec.compare) {
    const names = Object.keys(spec.storageClasses);
    if (names.length >= 2) spec.compare = { baseline: names[1], candidate: names[0] };
  }
  return spec;
}

/**
 * A spec that claims to be resolved already (a child run's input): it must pass the same schema and rules again
 * and come out unchanged, so a run below the experiment works on exactly what was validated, whoever started it.
 */
export function revalidateSpec(spec: unknown): ExperimentSpec {
  const parsed = ResolvedSpecSchema.safeParse(spec, { reportInput: true });
  if (!parsed.success) throw new InvalidSpecError(parsed.error.issues.map(toProblem));
  if (canonicalJson(parsed.data) !== canonicalJson(spec))
    throw new InvalidSpecError([{ path: '', message: 'is not a resolved spec (parsing it again changes it); pass the output of resolveSpec unchanged' }]);
  return parsed.data;
}

/** JSON with object keys sorted, so two values compare equal whatever order their keys came in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isPlainObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}
