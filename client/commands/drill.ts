/**
 * storage-lab drill restore|failover: validate the drill input here, start the drill workflow, optionally watch
 * it with progress bars, and print what it measured (RTO split, RPO, lost commits, verification outcomes).
 * `drill restore --compare-tools` starts the comparison workflow instead: the drill with each backup tool, one table.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runFolderName } from '../../lib/results-store';
import { checkDrillWithTools } from '../../lib/spec-checks';
import type { DrillResult, DrillSummary, RestoreToolComparison } from '../../common/results/drill-result';
import { resolveFailoverDrill, resolvePartitionDrill, resolvePowerCutDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { labPaths } from '../../lib/lab-paths';
import { drillSection, toolComparisonTable } from '../../analysis/report/drills-markdown';
import { connectClient, workflowUrl } from '../connection';
import { UserError, workflowFailure } from '../errors';
import { watchWorkflow } from '../progress-view';
import { buildInput, refuseToolProblems, resolveOrUserError, timestampedId, type SpecFlags } from '../spec-input';
import { COMPARED_TOOLS, resolveForEveryTool } from '../../common/input/tool-comparison';
import { controlTaskQueue } from '../../worker/env';

export type DrillKind = 'restore' | 'failover' | 'partition' | 'power-cut';

export interface DrillFlags extends SpecFlags {
  watch?: boolean;
  id?: string;
  compareTools?: boolean;
}

const DRILLS = {
  restore: { workflowType: WORKFLOW_TYPES.restoreDrill, resolve: resolveRestoreDrill },
  failover: { workflowType: WORKFLOW_TYPES.failoverDrill, resolve: resolveFailoverDrill },
  partition: { workflowType: WORKFLOW_TYPES.partitionDrill, resolve: resolvePartitionDrill },
  'power-cut': { workflowType: WORKFLOW_TYPES.powerCutDrill, resolve: resolvePowerCutDrill },
} as const;

/** Starts a drill; with --watch waits for it and prints its figures. Returns the workflow id. */
export async function drillCommand(kind: DrillKind, flags: DrillFlags): Promise<string> {
  if (flags.compareTools) return compareToolsCommand(flags);
  const drill = DRILLS[kind];
  const input = buildInput(flags);
  const spec = resolveOrUserError(() => drill.resolve(input));
  await refuseToolProblems(checkDrillWithTools(spec, 'cli'), `${kind} drill spec`);
  const { name } = spec;
  const runId = flags.id ?? timestampedId(`drill-${kind}`);
  const lab = await connectClient();
  try {
    const handle = await lab.client.workflow.start(drill.workflowType, { taskQueue: controlTaskQueue(), workflowId: runId, args: [input] });
    console.log(`Started ${kind} drill ${name} as ${runId}\n  UI: ${workflowUrl(lab.namespace, runId)}`);
    if (!flags.watch) {
      console.log(`  follow it with: storage-lab watch ${runId}`);
      return runId;
    }
    try {
      const summary = await watchWorkflow<DrillSummary>(lab.client, handle);
      printDrill(runId, summary.location);
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      const printed = printDrill(runId, null);
      throw new UserError(`${kind} drill ${runId} failed${printed ? '' : `: ${workflowFailure(err)}`}`);
    }
    return runId;
  } finally {
    await lab.close();
  }
}

/** Starts the restore drill with each tool, one after the other; with --watch waits and prints the one table. */
async function compareToolsCommand(flags: DrillFlags): Promise<string> {
  const input = buildInput(flags);
  const specs = resolveOrUserError(() => resolveForEveryTool(input));
  for (const spec of specs) await refuseToolProblems(checkDrillWithTools(spec, 'cli'), `restore drill spec (backup.tool ${spec.backup.tool})`);
  const runId = flags.id ?? timestampedId('drill-compare-tools');
  const lab = await connectClient();
  try {
    const handle = await lab.client.workflow.start(WORKFLOW_TYPES.restoreToolComparison, { taskQueue: controlTaskQueue(), workflowId: runId, args: [input] });
    console.log(`Started the restore drill with ${COMPARED_TOOLS.join(', then ')} as ${runId}\n  UI: ${workflowUrl(lab.namespace, runId)}`);
    if (!flags.watch) {
      console.log(`  follow it with: storage-lab watch ${runId}`);
      return runId;
    }
    try {
      const comparison = await watchWorkflow<RestoreToolComparison>(lab.client, handle);
      printComparison(runId, comparison);
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      const printed = printComparison(runId, null);
      throw new UserError(`restore tool comparison ${runId} failed${printed ? '' : `: ${workflowFailure(err)}`}`);
    }
    return runId;
  } finally {
    await lab.close();
  }
}

/** Prints the comparison's table from its result.json (local results folder, or the one the workflow returned). */
function printComparison(runId: string, returned: RestoreToolComparison | null): boolean {
  const file = path.join(labPaths().resultsDir, runFolderName(runId), 'result.json');
  const comparison = returned ?? (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RestoreToolComparison) : null);
  if (!comparison) return false;
  console.log(`\nrestore drill, backup tools compared ${comparison.runId}: ${comparison.status}`);
  console.log(`  verdict: ${comparison.verdict}\n`);
  for (const line of toolComparisonTable(comparison.rows)) console.log(`  ${line}`);
  if (existsSync(file)) console.log(`\n  report: ${path.join(path.dirname(file), 'report.md')}`);
  return true;
}

/** Prints the drill's verdict and figures from its result.json (local results folder); false when there is none. */
function printDrill(runId: string, location: string | null): boolean {
  const file = path.join(location ?? path.join(labPaths().resultsDir, runFolderName(runId)), 'result.json');
  if (!existsSync(file)) {
    if (location) console.log(`\n  results: ${location}`);
    return false;
  }
  const result = JSON.parse(readFileSync(file, 'utf8')) as DrillResult;
  console.log(`\n${result.kind} ${result.runId}: ${result.status}`);
  console.log(`  verdict: ${result.verdict}\n`);
  const lines = drillSection(result);
  for (const line of lines.slice(2)) console.log(`  ${line}`);
  console.log(`  report: ${path.join(path.dirname(file), 'report.md')}`);
  return true;
}
