/**
 * storage-lab history: the runs of a preset with their environment, median TPS per class and verdict, from the
 * results store (the lab's folder, or S3 with STORAGE_LAB_AWS=1). `history pin RUN...` fixes the baseline of a
 * preset and environment, `history unpin RUN...` releases it.
 */
import { drillLine, HISTORY_RUN, historyEntry, RunHistory, type HistoryEntry } from '../../analysis/history';
import { runSpread } from '../../analysis/regression-verdict';
import type { ResultsStore } from '../../lib/results-store';
import type { ExperimentResult } from '../../common/results/result';
import { median } from '../../common/core/stats';
import { UserError } from '../errors';
import { printTable } from '../table';
import { resultsStore } from './report';

export interface HistoryFlags {
  preset?: string;
  env?: string;
  limit?: string;
  json?: boolean;
}

export async function historyCommand(flags: HistoryFlags, given?: ResultsStore): Promise<HistoryEntry[]> {
  const store = given ?? (await resultsStore());
  const history = new RunHistory(store);
  const presets = flags.preset ? [flags.preset] : await history.presets();
  const limit = flags.limit === undefined ? 20 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UserError(`--limit ${flags.limit}: must be a whole number >= 1`);
  const shown: HistoryEntry[] = [];
  for (const preset of presets) {
    const entries = (await history.entries(preset)).filter((e) => !flags.env || e.envKey === flags.env).slice(-limit);
    shown.push(...entries);
    if (flags.json) continue;
    if (entries.length === 0) {
      console.log(`no runs of preset ${preset}${flags.env ? ` in environment ${flags.env}` : ''} in ${store.location(HISTORY_RUN)}`);
      continue;
    }
    const byEnv = new Map<string, HistoryEntry[]>();
    for (const e of entries) byEnv.set(e.envKey, [...(byEnv.get(e.envKey) ?? []), e]);
    for (const [envKey, runs] of byEnv) {
      const pins = new Set((await history.pins(preset, envKey))?.runIds ?? []);
      const env = runs[0].environment;
      console.log(
        `\npreset ${preset}, environment ${envKey}: ${env.instanceType ?? `${env.cpus} CPUs, ${env.memoryGiB} GiB`}, PostgreSQL ${env.postgresMajor ?? '?'}, memory limit ${env.memoryLimitMiB} MiB, ${env.workload.clients} clients, ${env.workload.durationSeconds} s${pins.size ? `; pinned baseline: ${[...pins].join(', ')}` : ''}`,
      );
      // Drills appear as a column only where some run of the group ran one (durability.drills).
      const drills = runs.some((e) => e.drills?.length);
      printTable(
        ['FINISHED', 'RUN', 'STATUS', 'MEDIAN TPS', 'VERDICT', ...(drills ? ['DRILLS'] : [])],
        runs.map((e) => [
          e.finishedAt.replace(/\.\d+Z$/, 'Z'),
          `${e.runId}${pins.has(e.runId) ? ' (pinned)' : ''}`,
          e.status,
          Object.entries(e.classes)
            .map(([name, c]) => `${name} ${c.medianTps === null ? '–' : Math.round(c.medianTps)}${c.iops ? ` @${c.iops} IOPS` : ''}`)
            .join(', '),
          e.verdict ? verdictCell(e) : '–',
          ...(drills ? [e.drills?.map(drillLine).join('; ') || '–'] : []),
        ]),
        '  ',
      );
      for (const line of spreadLines(runs)) console.log(`  ${line}`);
    }
  }
  if (flags.json) console.log(JSON.stringify(shown, null, 2));
  return shown;
}

/**
 * Per class, the run-to-run spread of the runs a baseline may draw on (completed, not judged regressed): what a
 * change must beat to be called a regression.
 */
function spreadLines(runs: HistoryEntry[]): string[] {
  const eligible = runs.filter((e) => e.status === 'completed' && e.verdict?.verdict !== 'regressed');
  const names = [...new Set(eligible.flatMap((e) => Object.keys(e.classes)))].sort();
  return names.map((name) => {
    const medians = eligible
      .flatMap((e) => e.classes[name]?.units ?? [])
      .map((u) => median(u.tpsSeries))
      .filter((m): m is number => m !== null && m > 0);
    const spread = runSpread(medians);
    if (!spread) return `${name}: no completed run measured TPS`;
    const round = (v: number) => Math.round(v).toLocaleString('en-US');
    return `${name}: run-to-run CV ${spread.cv === null ? '–' : `${(spread.cv * 100).toFixed(1)} %`} over ${medians.length} run${medians.length === 1 ? '' : 's'} not judged regressed (median per-second TPS of each: ${round(spread.min)}-${round(spread.max)})`;
  });
}

function verdictCell(e: HistoryEntry): string {
  const effects = Object.entries(e.verdict!.effects)
    .filter(([, v]) => v !== null)
    .map(([name, v]) => `${name} ${(v! * 100).toFixed(1)} %`);
  return `${e.verdict!.verdict}${effects.length ? ` (${effects.join(', ')})` : ''}`;
}

/** The index entries of runs, from their result.json; all must share one preset and environment. */
async function entriesOf(store: ResultsStore, runIds: string[]): Promise<HistoryEntry[]> {
  const entries: HistoryEntry[] = [];
  for (const runId of runIds) {
    const text = await store.get(runId, 'result.json');
    if (!text) throw new UserError(`run ${runId}: no result.json in ${store.location(runId)}`);
    entries.push(historyEntry(JSON.parse(text) as ExperimentResult));
  }
  const groups = new Set(entries.map((e) => `${e.preset} ${e.envKey}`));
  if (groups.size > 1)
    throw new UserError(
      `the runs belong to different presets or environments (${[...groups].join('; ')}); pin the runs of one at a time`,
    );
  return entries;
}

export async function pinCommand(runIds: string[], given?: ResultsStore): Promise<string[]> {
  const store = given ?? (await resultsStore());
  const entries = await entriesOf(store, runIds);
  const notCompleted = entries.filter((e) => e.status !== 'completed');
  if (notCompleted.length)
    throw new UserError(`only completed runs can be a baseline: ${notCompleted.map((e) => `${e.runId} (${e.status})`).join(', ')}`);
  const { preset, envKey } = entries[0];
  const history = new RunHistory(store);
  const current = (await history.pins(preset, envKey))?.runIds ?? [];
  const pins = await history.setPins(preset, envKey, [...current, ...runIds]);
  console.log(`baseline of preset ${preset}, environment ${envKey} pinned to: ${pins.runIds.join(', ')}`);
  return pins.runIds;
}

export async function unpinCommand(runIds: string[], given?: ResultsStore): Promise<string[]> {
  const store = given ?? (await resultsStore());
  const entries = await entriesOf(store, runIds);
  const { preset, envKey } = entries[0];
  const history = new RunHistory(store);
  const current = (await history.pins(preset, envKey))?.runIds ?? [];
  const pins = await history.setPins(preset, envKey, current.filter((r) => !runIds.includes(r)));
  console.log(
    pins.runIds.length
      ? `baseline of preset ${preset}, environment ${envKey} pinned to: ${pins.runIds.join(', ')}`
      : `baseline of preset ${preset}, environment ${envKey} unpinned: the latest comparable runs are used`,
  );
  return pins.runIds;
}
