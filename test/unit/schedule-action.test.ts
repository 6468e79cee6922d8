import { scheduledAction } from '../../client/commands/schedule';
import { UserError } from '../../client/errors';

describe('schedule create --workflow diagnose', () => {
  it('schedules diagnoseWorkflow with the checked input', async () => {
    const action = await scheduledAction({ cron: '*/30 * * * *', workflow: 'diagnose', set: ['dsn=postgresql://monitor@replica:5432/app', 'seconds=60'] });
    expect(action.workflowType).toBe('diagnoseWorkflow');
    expect(action.input).toEqual({ dsn: 'postgresql://monitor@replica:5432/app', seconds: 60 });
  });

  it('refuses a DSN with a password: a schedule keeps its input where anyone who reads it sees it', async () => {
    const flags = { cron: '*/30 * * * *', workflow: 'diagnose', set: ['dsn=postgresql://monitor:s3cret@replica:5432/app'] };
    await expect(scheduledAction(flags)).rejects.toThrow(UserError);
    await expect(scheduledAction(flags)).rejects.toThrow(/dsn/);
    await expect(scheduledAction(flags)).rejects.not.toThrow(/s3cret/);
  });
});
