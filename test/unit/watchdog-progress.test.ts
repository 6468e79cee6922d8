/**
 * The watchdog's heartbeat while a host's PostgreSQL is silent keeps the step's last percent: without it a demo's
 * load bar went 42.5 % → 3.8 % → 49.6 % while the server was slow to answer beside a compile.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { Context } from '@temporalio/activity';
import { waitingUpdate } from '../../activities/host/watchdog';
import { lastReportedPercent, progressReporter } from '../../activities/progress';

describe("the watchdog's heartbeat while PostgreSQL is silent", () => {
  it("keeps the activity's last reported percent, and shows no ETA", async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const seen = await env.run(async (): Promise<{ before: number | undefined; update: ReturnType<typeof waitingUpdate> }> => {
      const before = lastReportedPercent();
      const report = progressReporter('h-gp3-0', 'load');
      report({ percent: 42.5, etaSeconds: 120, detail: { step: 'primary keys' } });
      return { before, update: waitingUpdate(lastReportedPercent(Context.current()), 3_400) };
    });
    expect(seen.before).toBeUndefined();
    expect(seen.update).toEqual({ percent: 42.5, detail: { step: 'waiting for PostgreSQL', noReplySeconds: 3 } });
    expect(beats).toHaveLength(1);
  });

  it('is the last percent of this activity only: another activity has none of it', async () => {
    await new MockActivityEnvironment().run(async () => progressReporter('h', 'load')({ percent: 80 }));
    expect(await new MockActivityEnvironment().run(async () => lastReportedPercent())).toBeUndefined();
    expect(waitingUpdate(undefined, 999)).toEqual({ detail: { step: 'waiting for PostgreSQL', noReplySeconds: 0 } });
  });
});
