/** The sweeper's judgement: what goes, what stays, and that a running, unexpired run's host always stays. */
import { planSweep, runsToCheck, type SweepCandidate } from '../../common/core/sweep';

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
