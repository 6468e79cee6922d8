/**
 * Failure types in one place. They are the `type` of ApplicationFailures and feed `nonRetryableErrorTypes`:
 * a retry cannot fix bad input or a missing prerequisite, so those fail fast.
 */
export const FAILURE_TYPES = {
  invalidSpec: 'InvalidSpecError',
  preflight: 'PreflightError',
  unsupported: 'UnsupportedError',
  agentUnreachable: 'AgentUnreachableError',
  verification: 'VerificationError',
  regression: 'RegressionError',
  /** An experiment that did not measure every storage class (its own failure, or the nightly's of it). */
  experimentFailed: 'ExperimentFailedError',
  hostGone: 'HostGoneError',
  /** The host's memory limit killed a process of the workload: the same workload would be killed again. */
  outOfMemory: 'HostOutOfMemoryError',
  /**
   * The host's PostgreSQL took connections and queries and answered none for a step's whole silence bound (every
   * process stopped, a wedged server): a retry on the same host would wait as long again.
   */
  postgresNotAnswering: 'PostgresNotAnsweringError',
  /** Tearing a host down failed after every retry: its resources may be left (the sweeper tries again). */
  teardown: 'TeardownFailedError',
  /** The cloud API refused the request as given (bad parameter, quota, permission): a retry gets the same answer. */
  cloudRejected: 'CloudRequestRejectedError',
  /** A path the lab refused to write or delete (outside its folders, a planted link, not its own): it stays so. */
  labPath: 'LabPathError',
  /** An id that cannot become a path segment (common/core/ids.ts): the same id is refused again. */
  unsafeId: 'UnsafeIdError',
  /** A host or store another run claimed first (common/core/claims.ts): it stays that run's, so no retry helps. */
  ownedByAnotherRun: 'OwnedByAnotherRunError',
} as const;

export type FailureType = (typeof FAILURE_TYPES)[keyof typeof FAILURE_TYPES];

/** Failure types that no retry can fix. */
export const NON_RETRYABLE_FAILURE_TYPES: string[] = [
  FAILURE_TYPES.invalidSpec,
  FAILURE_TYPES.preflight,
  FAILURE_TYPES.unsupported,
  FAILURE_TYPES.verification,
  FAILURE_TYPES.regression,
  FAILURE_TYPES.hostGone,
  FAILURE_TYPES.outOfMemory,
  FAILURE_TYPES.postgresNotAnswering,
  FAILURE_TYPES.cloudRejected,
  FAILURE_TYPES.labPath,
  FAILURE_TYPES.unsafeId,
  FAILURE_TYPES.ownedByAnotherRun,
];

/**
 * This machine lacks something infra/bootstrap.sh provides, or has it where the user that must run it cannot reach
 * (a tool cache below a private folder such as /root): an expected failure whose message says the fix. The CLI prints
 * it as one line, without a stack trace.
 */
export class SetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SetupError';
  }
}

/** One problem with a spec: the dotted path of the field, what is wrong, and how to fix it. */
export interface SpecProblem {
  path: string;
  message: string;
}

/** Renders spec problems as the one message users see, every problem at once. */
export function formatSpecProblems(problems: SpecProblem[], subject = 'experiment spec'): string {
  const lines = problems.map((p) => `  - ${p.path || '(spec)'}: ${p.message}`);
  return `Invalid ${subject} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines.join('\n')}`;
}
