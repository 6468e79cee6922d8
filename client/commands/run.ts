/** storage-lab run: validate here, start the experiment workflow, optionally watch it and copy its results. */
import { WorkflowFailedError } from '@temporalio/client';
import { cp, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { formatBound } from '../../common/input/bounds';
import { estimateCost, formatCost } from '../../common/input/cost';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { planRun } from '../../common/input/plan';
import type { ExperimentSpec } from '../../common/input/spec';
import { providerOf } from '../../common/providers/registry';
import { labPaths } from '../../lib/lab-paths';
import { runFolderName } from '../../lib/results-store';
import { checkExperimentWithTools } from '../../lib/spec-checks';
import type { ExperimentSummary } from '../../common/results/result';
import { controlTaskQueue } from '../../worker/env';
import { connectClient, workflowUrl } from '../connection';
import { UserError, workflowFailure } from '../errors';
import { watchWorkflow } from '../progress-view';
import { buildInput, refuseToolProblems, timestampedId, validateInput, type SpecFlags } from '../spec-input';

export interface RunFlags extends SpecFlags {
  out?: string;
  watch?: boolean;
  id?: string;
  dryRun?: boolean;
}

export function defaultRunId(spec: ExperimentSpec, now = new Date()): string {
  return timestampedId(`exp-${spec.name}`, now);
}

export function printPlan(spec: ExperimentSpec, runId: string): void {
  const plan = planRun(spec, runId);
  console.log(`Plan for ${spec.name} (preset ${spec.preset ?? 'custom'}, provider ${spec.provider}):`);
  console.log(`  ${plan.hosts.length} hosts, ${plan.parallel} at a time:`);
  for (const h of plan.hosts)
    console.log(`    ${h.hostId.padEnd(24)} ${h.className.padEnd(12)} ${h.instanceType ?? 'local'}  ${h.volume}`);
  console.log('  data preparation per host (estimated):');
  for (const h of plan.preparation.hosts)
    console.log(`    ${h.hostId.padEnd(24)} ${h.step.padEnd(15)} ~${formatBound(h.seconds)}${h.waitSeconds ? ` (after ~${formatBound(h.waitSeconds)} waiting for the publish)` : ''}`);
  console.log(`    ${plan.preparation.note}`);
  console.log('  steps per host:');
  for (const s of plan.steps) console.log(`    ${s}`);
  if (plan.drills.length) console.log(`  then the durability drills:\n${plan.drills.map((d) => `    ${d}`).join('\n')}`);
}

/** Starts a run; with --watch waits for it and prints where the report is. Returns the run id. */
export async function runCommand(flags: RunFlags): Promise<ExperimentSummary | string> {
  const input = buildInput(flags);
  const spec = validateInput(input);
  await refuseToolProblems(checkExperimentWithTools(spec, 'cli'));
  const runId = flags.id ?? defaultRunId(spec);
  const provider = providerOf(spec.provider);
  // The fields a real run on the provider needs in its section (a dry run needs none of them).
  const missing = provider.runProblemsOf(spec).map((p) => `  - ${p.path}: ${p.message}`);
  // A provider that prices its hosts prints the estimate before anything exists.
  const printCost = () => provider.cost && console.log(formatCost(estimateCost(spec)).join('\n'));
  if (flags.dryRun) {
    printPlan(spec, runId);
    printCost();
    if (missing.length) console.log(`Before a real run ${provider.where}, set:\n${missing.join('\n')}`);
    console.log('Dry run: nothing was created.');
    return runId;
  }
  if (missing.length) throw new UserError(`a run ${provider.where} needs these fields:\n${missing.join('\n')}`);
  printCost();
  const lab = await connectClient();
  try {
    const handle = await lab.client.workflow.start(WORKFLOW_TYPES.experiment, {
      taskQueue: controlTaskQueue(),
      workflowId: runId,
      args: [input],
    });
    console.log(`Started ${runId}\n  UI: ${workflowUrl(lab.namespace, runId)}`);
    if (!flags.watch && !flags.out) {
      console.log(`  follow it with: storage-lab watch ${runId}`);
      return runId;
    }
    let summary: ExperimentSummary;
    try {
      summary = flags.watch ? await watchWorkflow<ExperimentSummary>(lab.client, handle) : ((await handle.result()) as ExperimentSummary);
    } catch (err) {
      // A run refused by its preflight (or failed on the way) says why in its failure's own words, with the fix.
      if (err instanceof WorkflowFailedError) throw new UserError(`run ${runId} failed: ${workflowFailure(err)}`);
      throw err;
    }
    printSummary(summary);
    // Results of a control worker on AWS are in S3, not in this machine's results folder.
    if (flags.out && summary.location.startsWith('s3://'))
      console.log(`  results are in S3; copy them with: aws s3 cp --recursive ${summary.location} ${flags.out}`);
    else if (flags.out) {
      await copyResults(runId, flags.out);
      console.log(`  copied results to ${flags.out}`);
    }
    return summary;
  } finally {
    await lab.close();
  }
}

export function printSummary(summary: ExperimentSummary): void {
  console.log(`\nRun ${summary.runId}: ${summary.status}`);
  for (const [cls, tps] of Object.entries(summary.medianTps)) console.log(`  ${cls.padEnd(12)} median TPS ${tps ?? '–'}`);
  for (const [k, v] of Object.entries(summary.ratios)) console.log(`  speedup (${k}) ${v ?? '–'}x`);
  if (summary.failedChecks.length) console.log(`  failed checks:\n    ${summary.failedChecks.join('\n    ')}`);
  console.log(`  results: ${summary.location}`);
  console.log(`  report:  ${summary.location}/report.md`);
}

async function copyResults(runId: string, out: string): Promise<void> {
  await mkdir(out, { recursive: true });
  await cp(path.join(labPaths().resultsDir, runFolderName(runId)), out, { recursive: true });
}
