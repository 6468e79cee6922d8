/** Builds an experiment input from --preset, --spec FILE and --set overrides, and validates it here first. */
import { readFileSync } from 'node:fs';
import type { ToolCheckOutcome } from '../lib/spec-checks';
import { formatSpecProblems } from '../common/core/errors';
import { InvalidSpecError, type ExperimentSpec } from '../common/input/spec';
import { resolveSpec } from '../common/input/resolve';
import { UserError } from './errors';

export interface SpecFlags {
  preset?: string;
  spec?: string;
  set?: string[];
}

/** `a.b=1` → path [a, b] and value 1; values parse as JSON when they can (numbers, booleans, null), else strings. */
export function parseSet(assignment: string): { path: string[]; value: unknown } {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new UserError(`--set ${assignment}: expected path=value, e.g. workload.clients=32`);
  const raw = assignment.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // A plain string.
  }
  return { path: assignment.slice(0, eq).split('.'), value };
}

/**
 * Sets one dotted path in an input. A null stays in the input (it is not a merge here), so that resolving the spec
 * later removes the key from the preset: `--set storageClasses.gp3=null` drops the class.
 */
export function assignPath(input: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  let node = out;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    node[key] = typeof next === 'object' && next !== null && !Array.isArray(next) ? { ...next } : {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
  return out;
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
  for (const s of flags.set ?? []) {
    const { path, value } = parseSet(s);
    input = assignPath(input, path, value);
  }
  return input;
}

/** Resolves an input before anything is started; a bad one is a user error naming every field at fault. */
export function resolveOrUserError<T>(resolve: () => T): T {
  try {
    return resolve();
  } catch (err) {
    if (err instanceof InvalidSpecError) throw new UserError(err.message);
    throw err;
  }
}

/** Validates an experiment input before anything is started. */
export function validateInput(input: Record<string, unknown>): ExperimentSpec {
  return resolveOrUserError(() => resolveSpec(input));
}

/**
 * The spec checked by the real tools on this machine (server settings by its postgres, the script by its pgbench)
 * before any workflow starts, so the person at the terminal hears at once; the workflow's preflight checks again.
 */
export async function refuseToolProblems(check: Promise<ToolCheckOutcome>, subject = 'experiment spec'): Promise<void> {
  const { problems, notes } = await check;
  if (problems.length) throw new UserError(formatSpecProblems(problems, subject));
  for (const note of notes) console.log(`note: ${note}`);
}

/** A workflow id for a run started now: the prefix and the UTC time to the second, e.g. drill-restore-20261201-065944. */
export function timestampedId(prefix: string, now = new Date()): string {
  return `${prefix}-${now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-')}`;
}
