/**
 * The control worker's AWS settings, from its environment (validated at start): STORAGE_LAB_AWS=1 turns it on.
 *   AWS_REGION                 region of the hosts (default us-east-1); credentials from the SDK's default chain
 *   STORAGE_LAB_AWS_BUCKET     S3 bucket for results and the host agent package (required)
 *   STORAGE_LAB_RESULTS_PREFIX key prefix of results (default storage-lab/results)
 *   STORAGE_LAB_S3_KMS_KEY_ID  SSE-KMS key for what the lab writes to S3 (default: SSE-S3, AES256)
 *   STORAGE_LAB_AWS_ENDPOINT   API endpoint override, for emulators (moto); unset on AWS
 *   and the operator's rules for every run (image owners, cost ceiling, prices, Temporal address for host agents):
 *   infra/providers/aws/policy.ts
 * Apart from worker/aws-setup.ts, which builds the provider and loads the AWS SDK (~0.4 s of CPU): a control worker
 * without STORAGE_LAB_AWS never loads it.
 */
import { awsPolicyFromEnv, type AwsPolicy } from '../infra/providers/aws/policy';

export interface AwsEnv {
  region: string;
  endpoint?: string;
  bucket: string;
  resultsPrefix: string;
  kmsKeyId?: string;
  /** The operator's rules for runs (default: DEFAULT_AWS_POLICY). */
  policy?: AwsPolicy;
}

/** The AWS settings, or null when STORAGE_LAB_AWS is not set. */
export function awsEnv(env: NodeJS.ProcessEnv = process.env): AwsEnv | null {
  const on = env.STORAGE_LAB_AWS;
  if (!on || on === '0') return null;
  if (on !== '1') throw new Error(`STORAGE_LAB_AWS must be 1 (AWS provider on) or unset (got "${on}")`);
  const bucket = env.STORAGE_LAB_AWS_BUCKET;
  if (!bucket)
    throw new Error('STORAGE_LAB_AWS=1 needs STORAGE_LAB_AWS_BUCKET: the S3 bucket for results and the host agent package (see infra/providers/aws/README.md)');
  const endpoint = env.STORAGE_LAB_AWS_ENDPOINT || undefined;
  if (endpoint && !/^https?:\/\/[^/]+/.test(endpoint))
    throw new Error(`STORAGE_LAB_AWS_ENDPOINT must be a URL such as http://127.0.0.1:5000 (got "${endpoint}")`);
  return {
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    endpoint,
    bucket,
    resultsPrefix: (env.STORAGE_LAB_RESULTS_PREFIX || 'storage-lab/results').replace(/^\/+|\/+$/g, ''),
    kmsKeyId: env.STORAGE_LAB_S3_KMS_KEY_ID || undefined,
    policy: awsPolicyFromEnv(env),
  };
}
