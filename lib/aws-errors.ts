/**
 * The small AWS error helpers the provider and stores share. Apart from lib/aws-clients.ts so that a module on a local
 * path (a host agent, its supervisor) can use them without loading the AWS SDK.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../common/core/errors';

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
