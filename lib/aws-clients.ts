/**
 * The AWS SDK clients the lab uses, built one way: region, an optional endpoint (moto, S3-compatible stores),
 * and retries that ride out API throttling. Plus the small error helpers the provider and stores share.
 */
import { EC2Client } from '@aws-sdk/client-ec2';
import { S3Client } from '@aws-sdk/client-s3';
import { SSMClient } from '@aws-sdk/client-ssm';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../common/core/errors';

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

/** The AWS error code of a failed call ("InvalidSubnetID.NotFound"), or '' for anything else. */
export function awsErrorCode(err: unknown): string {
  const e = err as { name?: string; Code?: string; $metadata?: unknown };
  return e && typeof e === 'object' && e.$metadata !== undefined ? (e.Code ?? e.name ?? '') : '';
}

/** Codes that mean "this request, as given, will never succeed": bad parameters, missing resources, quotas, rights. */
const REJECTIONS = [
  /^InvalidParameter/,
  /^InvalidAMIID\./,
  /^InvalidSubnetID\./,
  /^InvalidGroup\./,
  /^InvalidInstanceType$/,
  /^InvalidBlockDeviceMapping$/,
  /^Unsupported/,
  /^UnauthorizedOperation$/,
  /^AccessDenied/,
  /^VcpuLimitExceeded$/,
  /^InstanceLimitExceeded$/,
  /^VolumeLimitExceeded$/,
  /^MaxIOPSLimitExceeded$/,
  /^IdempotentParameterMismatch$/,
  /^NoSuchEntity$/,
  /^ParameterNotFound$/,
];

/**
 * Runs one API call; a rejection becomes a non-retryable failure that says what was asked and what to change,
 * anything else (throttling past the SDK's retries, timeouts, 5xx) stays retryable for the activity's retry policy.
 */
export async function callAws<T>(what: string, fix: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const code = awsErrorCode(err);
    if (REJECTIONS.some((r) => r.test(code)))
      throw ApplicationFailure.nonRetryable(`${what}: AWS refused it (${code}: ${(err as Error).message}); ${fix}`, FAILURE_TYPES.cloudRejected);
    throw err;
  }
}
