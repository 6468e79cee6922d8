/**
 * hostCalls' groups are typed subsets of the host activities: a measurement cannot be scheduled through the setup
 * group (it would get setup's ten retries, and a failed attempt would be replaced unseen instead of recorded), nor
 * configuration through the measure group. The @ts-expect-error lines below are the type-level proof: were any of
 * them callable, tsc would fail the build (an unused @ts-expect-error is an error). At run time each group holds its
 * own activities and nothing else, though the SDK's proxy would answer any name.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { HostActivities } from '../../activities/host';
import { HOST_CALL_GROUPS, hostCalls, type HostCalls } from '../../workflows/proxies';

const timeouts = { agentStartSeconds: 60, deadAfterSeconds: 180, loadHours: 2, measureSeconds: 600, bulkSeconds: 600 };

/** Compiled, never called: each line reaches an activity through a group whose retries are not meant for it. */
export function misroutedCalls(calls: HostCalls): unknown[] {
  return [
    // @ts-expect-error: a measurement is one attempt, recorded by the workflow; setup retries ten times.
    calls.setup.runPgbench,
    // @ts-expect-error: the restore drill's writes and markers are measurements too.
    calls.setup.writeHistory,
    // @ts-expect-error: configuration is idempotent and retried; a measurement gets one attempt.
    calls.measure.configurePostgres,
    // @ts-expect-error: the load resumes from its recorded chunks over 30 attempts; nothing else may.
    calls.load.runVacuumPhase,
    // @ts-expect-error: the hello fails fast when no agent polls; a phase waits for its host.
    calls.hello.runBacklogPhase,
  ];
}

describe('hostCalls groups', () => {
  const calls = hostCalls('host-under-test', timeouts);

  it('holds in each group exactly the activities the group names', () => {
    for (const [group, names] of Object.entries(HOST_CALL_GROUPS)) {
      expect(Object.keys(calls[group as keyof HostCalls]).sort()).toEqual([...names].sort());
      for (const name of names) expect(typeof (calls[group as keyof HostCalls] as Record<string, unknown>)[name]).toBe('function');
    }
  });

  it('has no measurement in the setup group, though the raw proxy would schedule any name', () => {
    expect(calls.setup).not.toHaveProperty('runPgbench');
    expect(calls.measure).not.toHaveProperty('configurePostgres');
    // Why the groups are picked from the proxy: the proxy itself makes a function of any property read.
    expect(typeof proxyActivities<HostActivities>({ startToCloseTimeout: '1 minute' }).runPgbench).toBe('function');
  });

  it('puts every activity in one group at most, so none runs under two policies', () => {
    const all = Object.values(HOST_CALL_GROUPS).flat();
    expect(all.filter((name, i) => all.indexOf(name) !== i)).toEqual([]);
  });
});
