/**
 * The history of runs: every run's result.json, indexed by preset and environment, kept in the results store
 * (a folder locally, S3 on AWS) under a reserved prefix, so any ResultsStore carries it.
 *
 * What makes two runs comparable (the environment key) is where they ran and what they ran: host shape,
 * PostgreSQL major version, memory limit, and the workload. Storage limits (IOPS, throughput) are recorded but
 * are not part of the key: they belong to the system under test, and a slower volume is exactly the regression
 * a nightly run must catch, not a new environment.
 */
import path from 'node:path';
// A short stable digest of the workload, not a name: the key of earlier runs' history entries, kept as it was.
import { fnv32RunTag as workloadTag } from '../common/core/ids';
import { providerOf } from '../common/providers/registry';
import type { ExperimentResult } from '../common/results/result';
import type { VerdictKind } from '../common/results/verdict';
import type { TpsUnit } from './regression-verdict';
import { runFolderName, type ReservedRun, type ResultsStore } from '../lib/results-store';

/** The pseudo run under which the index lives in a results store: reserved, so no workflow id can name it. */
export const HISTORY_RUN: ReservedRun = { reserved: '_history' };
export const HISTORY_SCHEMA_VERSION = 1;

/** Where a run ran and what it ran: every field that must match for two runs to be compared, plus the limits. */
export interface RunEnvironment {
  provider: string;
  /** Host shape: the instance type on AWS; CPUs and memory of this machine locally. */
  instanceType: string | null;
  cpus: number | null;
  memoryGiB: number | null;
  postgresMajor: number | null;
  memoryLimitMiB: number;
  workload: { scale: number; clients: number; threads: number; durationSeconds: number; warmupSeconds: number; script: string };
  /** Recorded, not part of the key: see the module comment. */
  storage: Record<string, { kind: string; emulated: boolean; iops: number | null; throughputMiBps: number | null }>;
}

export interface HistoryClass {
  kind: string;
  emulated: boolean;
  iops: number | null;
  throughputMiBps: number | null;
  medianTps: number | null;
  units: TpsUnit[];
}

/** The verdict as the index keeps it (the full one is in the run's result.json). */
export interface HistoryVerdict {
  verdict: VerdictKind;
  summary: string;
  baselineRunIds: string[];
  pinned: boolean;
  effects: Record<string, number | null>;
}

/** A drill a run ran (spec.durability.drills) as the index keeps it: how it ended and its headline figures. */
export interface HistoryDrill {
  kind: string;
  status: string;
  figures: Record<string, number | string | null>;
}

export interface HistoryEntry {
  schemaVersion: typeof HISTORY_SCHEMA_VERSION;
  runId: string;
  preset: string;
  status: ExperimentResult['status'];
  startedAt: string;
  finishedAt: string;
  environment: RunEnvironment;
  envKey: string;
  classes: Record<string, HistoryClass>;
  verdict?: HistoryVerdict;
  /** The drills the run ran, if any (absent from entries indexed before drills were kept). */
  drills?: HistoryDrill[];
}

export interface PinFile {
  preset: string;
  envKey: string;
  runIds: string[];
  pinnedAt: string;
}

/** The preset a run is indexed under; runs from a hand-written spec go under "custom". */
export function presetKey(result: Pick<ExperimentResult, 'preset'>): string {
  return result.preset ?? 'custom';
}

export function environmentOf(result: ExperimentResult): RunEnvironment {
  const { spec } = result;
  // Hosts elsewhere (EC2 instances) are their instance type: the control worker's own machine says nothing about them.
  const instances = !providerOf(spec.provider).onThisMachine;
  const major = result.postgresVersion ? Number.parseInt(result.postgresVersion, 10) : NaN;
  return {
    provider: spec.provider,
    instanceType: instances ? spec.host.instanceType : null,
    cpus: instances ? null : result.host.cpus,
    memoryGiB: instances ? null : Math.round(result.host.memoryMiB / 1024),
    postgresMajor: Number.isFinite(major) ? major : null,
    memoryLimitMiB: spec.host.memoryLimitMiB,
    workload: {
      scale: spec.data.scale,
      clients: spec.workload.clients,
      threads: spec.workload.threads,
      durationSeconds: spec.workload.durationSeconds,
      warmupSeconds: spec.workload.warmupSeconds,
      script: workloadTag(spec.workload.script),
    },
    storage: Object.fromEntries(
      Object.entries(result.classes).map(([name, c]) => [
        name,
        { kind: c.kind, emulated: c.emulated, iops: c.limits.iops, throughputMiBps: c.limits.throughputMiBps },
      ]),
    ),
  };
}

