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

  it('checks the input by the workflow\'s own rules: hostile DSNs and a passwordEnv outside STORAGE_LAB_DSN_PASSWORD_* are refused', async () => {
    const refused: [string[], RegExp][] = [
      [['dsn=postgresql://monitor@replica/app?options=-c%20default_transaction_read_only%3Doff'], /dsn: the query parameter "options" is not allowed/],
      [['dsn=postgresql://monitor@%2Fvar%2Frun%2Fpostgresql/app'], /dsn: names a Unix-socket directory/],
      [['dsn=postgresql://monitor@replica/app?%70assword=s3cret'], /dsn: the query parameter "password" is not allowed/],
      [['dsn=postgresql://monitor@replica/app', 'passwordEnv=AWS_SECRET_ACCESS_KEY'], /passwordEnv: must name a variable of the control worker that starts with STORAGE_LAB_DSN_PASSWORD_/],
    ];
    for (const [set, message] of refused) {
      const attempt = scheduledAction({ cron: '*/30 * * * *', workflow: 'diagnose', set });
      await expect(attempt).rejects.toThrow(UserError);
      await expect(attempt).rejects.toThrow(message);
      await expect(attempt).rejects.not.toThrow(/s3cret/);
    }
    const action = await scheduledAction({ cron: '*/30 * * * *', workflow: 'diagnose', set: ['dsn=postgresql://monitor@replica/app', 'passwordEnv=STORAGE_LAB_DSN_PASSWORD_REPLICA'] });
    expect(action.input).toEqual({ dsn: 'postgresql://monitor@replica/app', passwordEnv: 'STORAGE_LAB_DSN_PASSWORD_REPLICA' });
  });
});
