/**
 * The restore drill with each backup tool (`storage-lab drill restore --compare-tools`): which tools, in what order,
 * each tool's drill input and workflow id, and the input checked for every tool at once. Pure and workflow-safe: the
 * CLI checks the input with it before it starts anything, the comparison workflow again when it starts.
 */
import { BACKUP_TOOLS, type BackupToolName } from './backup-store';
import { resolveRestoreDrill, type DrillInput, type RestoreDrillSpec } from './drill-spec';
import type { SpecProblem } from '../core/errors';
import { InvalidSpecError } from './spec';

/** The tools in the order they run. */
export const COMPARED_TOOLS: readonly BackupToolName[] = BACKUP_TOOLS;

/** The drill input of one tool: the comparison's input with that tool. */
export function inputWithTool(input: DrillInput, tool: BackupToolName): DrillInput {
  const backup = typeof input.backup === 'object' && input.backup !== null ? (input.backup as Record<string, unknown>) : {};
  return { ...input, backup: { ...backup, tool } };
}

/** Resolves the input for every tool; one InvalidSpecError with every problem of either (each names its tool's fix). */
export function resolveForEveryTool(input: unknown): RestoreDrillSpec[] {
  // Not an object: the drill's own resolver says what to pass.
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return [resolveRestoreDrill(input)];
  const given = input as DrillInput;
  const problems: SpecProblem[] = [];
  const backup = given.backup as Record<string, unknown> | undefined;
  if (backup && typeof backup === 'object' && 'tool' in backup)
    problems.push({ path: 'backup.tool', message: 'the comparison runs the drill with every tool; remove backup.tool' });
  const specs: RestoreDrillSpec[] = [];
  for (const tool of COMPARED_TOOLS) {
    try {
      specs.push(resolveRestoreDrill(inputWithTool(given, tool)));
    } catch (err) {
      if (!(err instanceof InvalidSpecError)) throw err;
      for (const p of err.problems) if (!problems.some((q) => q.path === p.path && q.message === p.message)) problems.push(p);
    }
  }
  if (problems.length) throw new InvalidSpecError(problems, 'restore drill spec (compared with each backup tool)');
  return specs;
}

/** The child drill's workflow id: the comparison's, then the tool. */
export function comparedDrillId(runId: string, tool: BackupToolName): string {
  return `${runId}/${tool}`;
}