/**
 * The environment key: readable parts (host shape, PostgreSQL major, memory limit) and a short hash of the
 * workload. Storage limits are deliberately left out.
 */
export function environmentKey(env: RunEnvironment): string {
  const shape = env.instanceType ?? `${env.cpus}cpu-${env.memoryGiB}gib`;
  const workload = workloadTag(JSON.stringify(env.workload));
  return `${env.provider}-${shape}-pg${env.postgresMajor ?? 'unknown'}-mem${env.memoryLimitMiB}-w${workload}`;
}

/** The index entry of a run: its environment and, per class, each cluster's TPS run. */
export function historyEntry(result: ExperimentResult): HistoryEntry {
  const environment = environmentOf(result);
  const drills = (Array.isArray(result.drills) ? (result.drills as HistoryDrill[]) : []).map((d) => ({ kind: d.kind, status: d.status, figures: d.figures ?? {} }));
  const classes: Record<string, HistoryClass> = {};
  for (const [name, c] of Object.entries(result.classes)) {
    classes[name] = {
      kind: c.kind,
      emulated: c.emulated,
      iops: c.limits.iops,
      throughputMiBps: c.limits.throughputMiBps,
      medianTps: c.medianTps,
      units: c.clusters
        .filter((cl) => cl.status === 'ok' && cl.tpsRun)
        .map((cl) => ({ runId: result.runId, hostId: cl.hostId, tps: cl.tpsRun!.tps, tpsSeries: cl.tpsRun!.tpsSeries })),
    };
  }
  return {
    schemaVersion: HISTORY_SCHEMA_VERSION,
    runId: result.runId,
    preset: presetKey(result),
    status: result.status,
    startedAt: result.startedAt,
    finishedAt: result.finishedAt,
    environment,
    envKey: environmentKey(environment),
    classes,
    ...(drills.length ? { drills } : {}),
  };
}

/** One drill in a line: its kind, outcome and the counts that matter (what `storage-lab history` prints). */
export function drillLine(d: HistoryDrill): string {
  const f = d.figures;
  const num = (k: string) => (typeof f[k] === 'number' ? (f[k] as number) : null);
  const outcome = d.status === 'passed' ? 'PASS' : d.status.toUpperCase();
  const parts: string[] = [];
  if (num('splitBrainCommits') !== null) parts.push(`${num('splitBrainCommits')} split-brain`);
  if (num('lostCommits') !== null) parts.push(`${num('lostCommits')} lost`);
  const rto = num('rtoSecondsMedian') ?? num('rtoSeconds');
  if (rto !== null) parts.push(`RTO ${rto} s`);
  if (num('amcheckFailedRounds') !== null) parts.push(`pg_amcheck not clean ${num('amcheckFailedRounds')}`);
  if (num('recoverySecondsMedian') !== null) parts.push(`recovery ${num('recoverySecondsMedian')} s`);
  if (num('rounds') !== null) parts.push(`${num('rounds')} rounds`);
  return `${d.kind.replace(/-drill$/, '')} ${outcome}${parts.length ? ` (${parts.join(', ')})` : ''}`;
}

/** The index over a results store. */
export class RunHistory {
  constructor(private readonly store: ResultsStore) {}

  /** Adds or replaces a run's entry. */
  async record(entry: HistoryEntry): Promise<void> {
    await this.store.put(HISTORY_RUN, entryKey(entry.preset, entry.runId), JSON.stringify(entry, null, 2));
  }

