/**
 * The CLI's failures: a mistake the user can fix (UserError) and what the top-level catch prints for an error
 * (client/cli.ts): an expected failure as one line with its fix, anything else with its stack.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { rootCause } from '@temporalio/common';
import { SetupError } from '../common/core/errors';
import { ProcessError } from '../lib/process-runner';

/** A mistake the user can fix (bad flag, bad spec): printed without a stack trace, exit code 2. */
export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}

/** What the CLI prints for a failure, and its exit code. */
export interface CliFailure {
  /** The text after "storage-lab: ", or null for an unexpected error (printed whole, with its stack). */
  message: string | null;
  exitCode: number;
}

/**
 * An expected failure (a user's mistake, this machine's setup, a tool that cannot start) is one line with its fix
 * and exit code 2; a workflow that failed is its failure's message, exit code 1; anything else is a bug, printed
 * with its stack, exit code 1.
 */
export function cliFailure(err: unknown): CliFailure {
  if (err instanceof UserError || err instanceof SetupError) return { message: err.message, exitCode: 2 };
  if (err instanceof ProcessError && err.reason === 'spawn') {
    const program = err.command.split(' ')[0];
    const code = /\b(E[A-Z]+)\s*$/.exec(err.stderr.trim())?.[1] ?? 'failed';
    const why = code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied' : code;
    return {
      message: `cannot run ${program} (${why}): run infra/bootstrap.sh, which installs the tools (as root it puts what the postgres user runs in /var/lib/storage-lab, outside a private checkout)`,
      exitCode: 2,
    };
  }
  // A workflow that failed (a command that waited for one): its failure's innermost message, which names the fix.
  if (err instanceof WorkflowFailedError) return { message: `the workflow failed: ${workflowFailure(err)}`, exitCode: 1 };
  return { message: null, exitCode: 1 };
}

/** What a failed workflow says went wrong: the innermost message of its failure chain (the SDK's rootCause). */
export function workflowFailure(err: WorkflowFailedError): string {
  return rootCause(err.cause) ?? err.message;
}
