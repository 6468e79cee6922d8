/** storage-lab report RUN: renders report.md and report.html again from the run's stored result.json (its predictions computed again). */
import path from 'node:path';
import { DirResultsStore, type ResultsStore } from '../../lib/results-store';
import { REPORT_FILES, writeReports } from '../../analysis/report';
import { runPredictions } from '../../analysis/predictions';
import type { ExperimentResult } from '../../common/results/result';
import { labPaths } from '../../lib/lab-paths';
import { UserError } from '../errors';

export interface ReportFlags {
  /** Results folder (default: the lab's, STORAGE_LAB_RESULTS_DIR). */
  resultsDir?: string;
}

/** The store the control worker writes to: S3 when it runs with STORAGE_LAB_AWS=1, else the lab's results folder. */
export async function resultsStore(flags: ReportFlags = {}): Promise<ResultsStore> {
  // The AWS modules load only when asked for: the SDK is slow to require.
  const aws = flags.resultsDir || !process.env.STORAGE_LAB_AWS ? null : (await import('../../worker/aws-setup')).awsEnv();
  if (!aws) return new DirResultsStore(path.resolve(flags.resultsDir ?? labPaths().resultsDir));
  const { awsClients } = await import('../../lib/aws-clients');
  const { S3ResultsStore } = await import('../../lib/s3-results-store');
  const { s3 } = awsClients({ region: aws.region, endpoint: aws.endpoint });
  return new S3ResultsStore(s3, { bucket: aws.bucket, prefix: aws.resultsPrefix, kmsKeyId: aws.kmsKeyId });
}

/** Re-renders a run's reports through the results store; returns where they are. */
export async function reportCommand(runId: string, flags: ReportFlags = {}, store?: ResultsStore): Promise<string[]> {
  const results = store ?? (await resultsStore(flags));
  const text = await results.get(runId, 'result.json');
  if (text === null) {
    const known = (await results.runs()).slice(-10);
    throw new UserError(
      `no result.json for run ${runId} in ${results.location(runId)}; runs with results: ${known.join(', ') || '(none)'}`,
    );
  }
  let result: ExperimentResult;
  try {
    result = JSON.parse(text) as ExperimentResult;
  } catch (err) {
    throw new UserError(`${results.location(runId)}/result.json is not valid JSON: ${(err as Error).message}`);
  }
  // Predictions are derived from the stored measurements: computed again with the model this build has.
  result.predictions = await runPredictions(results, result);
  // Written under the run the results name (the folder's own claim), whichever spelling of it was typed.
  await results.put(result.runId, 'result.json', JSON.stringify(result, null, 2));
  await writeReports(results, result.runId, result);
  const files = Object.values(REPORT_FILES).map((f) => `${results.location(runId)}/${f}`);
  for (const f of files) console.log(f);
  return files;
}