  async entry(preset: string, runId: string): Promise<HistoryEntry | null> {
    const text = await this.store.get(HISTORY_RUN, entryKey(preset, runId));
    return text ? (JSON.parse(text) as HistoryEntry) : null;
  }

  /** Entry file names of every run, as `<preset>__<run>.json` (one flat folder: S3 lists no sub-folders). */
  private async entryFiles(): Promise<string[]> {
    const keys = await this.store.list(HISTORY_RUN, ENTRIES);
    return keys.map((k) => path.posix.basename(k)).filter((name) => name.endsWith('.json') && name.includes(SEPARATOR));
  }

  /** Presets with any run indexed. */
  async presets(): Promise<string[]> {
    return [...new Set((await this.entryFiles()).map((name) => name.slice(0, name.indexOf(SEPARATOR))))].sort();
  }

  /** Every run of a preset, oldest first. */
  async entries(preset: string): Promise<HistoryEntry[]> {
    const entries: HistoryEntry[] = [];
    for (const name of (await this.entryFiles()).filter((n) => n.startsWith(`${preset}${SEPARATOR}`))) {
      const text = await this.store.get(HISTORY_RUN, `${ENTRIES}/${name}`);
      if (text) entries.push(JSON.parse(text) as HistoryEntry);
    }
    return entries.sort((a, b) => a.finishedAt.localeCompare(b.finishedAt) || a.runId.localeCompare(b.runId));
  }

  /** The pinned baseline of a preset and environment, if any. */
  async pins(preset: string, envKey: string): Promise<PinFile | null> {
    const text = await this.store.get(HISTORY_RUN, pinKey(preset, envKey));
    return text ? (JSON.parse(text) as PinFile) : null;
  }

  async setPins(preset: string, envKey: string, runIds: string[], now = new Date()): Promise<PinFile> {
    const pins: PinFile = { preset, envKey, runIds: [...new Set(runIds)], pinnedAt: now.toISOString() };
    await this.store.put(HISTORY_RUN, pinKey(preset, envKey), JSON.stringify(pins, null, 2));
    return pins;
  }

  /**
   * The runs a candidate is compared with: the pinned ones when a baseline is pinned for its preset and
   * environment; otherwise the latest completed runs of the same environment that finished before it, leaving
   * out runs that were themselves judged regressed (a bad night must not become the norm).
   */
  async baseline(candidate: HistoryEntry, maxRuns: number, minEffect: number): Promise<{ entries: HistoryEntry[]; pinned: boolean }> {
    const all = (await this.entries(candidate.preset)).filter(
      (e) => e.envKey === candidate.envKey && e.runId !== candidate.runId && e.status === 'completed',
    );
    const pins = await this.pins(candidate.preset, candidate.envKey);
    if (pins && pins.runIds.length > 0) return { entries: all.filter((e) => pins.runIds.includes(e.runId)), pinned: true };
    const eligible = all.filter((e) => e.finishedAt <= candidate.finishedAt && !droppedBeyond(e, minEffect));
    return { entries: eligible.slice(-maxRuns), pinned: false };
  }
}

/**
 * Whether a run is no baseline: judged regressed, or judged inconclusive with a drop of at least `minEffect` in some
 * class (a real drop the test could not yet confirm; in the baseline it would lower the bar for the next night).
 */
export function droppedBeyond(e: HistoryEntry, minEffect: number): boolean {
  if (!e.verdict) return false;
  if (e.verdict.verdict === 'regressed') return true;
  return e.verdict.verdict === 'inconclusive' && Object.values(e.verdict.effects).some((effect) => effect !== null && effect <= -minEffect);
}

/** Folder of the entries, and what separates the preset from the run in their names (presets never hold it). */
const ENTRIES = 'runs';
const SEPARATOR = '__';

function entryKey(preset: string, runId: string): string {
  return `${ENTRIES}/${preset}${SEPARATOR}${runFolderName(runId)}.json`;
}

function pinKey(preset: string, envKey: string): string {
  return `pins/${preset}${SEPARATOR}${envKey}.json`;
}
