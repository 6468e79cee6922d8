/**
 * The history budget, unit-sized (bench/history-budget.ts runs seed-full): the real workflows on the suite's dev
 * server with fake activities. A run fifty times as long makes the same history (progress is read on demand, not
 * signalled), and the failover drill continues as new every ROUNDS_PER_EXECUTION rounds, so no execution grows with
 * the number of rounds. Either regression fails here.
 */
import { HISTORY_EVENT_LIMIT, scaled, worstByType } from '../../bench/history-budget';
import { HistoryHarness, type StepDurations } from '../../bench/history-harness';
import { ROUNDS_PER_EXECUTION } from '../../workflows/failover-continuation';
import { serverAddress, uniqueId } from '../helpers/temporal';

const CI_DURATIONS: StepDurations = { load: 120, backup: 20, warmup: 5, tps: 30, phase: 30, restore: 20, writes: 10 };

describe('history budget (unit-sized)', () => {
  let harness: HistoryHarness;
  beforeAll(async () => {
    harness = await HistoryHarness.start(serverAddress());
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('a run fifty times as long makes the same history, far under the limit', async () => {
    const input = { preset: 'ci', durability: { drills: ['restore', 'failover'] } };
    const short = worstByType(await harness.run('experimentWorkflow', input, CI_DURATIONS, uniqueId('budget')));
    const long = worstByType(await harness.run('experimentWorkflow', input, scaled(CI_DURATIONS, 50), uniqueId('budget-50x')));
    expect([...short.byType.keys()].sort()).toEqual(['clusterWorkflow', 'experimentWorkflow', 'failoverDrillWorkflow', 'restoreDrillWorkflow']);
    const max = (list: { events: number }[]) => Math.max(...list.map((f) => f.events));
    // A few events of slack: how the server batches completions into workflow tasks varies from run to run.
    const grew = [...short.byType].filter(([type, runs]) => Math.abs(max(long.byType.get(type)!) - max(runs)) > 8);
    expect(grew.map(([type, runs]) => `${type}: ${max(runs)} events, ${max(long.byType.get(type)!)} when 50 times as long`)).toEqual([]);
    expect(long.worst.events).toBeLessThan(HISTORY_EVENT_LIMIT / 10);
    // Progress is read on demand: no workflow receives a signal, whose events would grow with a run's length.
    expect([...short.byType.values(), ...long.byType.values()].flat().filter((f) => f.signals > 0)).toEqual([]);
  });

  it('the failover drill continues as new, so each execution holds at most ROUNDS_PER_EXECUTION rounds', async () => {
    const rounds = ROUNDS_PER_EXECUTION + 2;
    const figures = await harness.run('failoverDrillWorkflow', { preset: 'ci', rounds }, CI_DURATIONS, uniqueId('budget-failover'));
    expect(figures.map((f) => f.execution)).toEqual([1, 2]);
    // The second execution (2 rounds) is much smaller than the first (10): events grow with rounds per execution only.
    expect(figures[1].events).toBeLessThan(figures[0].events / 2);
    expect(figures[0].events).toBeLessThan(HISTORY_EVENT_LIMIT / 5);
  });

  it('the partition drill continues as new too, each execution holding at most ROUNDS_PER_EXECUTION rounds', async () => {
    const rounds = ROUNDS_PER_EXECUTION + 2;
    const input = { preset: 'ci', rounds, writer: { cutAfterSeconds: 0.5 }, partition: { detectionSeconds: 0 } };
    const figures = await harness.run('partitionDrillWorkflow', input, CI_DURATIONS, uniqueId('budget-partition'));
    expect(figures.map((f) => f.execution)).toEqual([1, 2]);
    expect(figures[1].events).toBeLessThan(figures[0].events / 2);
    expect(figures[0].events).toBeLessThan(HISTORY_EVENT_LIMIT / 5);
  });
});
