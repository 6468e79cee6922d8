/**
 * The AWS SDK clients the lab uses, built one way: region, an optional endpoint (moto, S3-compatible stores),
 * and retries that ride out API throttling. Loading them costs a process ~0.4 s of CPU, so nothing on a local path
 * imports this module: the error helpers are in lib/aws-errors.ts, S3 owner records in lib/s3-claims.ts.
 */
import { EC2Client } from '@aws-sdk/client-ec2';
import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';

export interface AwsConnection {
  region: string;
  /** For API emulators and S3-compatible stores; unset on real AWS. */
  endpoint?: string;
  /** Explicit credentials (tests); otherwise the SDK's default chain (env, profile, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Attempts per call, throttling included (the SDK backs off 0.5 s, 1 s, 2 s, ... on RequestLimitExceeded). */
  maxAttempts?: number;
}

export interface AwsClients {
  ec2: EC2Client;
  s3: S3Client;
  ssm: SSMClient;
}

/** EC2 throttles per account and action; a lab starting 8 hosts at once meets it, so retry more than the default 3. */
const DEFAULT_MAX_ATTEMPTS = 8;

export function awsClients(c: AwsConnection): AwsClients {
  const config = {
    region: c.region,
    maxAttempts: c.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    ...(c.endpoint ? { endpoint: c.endpoint } : {}),
    ...(c.credentials ? { credentials: c.credentials } : {}),
  };
  return {
    ec2: new EC2Client(config),
    // Emulators serve buckets by path, not by virtual host names.
    s3: new S3Client({ ...config, forcePathStyle: Boolean(c.endpoint) }),
    ssm: new SSMClient(config),
  };
}
