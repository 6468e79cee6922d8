/**
 * Regression activities (control worker): compare a finished run with the history of its preset and environment,
 * and record the verdict in result.json, the reports (report.md, report.html) and the history index.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { ExperimentResult } from '../../common/results/result';
import { historyEntry, RunHistory } from '../../analysis/history';
import { writeReports } from '../../analysis/report';
import type { ResultsStore } from '../../lib/results-store';
import { formatSpecProblems, FAILURE_TYPES } from '../../common/core/errors';
import { verdictOptionProblems, verdictOptions, type VerdictOptions } from '../../common/input/regression-options';
import { decideVerdict, seedFrom } from '../../analysis/regression-verdict';
import type { Verdict } from '../../common/results/verdict';

export interface CompareInput {
  /** The run (experiment workflow id) to judge; its result.json must be written. */
  runId: string;
  options?: Partial<VerdictOptions>;
}

export function createRegressionActivities(deps: { results: ResultsStore }) {
  const history = new RunHistory(deps.results);
  return {
    /**
     * Judges a run against its baseline (pinned runs, or the latest comparable ones) and records the verdict:
     * in result.json (`verdict`), in the reports and in the history index. Idempotent: a retry recomputes the same
     * verdict (the PRNG is seeded by the run id).
     */
    async compareWithHistory(input: CompareInput): Promise<Verdict> {
      const problems = verdictOptionProblems(input.options);
      if (problems.length) throw ApplicationFailure.nonRetryable(formatSpecProblems(problems), FAILURE_TYPES.invalidSpec);
      const options = verdictOptions(input.options);
      const text = await deps.results.get(input.runId, 'result.json');
      if (!text)
        throw ApplicationFailure.nonRetryable(
          `run ${input.runId} has no result.json in ${deps.results.location(input.runId)}; only a finished run can be compared`,
          FAILURE_TYPES.verification,
        );
      const result = JSON.parse(text) as ExperimentResult;
      const entry = historyEntry(result);
      const baseline = await history.baseline(entry, options.maxBaselineRuns, options.minEffect);
      const verdict = decideVerdict({
        candidate: entry.classes,
        baseline: baseline.entries.map((e) => ({ runId: e.runId, classes: e.classes })),
        pinned: baseline.pinned,
        options,
        seed: seedFrom(result.runId),
      });
      result.verdict = verdict;
      await deps.results.put(input.runId, 'result.json', JSON.stringify(result, null, 2));
      await writeReports(deps.results, input.runId, result);
      await history.record({
        ...entry,
        verdict: {
          verdict: verdict.verdict,
          summary: verdict.summary,
          baselineRunIds: verdict.baselineRunIds,
          pinned: verdict.pinned,
          effects: Object.fromEntries(verdict.classes.map((c) => [c.className, c.effect])),
        },
      });
      return verdict;
    },
  };
}
