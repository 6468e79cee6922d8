/**
 * The history budget of seed-full with both drills: the real workflows on Temporal's time-skipping test server,
 * fake host activities taking seed-full's durations in server time (bench/history-harness.ts). Prints each workflow
 * type's largest execution (events, history bytes) and, last, `history-budget: max N events (WORKFLOW), limit 10240`.
 * Temporal warns at 10,240 events and terminates a workflow at 51,200.
 *   node dist/bench/history-budget.js [--rounds 50]
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { HistoryHarness, type HistoryFigures, type StepDurations } from './history-harness';

/** Temporal's warning threshold: every workflow of a run must stay under it. */
export const HISTORY_EVENT_LIMIT = 10_240;

/**
 * seed-full's steps (scale 33,000 = 3.3 billion rows, 482 GiB, on gp3 at 125 MiB/s, the slowest class): the load
 * about 5 h with its primary key and VACUUM ANALYZE, a base backup and a restore of the data set about an hour each,
 * and every phase as long as the longest at seed-full's sizes (10 GB made, then measured: about 2,000 s).
 */
export const SEED_FULL_DURATIONS: StepDurations = { load: 18_000, backup: 4_000, warmup: 60, tps: 300, phase: 2_000, restore: 4_000, writes: 60 };

export const SEED_FULL_WITH_DRILLS = {
  preset: 'seed-full',
  durability: { enabled: true, drills: ['restore', 'failover'], backupStore: { kind: 's3', bucket: 'history-budget' } },
};

/** Every duration times `factor`: the same run, as if its storage were that much slower. */
export function scaled(d: StepDurations, factor: number): StepDurations {
  return Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v * factor])) as unknown as StepDurations;
}

/** The largest execution of each workflow type, and the largest of all. */
export function worstByType(figures: HistoryFigures[]): { byType: Map<string, HistoryFigures[]>; worst: HistoryFigures } {
  const byType = new Map<string, HistoryFigures[]>();
  for (const f of figures) byType.set(f.workflowType, [...(byType.get(f.workflowType) ?? []), f]);
  return { byType, worst: figures.reduce((a, b) => (b.events > a.events ? b : a)) };
}

async function main(): Promise<void> {
  const flag = process.argv.indexOf('--rounds');
  const rounds = flag > 0 ? Number(process.argv[flag + 1]) : 50;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const harness = await HistoryHarness.start();
  const started = Date.now();
  try {
    const figures: HistoryFigures[] = [
      ...(await harness.run('experimentWorkflow', SEED_FULL_WITH_DRILLS, SEED_FULL_DURATIONS, 'seed-full')),
      // The longest drill the spec allows: the failover drill continues as new, so each execution stays small.
      ...(await harness.run('failoverDrillWorkflow', { preset: 'ci', rounds }, SEED_FULL_DURATIONS, `failover-${rounds}-rounds`)),
    ];
    // The same experiment ten times as long (a slower volume): a history that grew with time would show it here.
    const longer = worstByType(await harness.run('experimentWorkflow', SEED_FULL_WITH_DRILLS, scaled(SEED_FULL_DURATIONS, 10), 'seed-full-10x'));
    console.log(`seed-full with restore and failover drills, plus a ${rounds}-round failover drill; ${((Date.now() - started) / 1000).toFixed(0)} s wall time`);
    console.log(`${'workflow type'.padEnd(24)} ${'executions'.padStart(10)} ${'max events'.padStart(10)} ${'max bytes'.padStart(10)} ${'10x longer'.padStart(10)}`);
    const { byType, worst } = worstByType(figures);
    for (const [type, list] of byType) {
      const tenfold = longer.byType.get(type);
      console.log(
        `${type.padEnd(24)} ${String(list.length).padStart(10)} ${String(Math.max(...list.map((f) => f.events))).padStart(10)} ${String(Math.max(...list.map((f) => f.bytes))).padStart(10)} ${String(tenfold ? Math.max(...tenfold.map((f) => f.events)) : '-').padStart(10)}`,
      );
    }
    console.log(`signals received: ${figures.reduce((n, f) => n + f.signals, 0)} (progress is read on demand)`);
    console.log(`history-budget: max ${worst.events} events (${worst.workflowType}), limit ${HISTORY_EVENT_LIMIT}`);
    if (worst.events >= HISTORY_EVENT_LIMIT) process.exitCode = 1;
  } finally {
    await harness.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
