/**
 * The control worker's AWS side, from its environment (validated at start): STORAGE_LAB_AWS=1 turns it on.
 *   AWS_REGION                 region of the hosts (default us-east-1); credentials from the SDK's default chain
 *   STORAGE_LAB_AWS_BUCKET     S3 bucket for results and the host agent package (required)
 *   STORAGE_LAB_RESULTS_PREFIX key prefix of results (default storage-lab/results)
 *   STORAGE_LAB_S3_KMS_KEY_ID  SSE-KMS key for what the lab writes to S3 (default: SSE-S3, AES256)
 *   STORAGE_LAB_AWS_ENDPOINT   API endpoint override, for emulators (moto); unset on AWS
 *   and the operator's rules for every run (image owners, cost ceiling, prices, Temporal address for host agents):
 *   infra/providers/aws/policy.ts
 */
import { Ec2Provider } from '../infra/providers/aws/ec2-provider';
import { S3AgentPackage } from '../infra/providers/aws/agent-package';
import { awsClients, type AwsClients } from '../lib/aws-clients';
import { DEFAULT_AWS_POLICY } from '../infra/providers/aws/policy';
import type { AwsEnv } from './aws-env';
import { S3ResultsStore } from '../lib/s3-results-store';
import type { TemporalEnv } from './env';

export { awsEnv, type AwsEnv } from './aws-env';

/** Key prefix of the host agent packages in the bucket (the host instance profile may read only this). */
export const AGENT_PREFIX = 'storage-lab/agent';

/** The EC2 provider and the S3 results store of a control worker. */
export function awsControlSetup(
  e: AwsEnv,
  temporal: TemporalEnv,
  clients: AwsClients = awsClients({ region: e.region, endpoint: e.endpoint }),
  waits?: ConstructorParameters<typeof Ec2Provider>[0]['waits'],
): { provider: Ec2Provider; results: S3ResultsStore } {
  const provider = new Ec2Provider({
    clients,
    region: e.region,
    endpoint: e.endpoint,
    owner: `${temporal.address}/${temporal.namespace}`,
    temporalNamespace: temporal.namespace,
    bucket: e.bucket,
    resultsPrefix: e.resultsPrefix,
    agentPackage: new S3AgentPackage(clients.s3, { bucket: e.bucket, prefix: AGENT_PREFIX, kmsKeyId: e.kmsKeyId }),
    policy: { ...(e.policy ?? DEFAULT_AWS_POLICY), temporalAddress: e.policy?.temporalAddress ?? temporal.address },
    waits,
  });
  const results = new S3ResultsStore(clients.s3, { bucket: e.bucket, prefix: e.resultsPrefix, kmsKeyId: e.kmsKeyId });
  return { provider, results };
}
