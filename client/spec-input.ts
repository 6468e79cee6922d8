/** Builds an experiment input from --preset, --spec FILE and --set overrides, and validates it here first. */
import { readFileSync } from 'node:fs';
import { InvalidSpecError, mergeSpec, resolveSpec, type ExperimentSpec } from '../common/spec';
import { UserError } from './errors';

export interface SpecFlags {
  preset?: string;
  spec?: string;
  set?: string[];
}

/** `a.b=1` → { a: { b: 1 } }; values parse as JSON when they can (numbers, booleans, objects), else strings. */
export function parseSet(assignment: string): Record<string, unknown> {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new UserError(`--set ${assignment}: expected path=value, e.g. workload.clients=32`);
  const keys = assignment.slice(0, eq).split('.');
  const raw = assignment.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // A plain string.
  }
  return keys.reduceRight<unknown>((acc, key) => ({ [key]: acc }), value) as Record<string, unknown>;
}

export function buildInput(flags: SpecFlags): Record<string, unknown> {
  let input: Record<string, unknown> = {};
  if (flags.spec) {
    try {
      input = JSON.parse(readFileSync(flags.spec, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new UserError(`--spec ${flags.spec}: ${(err as Error).message}`);
    }
  }
  if (flags.preset) input = { ...input, preset: flags.preset };
  for (const s of flags.set ?? []) input = mergeSpec(input, parseSet(s)) as Record<string, unknown>;
  return input;
}

/** Validates before anything is started; a bad spec is a user error naming every field at fault. */
export function validateInput(input: Record<string, unknown>): ExperimentSpec {
  try {
    return resolveSpec(input);
  } catch (err) {
    if (err instanceof InvalidSpecError) throw new UserError(err.message);
    throw err;
  }
}
