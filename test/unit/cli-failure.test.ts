/**
 * What the CLI's top-level catch prints (client/cli.ts, cliFailure): an expected failure as one line with its fix and
 * exit code 2, never a stack trace; anything else whole, with its stack, exit code 1.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, RetryState } from '@temporalio/common';
import { SetupError } from '../../common/core/errors';
import { cliFailure, UserError } from '../../client/errors';
import { unreachableServerError } from '../../lib/postgres-binaries';
import { ProcessError } from '../../lib/process-runner';

const spawnError = (file: string, code: string) => new ProcessError(`${file} -D /tmp/storage-lab-check-x -C shared_buffers`, null, null, '', `spawn ${file} ${code}`, 'spawn');

describe("the CLI's top-level catch", () => {
  it.each([
    ['a user error', new UserError('--limit 0: must be a whole number >= 1'), '--limit 0: must be a whole number >= 1'],
    ['a missing bootstrap', new SetupError('Temporal CLI not found at /x/.cache/bin/temporal: run infra/bootstrap.sh (it installs 1.9.1)'), 'Temporal CLI not found at /x/.cache/bin/temporal: run infra/bootstrap.sh (it installs 1.9.1)'],
  ])('prints %s as its message, exit code 2', (_what, err, message) => {
    expect(cliFailure(err)).toEqual({ message, exitCode: 2 });
  });

  it("prints server binaries out of the postgres user's reach as one line with the fix", () => {
    const failure = cliFailure(unreachableServerError('/root/storage-lab/.cache/postgresql/17/bin'));
    expect(failure.exitCode).toBe(2);
    expect(failure.message).toMatch(/^PostgreSQL server binaries in \/root\/storage-lab\/\.cache\/postgresql\/17\/bin are out of the postgres user's reach .*run infra\/bootstrap\.sh as root/);
    expect(failure.message).not.toContain('\n');
  });

  it.each([
    ['EACCES', 'permission denied'],
    ['ENOENT', 'not found'],
  ])('prints a tool that cannot start (%s) as one line naming it and the bootstrap', (code, why) => {
    const failure = cliFailure(spawnError('/root/storage-lab/.cache/postgresql/17/bin/postgres', code));
    expect(failure.exitCode).toBe(2);
    expect(failure.message).toBe(
      `cannot run /root/storage-lab/.cache/postgresql/17/bin/postgres (${why}): run infra/bootstrap.sh, which installs the tools (as root it puts what the postgres user runs in /var/lib/storage-lab, outside a private checkout)`,
    );
  });

  it("prints a failed workflow as its failure's innermost message, exit code 1", () => {
    const refusal = ApplicationFailure.nonRetryable('This environment cannot run the spec:\n  - hosts folder /root/x/.lab/hosts: the postgres user cannot reach it', 'PreflightError');
    const err = new WorkflowFailedError('Workflow execution failed', refusal, RetryState.NON_RETRYABLE_FAILURE);
    expect(cliFailure(err)).toEqual({ message: `the workflow failed: ${refusal.message}`, exitCode: 1 });
  });

  it('leaves anything else to be printed whole, with its stack, exit code 1', () => {
    expect(cliFailure(new Error('a bug'))).toEqual({ message: null, exitCode: 1 });
    expect(cliFailure(new ProcessError('/usr/bin/psql -c x', 2, null, '', 'ERROR: boom', 'exit'))).toEqual({ message: null, exitCode: 1 });
    expect(cliFailure('a string')).toEqual({ message: null, exitCode: 1 });
  });
});
