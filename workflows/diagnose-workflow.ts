/**
 * Diagnose any PostgreSQL from the control worker: one read-only capture (activities/diagnose), kept in the results
 * store and its history, so a Temporal Schedule can run it against a production replica. One object argument for
 * the UI's Start Workflow form: {"dsn":"postgresql://monitor@replica.example:5432/app","seconds":60}. The input
 * follows the workflow-origin rules (parseDiagnoseInput): a network host, only sslmode, application_name and
 * connect_timeout as parameters, no password in any form (none lands in history); the worker variable
 * `passwordEnv` names (STORAGE_LAB_DSN_PASSWORD_*) supplies it.
 */
import { patched, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { type DiagnoseSummary } from '../common/results/diagnose-capture';
import { resolveDiagnoseInput, resolveDiagnoseInputBeforeDsnRules, type DiagnoseInput } from '../common/input/diagnose';
import { checkedWorkflowId } from './doors';
import { activityCause } from './failures';
import { diagnoseCalls } from './proxies';
import { acceptInput, searchAttributes } from './search-attributes';

/** Runs started before the DSN and passwordEnv rules replay as they were accepted; their activity checks anew. */
const DSN_RULES_PATCH = 'diagnose-dsn-rules';

export async function diagnoseWorkflow(input: Partial<DiagnoseInput> = {}): Promise<DiagnoseSummary> {
  const runId = checkedWorkflowId();
  const resolve = patched(DSN_RULES_PATCH) ? resolveDiagnoseInput : resolveDiagnoseInputBeforeDsnRules;
  const diagnose = acceptInput(resolve, input, () => ({ experiment: 'diagnose' }));
  setCurrentDetails(`### Diagnose\n**sampling** for ${diagnose.seconds} s (read-only), then the verdict.`);
  const { diagnoseDatabase } = diagnoseCalls(diagnose.seconds);
  let summary: DiagnoseSummary;
  try {
    summary = await diagnoseDatabase.executeWithOptions({ summary: `diagnose for ${diagnose.seconds} s, read-only` }, [{ runId, input: diagnose }]);
  } catch (err) {
    upsertSearchAttributes(searchAttributes({ status: 'failed' }));
    throw activityCause(err);
  }
  upsertSearchAttributes(searchAttributes({ status: summary.verdict }));
  setCurrentDetails(`### Diagnose\n**${summary.verdict}**: ${summary.reason}\n\n${summary.tps.toFixed(1)} transactions/s on ${summary.target}\n\nReport: ${summary.location}/report.md`);
  return summary;
}
