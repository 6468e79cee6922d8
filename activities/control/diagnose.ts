/**
 * The diagnose activity of the control worker: one capture of a server named by a DSN without a password (the
 * worker's variable that `passwordEnv` names holds it, STORAGE_LAB_DSN_PASSWORD_*; never the worker's PGPASSWORD or
 * password file), kept in the results store with its report and indexed in its history, so a schedule against a
 * production replica builds a record. The input is checked again here by the workflow-origin rules.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { verdictLine, type DiagnoseSummary } from '../../common/results/diagnose-capture';
import { resolveDiagnoseInput, type DiagnoseInput } from '../../common/input/diagnose';
import { FAILURE_TYPES } from '../../common/core/errors';
import { InvalidSpecError } from '../../common/input/spec';
import { claimRunExecution, type ResultsStore } from '../../lib/results-store';
import { captureDiagnosis } from '../../lib/diagnose/capture';
import { NotReadOnlyError } from '../../lib/diagnose/connect';
import { saveCapture } from '../../analysis/diagnose-captures';
import { callingExecution } from './results';

export function createDiagnoseActivities(deps: { results: ResultsStore }) {
  return {
    /** Samples the server for the input's window (plus the fsync probe when it runs here) and stores the capture. */
    async diagnoseDatabase(args: { runId: string; input: DiagnoseInput }): Promise<DiagnoseSummary> {
      let input: DiagnoseInput;
      try {
        input = resolveDiagnoseInput(args.input);
      } catch (err) {
        if (err instanceof InvalidSpecError) throw ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.invalidSpec);
        throw err;
      }
      const ctx = Context.current();
      // The run's folder is this execution's, before a second is sampled (a finished run's id used again is refused).
      await claimRunExecution(deps.results, args.runId, callingExecution());
      let capture;
      try {
        capture = await captureDiagnosis({
          ...input,
          origin: 'workflow',
          signal: ctx.cancellationSignal,
          onProgress: (what, percent) => ctx.heartbeat({ what, percent }),
        });
      } catch (err) {
        if (err instanceof NotReadOnlyError) throw ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.unsupported);
        throw err;
      }
      const location = await saveCapture(deps.results, args.runId, capture);
      return {
        runId: args.runId,
        target: capture.target,
        location,
        verdict: capture.verdict,
        reason: capture.reason,
        verdictLine: verdictLine(capture.verdict, capture.evidence),
        tps: capture.tps,
      };
    },
  };
}
