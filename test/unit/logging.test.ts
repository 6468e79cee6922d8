import { formatLogLine } from '../../worker/logging';

const entry = {
  level: 'INFO' as const,
  message: 'Activity completed',
  timestampNanos: 1796000000123456789n,
  meta: { sdkComponent: 'activity', workflowId: 'exp-1/gp3-0', activityType: 'runPgbench', attempt: 1, taskToken: 'opaque' },
};

describe('worker log lines', () => {
  it('are JSON off a terminal, with who wrote them and what they are about, without the task token', () => {
    const line = JSON.parse(formatLogLine(entry, { role: 'host-agent', hostId: 'abc-gp3-0', runId: 'exp-1' }, true));
    expect(line).toEqual({
      time: '2026-11-30T00:53:20.123Z',
      level: 'INFO',
      msg: 'Activity completed',
      role: 'host-agent',
      hostId: 'abc-gp3-0',
      runId: 'exp-1',
      sdkComponent: 'activity',
      workflowId: 'exp-1/gp3-0',
      activityType: 'runPgbench',
      attempt: 1,
    });
  });
  it('are one short line on a terminal', () => {
    expect(formatLogLine(entry, { role: 'host-agent', hostId: 'abc-gp3-0' }, false)).toBe(
      '2026-11-30T00:53:20.123Z INFO [host-agent abc-gp3-0] Activity completed sdkComponent=activity workflowId=exp-1/gp3-0 activityType=runPgbench attempt=1',
    );
  });
});
