/** The sweeper's judgement: what goes, what stays, and that a running, unexpired run's host always stays. */
import { OWNERLESS_GRACE_MS, planSweep, runsToCheck, type SweepCandidate } from '../../common/core/sweep';

const now = '2026-03-01T12:00:00.000Z';
const host = (hostId: string, runId: string, expiresAt: string | null, extra: Partial<SweepCandidate> = {}): SweepCandidate => ({
  provider: 'aws',
  hostId,
  runId,
  expiresAt,
  resources: [`i-${hostId}`],
  ...extra,
});

describe('planSweep', () => {
  const later = '2026-03-01T18:00:00.000Z';
  const earlier = '2026-03-01T06:00:00.000Z';
  const candidates = [
    host('alive', 'run-a', later),
    host('alive-expired', 'run-a', earlier),
    host('closed', 'run-c', later),
    host('unknown', 'run-u', later),
    host('unlabelled', '', null, { provider: 'local' }),
    host('foreign', 'run-x', later, { foreign: true }),
    host('foreign-expired', 'run-x', earlier, { foreign: true }),
    host('unchecked', 'run-n', later),
  ];

  it('looks up only the runs that decide something', () => {
    expect(runsToCheck(candidates, now)).toEqual(['run-a', 'run-c', 'run-n', 'run-u']);
  });

  it('removes closed, unknown, unlabelled and expired hosts, and keeps the rest with a reason', () => {
    const plan = planSweep(candidates, { 'run-a': 'running', 'run-c': 'closed', 'run-u': 'unknown' }, now);
    const removed = Object.fromEntries(plan.remove.map((d) => [d.hostId, d.reason]));
    const kept = Object.fromEntries(plan.keep.map((d) => [d.hostId, d.reason]));
    expect(Object.keys(removed).sort()).toEqual(['alive-expired', 'closed', 'foreign-expired', 'unknown', 'unlabelled']);
    expect(Object.keys(kept).sort()).toEqual(['alive', 'foreign', 'unchecked']);
    expect(removed['alive-expired']).toBe(`expired at ${earlier}`);
    expect(removed.closed).toContain('run-c has closed');
    expect(removed.unknown).toContain('unknown to this Temporal namespace');
    expect(kept.alive).toContain('run-a is running');
    expect(kept.foreign).toContain('another lab');
    expect(kept.unchecked).toContain('not checked');
  });

  it('never removes a host whose run is running and not expired, whatever else is true of it', () => {
    for (const expiresAt of [null, later, 'not a date']) {
      const plan = planSweep([host('h', 'run-a', expiresAt)], { 'run-a': 'running' }, now);
      expect(plan.remove).toEqual([]);
    }
  });
});

describe('planSweep of folders without an owner record', () => {
  const minutesAgo = (m: number) => new Date(Date.parse(now) - m * 60_000).toISOString();
  const ownerless = (hostId: string, madeAt: string, oldestOpenRunStartedAt: string | null): SweepCandidate => ({
    kind: hostId.startsWith('backups/') ? 'backup-store' : 'host',
    provider: 'local',
    hostId,
    runId: '',
    expiresAt: null,
    resources: [`/lab/${hostId}`],
    ownerless: { madeAt, oldestOpenRunStartedAt },
  });

  it('removes one only when no run still open could have made it: older than the grace and than every open run, and names it', () => {
    const plan = planSweep(
      [
        ownerless('old-none-open', minutesAgo(60), null),
        ownerless('backups/old-store', minutesAgo(60), minutesAgo(30)),
        ownerless('young', minutesAgo(OWNERLESS_GRACE_MS / 60_000 - 1), null),
        ownerless('a-run-as-old', minutesAgo(60), minutesAgo(61)),
        ownerless('a-run-same-time', minutesAgo(60), minutesAgo(60)),
      ],
      {},
      now,
    );
    const removed = Object.fromEntries(plan.remove.map((d) => [d.hostId, d.reason]));
    const kept = Object.fromEntries(plan.keep.map((d) => [d.hostId, d.reason]));
    expect(Object.keys(removed).sort()).toEqual(['backups/old-store', 'old-none-open']);
    expect(removed['old-none-open']).toBe(`/lab/old-none-open has no owner record (made ${minutesAgo(60)}): older than every open run (none open), so no live run made it`);
    expect(removed['backups/old-store']).toContain(`the oldest started ${minutesAgo(30)}`);
    expect(kept.young).toMatch(/younger than 10 minutes, a run may still be claiming it/);
    expect(kept['a-run-as-old']).toContain(`a run open since ${minutesAgo(61)} could have made it`);
    expect(kept['a-run-same-time']).toContain('could have made it');
    // Nobody's folder needs no run looked up.
    expect(runsToCheck([ownerless('x', minutesAgo(60), null)], now)).toEqual([]);
  });
});

describe('planSweep of backup stores', () => {
  const store = (hostId: string, runId: string, keep: boolean): SweepCandidate => ({
    kind: 'backup-store',
    provider: 'local',
    hostId,
    runId,
    keep,
    expiresAt: null,
    resources: [`/backups/${hostId}`],
  });

  it('removes a closed run\'s store, keeps a running run\'s, and never sweeps one kept on purpose', () => {
    const candidates = [store('closed', 'run-c', false), store('kept', 'run-c', true), store('live', 'run-a', false)];
    expect(runsToCheck(candidates, now)).toEqual(['run-a', 'run-c']);
    const plan = planSweep(candidates, { 'run-a': 'running', 'run-c': 'closed' }, now);
    expect(plan.remove.map((d) => d.hostId)).toEqual(['closed']);
    expect(plan.keep.map((d) => [d.hostId, d.reason])).toEqual([
      ['kept', 'kept on purpose by its run'],
      ['live', 'run run-a is running'],
    ]);
  });
});
