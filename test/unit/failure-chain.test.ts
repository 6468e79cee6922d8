/** The history harness names the activity a failed run's failure came from (bench/history-harness.ts). */
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { failureChain } from '../../bench/history-harness';

describe('failureChain', () => {
  it('follows the causes and names the activity that timed out', () => {
    const timeout = new TimeoutFailure('activity Heartbeat timeout', undefined, TimeoutType.HEARTBEAT);
    const activity = new ActivityFailure('Activity task timed out', 'runFailoverWriter', '17', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'identity', timeout);
    const failed = new WorkflowFailedError('Workflow execution failed', activity, RetryState.NON_RETRYABLE_FAILURE);
    expect(failureChain(failed)).toBe(
      'Workflow execution failed <- Activity task timed out [activity runFailoverWriter, id 17] <- activity Heartbeat timeout',
    );
  });

  it('prints a failure without an activity or a cause as itself', () => {
    expect(failureChain(ApplicationFailure.create({ message: 'bad input' }))).toBe('bad input');
    expect(failureChain('a string')).toBe('a string');
  });
});
