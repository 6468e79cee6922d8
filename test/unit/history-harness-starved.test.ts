/**
 * The history harness runs a workflow once more only when a fake host activity timed out having returned or never
 * started (the process or the server was starved): any other failure is the run's result.
 */
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { FakeTimeline, fakeTimedOut } from '../../bench/history-harness';

const failed = (cause: Error) =>
  new WorkflowFailedError('Workflow execution failed', new ActivityFailure('Activity task timed out', 'archiveCurrentSegment', '74', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'w', cause), RetryState.NON_RETRYABLE_FAILURE);
const heartbeatTimeout = () => new TimeoutFailure('activity Heartbeat timeout', undefined, TimeoutType.HEARTBEAT);

describe('history harness: a starved run, and only that, is run again', () => {
  it('a fake that returned at once, then timed out: starved, saying what the fake did', () => {
    const fakes = new FakeTimeline();
    fakes.entries.push({ type: 'archiveCurrentSegment', id: '74', startedAt: 1_000, returnedAt: 1_003 });
    expect(fakeTimedOut(failed(heartbeatTimeout()), fakes, 812.4)).toMatch(/archiveCurrentSegment \(id 74\) timed out .*returned 3 ms after it started; the event loop ran up to 812 ms late/);
  });

  it('a fake the task never reached: starved', () => {
    expect(fakeTimedOut(failed(heartbeatTimeout()), new FakeTimeline(), 5)).toMatch(/never reached by its task/);
  });

  it('a fake still running when it timed out: not starvation, the result stands', () => {
    const fakes = new FakeTimeline();
    fakes.entries.push({ type: 'archiveCurrentSegment', id: '74', startedAt: 1_000, returnedAt: null });
    expect(fakeTimedOut(failed(heartbeatTimeout()), fakes, 5)).toBeNull();
  });

  it('a failure that is not a timeout, or a timeout of no activity: the result stands', () => {
    const fakes = new FakeTimeline();
    fakes.entries.push({ type: 'archiveCurrentSegment', id: '74', startedAt: 1_000, returnedAt: 1_003 });
    expect(fakeTimedOut(failed(ApplicationFailure.nonRetryable('no segment closed')), fakes, 5)).toBeNull();
    expect(fakeTimedOut(new WorkflowFailedError('Workflow execution timed out', heartbeatTimeout(), RetryState.TIMEOUT), fakes, 5)).toBeNull();
  });

  it('records each fake activity it wraps, its start and its return or throw, by type and id', async () => {
    const fakes = new FakeTimeline();
    const wrapped = fakes.record({
      async describeHost() {
        expect(fakes.entries.at(-1)?.returnedAt).toBeNull(); // Started, not yet returned.
        return 'up';
      },
      async stopPostgres() {
        throw new Error('refused');
      },
    });
    const env = new MockActivityEnvironment({ activityId: '12' });
    expect(await env.run(wrapped.describeHost)).toBe('up');
    await expect(env.run(wrapped.stopPostgres)).rejects.toThrow('refused');
    expect(fakes.of('describeHost', '12')).toEqual([{ type: 'describeHost', id: '12', startedAt: expect.any(Number), returnedAt: expect.any(Number) }]);
    expect(fakes.of('stopPostgres', '12')[0].returnedAt).not.toBeNull();
    expect(fakes.of('describeHost', '13')).toEqual([]);
  });
});
