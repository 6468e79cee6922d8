/**
 * The nightly regression: run the experiment as a child, then judge it against the history of the same preset
 * and environment. A regression fails this workflow, with the verdict and its numbers in the failure message.
 * One object argument with defaults, for schedules and the UI: {} or {"preset":"nightly"}, plus any spec override
 * and `regression` options ({"minEffect":0.15,...}).
 */
import { ApplicationFailure, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { Verdict } from '../common/results/verdict';
import { FAILURE_TYPES, formatSpecProblems } from '../common/core/errors';
import { NIGHTLY_PRESET, verdictOptionProblems, type VerdictOptions } from '../common/input/regression-options';
import type { ExperimentInput } from '../common/input/spec';
import { runChild, type ChildFailure } from './children';
import { checkedWorkflowId } from './doors';
import type { ExperimentSummary } from '../common/results/result';
import { experimentWorkflow, validateOrFail } from './experiment-workflow';
import { ProgressBoard } from './progress';
import { preflightCalls, resultCalls } from './proxies';
import { preflightOrFail, searchAttributes } from './search-attributes';

export interface NightlyRegressionInput extends ExperimentInput {
  regression?: Partial<VerdictOptions>;
}

export interface NightlyRegressionSummary extends ExperimentSummary {
  verdict: Verdict;
}

export async function nightlyRegressionWorkflow(input: NightlyRegressionInput = {}): Promise<NightlyRegressionSummary> {
  const nightlyId = checkedWorkflowId();
  const given: unknown = input ?? {};
  // A non-object input fails with the spec's own message ("must be a JSON object").
  if (typeof given !== 'object' || Array.isArray(given)) validateOrFail(given);
  const { regression, ...rest } = given as NightlyRegressionInput;
  const experiment: ExperimentInput = { preset: NIGHTLY_PRESET, ...rest };
  // Bad input fails here, before the experiment provisions anything.
  const spec = validateOrFail(experiment);
  const problems = verdictOptionProblems(regression);
  if (problems.length)
    throw ApplicationFailure.create({
      message: formatSpecProblems(problems),
      type: FAILURE_TYPES.invalidSpec,
      nonRetryable: true,
      details: problems,
    });

  // The experiment's own preflight, here: a spec the tools refuse starts no child.
  await preflightOrFail(preflightCalls.preflight({ spec }));
  const runId = `${nightlyId}/experiment`;
  upsertSearchAttributes(searchAttributes({ experiment: spec.name, preset: spec.preset ?? 'custom', status: 'running' }));
  // The experiment as every parent runs a child: on the board (the progress query), cancelled with the nightly run,
  // which then waits for it to tear its hosts down.
  const board = new ProgressBoard(`Nightly regression ${nightlyId}`, nightlyId);
  board.setStage('running the experiment');
  let failure: ChildFailure | undefined;
  const summary = await runChild(board, { workflowId: runId, label: `experiment (preset ${spec.preset ?? 'custom'})` }, experimentWorkflow, experiment, (f) => (failure = f));
  if (!summary)
    throw ApplicationFailure.create({ message: `experiment ${runId} failed: ${failure?.message}`, type: FAILURE_TYPES.experimentFailed, nonRetryable: true });

  details('comparing with the history', `Experiment \`${runId}\` ${summary.status}; comparing it with earlier runs.`);
  const verdict = await resultCalls.compareWithHistory.executeWithOptions({ summary: `verdict for ${runId}` }, [
    { runId, options: regression },
  ]);
  upsertSearchAttributes(searchAttributes({ status: verdict.verdict }));
  details(verdict.verdict, `${verdict.summary}\n\nReport: ${summary.location}/report.md`);
  if (verdict.verdict === 'regressed')
    throw ApplicationFailure.create({
      message: `regressed: run ${runId} is slower than its baseline (${verdict.baselineRunIds.length} runs)\n${verdict.summary}`,
      type: FAILURE_TYPES.regression,
      nonRetryable: true,
      details: [verdict],
    });
  return { ...summary, verdict };
}

/** The UI's "current details" of the nightly run. */
function details(stage: string, text: string): void {
  setCurrentDetails(`### Nightly regression\n**${stage}**\n\n${text}`);
}
