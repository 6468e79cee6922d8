/**
 * What a provider is: where a run's hosts come from (this machine, EC2), declared in one module. Its workflow-safe
 * half (common/providers/<name>.ts, built with defineProvider) holds what the spec, the plan, the bounds, the cost
 * and the messages ask of it: the storage kinds and backup stores its hosts can have, its spec section, its host
 * timings, its own id of a host, its cost model and its presets. Its other half (infra/providers/<name>/) makes,
 * lists (for the sweeper), inspects and removes the hosts and checks a spec against its account (the preflight).
 * The registry (registry.ts) lists the providers; the spec, workflows and the CLI read it and never name a provider.
 * Pure and workflow-safe.
 */
import type { z } from 'zod';
import type { SpecProblem } from '../core/errors';
import type { BackupStoreKind } from '../input/backup-store';
import type { StorageClassSpec, StorageKind } from '../input/storage';

/** One priced item of a cost figure. `usd` is null when its price is missing from the spec. */
export interface CostLine {
  item: string;
  quantity: number;
  unit: string;
  unitPriceUsd: number | null;
  usd: number | null;
}

/** What a run's hosts are priced from. */
export interface PricedRun<F> {
  /** The run's section of the provider (its prices), if the spec has one. */
  section: F | undefined;
  instanceType: string;
  storageClasses: Readonly<Record<string, StorageClassSpec>>;
  /** Each host and the hours it lives (estimated, or measured). */
  hosts: { className: string; hours: number }[];
  /** Bytes one host's volume must hold (data, indexes, WAL, what the phases write). */
  volumeBytes: number;
  /** The run keeps a base backup per cluster in an S3 store. */
  s3Backups: boolean;
  /** The data set the run publishes in an S3 store (issue 31): its size and the days it is kept; null without one. */
  dataSetInS3?: { gib: number; keepDays: number } | null;
}

/** What a provider's hosts cost: the lines of a run's figure, a drill host's hour, the run's own ceiling. */
export interface CostModel<F> {
  /** The heading of the report's cost section: whose prices they are. */
  title: string;
  /** Where the prices come from and what they leave out, a note of every figure. */
  priceNote: string;
  /** The priced lines of the run's hosts; a price the section lacks is a line without one and a field to add. */
  price(run: PricedRun<F>): { lines: CostLine[]; missingPrices: string[] };
  /** One host-hour of a drill host (the instance and its root volume); a missing price names the field to add. */
  hostHour(section: F | undefined, instanceType: string): { instanceUsd: number; usd: number } | { missingPrice: string };
  /** The run's own cost ceiling, set in its section, and that field; null: the spec sets none. */
  ceiling(section: F | undefined): { usd: number; field: string } | null;
}

/** A provider's section of a spec (spec.<name>), the type its schema gives; none when it has no section. */
export type SectionOf<S> = S extends z.ZodType ? z.output<S> : never;

/** The typed declaration a provider module writes (defineProvider turns it into a registry entry). */
export interface ProviderDeclaration<N extends string, S extends z.ZodType | null> {
  /**
   * Its value of spec.provider, its key of the control worker's providers and its section's key in a spec. Stored
   * in specs, results and host records, recorded in histories: never renamed.
   */
  name: N;
  /** Where its hosts run, as a message says it after "hosts" or "run": "here", "on AWS". */
  where: string;
  /**
   * Its hosts are processes on this machine (the control worker's): the preflight checks this machine for them, they
   * run its binaries and tools, and a result's machine is theirs. Otherwise each host is an instance of the spec's
   * host.instanceType, with tools of its own.
   */
  onThisMachine: boolean;
  /** The storage kinds its hosts can have. */
  storageKinds: readonly StorageKind[];
  /** The backup stores its hosts can share. */
  backupStores: readonly BackupStoreKind[];
  /** Its own id of a host (a host record's instanceId), where it has one: the form a carried record must have. */
  instanceIdPattern: RegExp | null;
  /** How long a new host's agent may take to come up (a cloud boot installs packages; a local host starts a process). */
  agentStartSeconds: number;
  /** How long a host may stay silent before it is dead, when the spec leaves host.deadAfterSeconds out. */
  deadAfterSeconds: number;
  /**
   * The PostgreSQL major of its hosts' client tools (pg_basebackup, pg_rewind, pgBackRest) when a newer server runs
   * with them; null: each host installs the tools of its server's major.
   */
  clientToolsMajor: number | null;
  /** It can cut the network between its hosts (the partition drill). */
  cutsNetwork: boolean;
  /** Its section of a spec (spec.<name>): zod, with its defaults and bounds; null: it has none. */
  section: S;
  /** The refusal of a spec on it without its section, naming what the section holds (only with a section). */
  sectionMissing?: string;
  /** Fields of its section that a real run needs (a dry run needs none); each problem names the field and the fix. */
  runProblems?(section: SectionOf<S> | undefined): SpecProblem[];
  /** The GiB of a data volume of a class it hosts, where it sizes volumes its own way; null: the spec's or the need. */
  volumeGiB?(cls: StorageClassSpec, volumeBytes: number): number | null;
  /** What its hosts cost (result.cost, the dry run's estimate, the cost ceilings); none: nothing to price. */
  cost?: CostModel<SectionOf<S>>;
  /** Presets of runs on it, beside the presets of this machine (common/input/presets.ts). */
  presets?: Readonly<Record<string, Record<string, unknown>>>;
  /** How a control worker turns it on, for the refusal of a run that asks for it where it is off; null: always on. */
  setup: string | null;
}

/** A registry entry: the declaration, and its section read out of a spec by its name. */
export type Provider<N extends string = string, S extends z.ZodType | null = z.ZodType | null> = Readonly<ProviderDeclaration<N, S>> & {
  /** The spec's section of this provider, if it has one. */
  sectionIn(spec: object): SectionOf<S> | undefined;
  /** The fields a real run on it still needs (none for a spec on another provider). */
  runProblemsOf(spec: { provider: string }): SpecProblem[];
};

/** A registry entry from a provider module's declaration. */
export function defineProvider<const N extends string, S extends z.ZodType | null>(d: ProviderDeclaration<N, S>): Provider<N, S> {
  // The spec's schema holds each provider's section under its name (registry.ts providerSectionsShape).
  const sectionIn = (spec: object) => (spec as Record<string, unknown>)[d.name] as SectionOf<S> | undefined;
  return {
    ...d,
    sectionIn,
    runProblemsOf: (spec) => (spec.provider === d.name && d.runProblems ? d.runProblems(sectionIn(spec)) : []),
  };
}

/** A priced line (null when there is nothing of it), rounded as every figure is. */
export function costLine(item: string, quantity: number, unit: string, unitPriceUsd: number | null): CostLine | null {
  if (quantity <= 0) return null;
  return { item, quantity: roundTo(quantity, 3), unit, unitPriceUsd, usd: unitPriceUsd === null ? null : roundTo(quantity * unitPriceUsd, 2) };
}

/** `v` to `digits` decimals. */
export function roundTo(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** Names as a message lists choices: `"a"`, `"a" or "b"`, `"a", "b" or "c"`. */
export function quoted(names: readonly string[]): string {
  const q = names.map((n) => `"${n}"`);
  return q.length <= 1 ? (q[0] ?? '') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}
