/**
 * Every provider, and what the rest of the lab asks of them all: the spec's provider field and the providers'
 * sections, the storage kinds and backup stores a spec may ask of its provider, a host's timings, the presets of
 * runs on each, a host request's sections. Adding a provider is a module (kit.ts says what it declares), a line
 * here, its infra half (infra/providers/<name>/, a HostProvider) and the control worker's line that makes it.
 * Workflows, common/ and the CLI know providers only through this file. Pure and workflow-safe.
 */
import { z } from 'zod';
import type { BackupStoreKind } from '../input/backup-store';
import type { StorageKind } from '../input/storage';
import { awsProvider } from './aws';
import { quoted, type Provider } from './kit';
import { localProvider } from './local';

/** The providers; the first is the embedded default. */
export const PROVIDERS = [localProvider, awsProvider] as const;

type Registered = (typeof PROVIDERS)[number];
/** A provider's name: a spec's `provider`, a host record's, a sweep candidate's. */
export type ProviderName = Registered['name'];
/** Every provider's name, in registry order (a zod enum's values). */
export const PROVIDER_NAMES = PROVIDERS.map((p) => p.name) as [ProviderName, ...ProviderName[]];

/** The spec's `provider` field (the experiment's and every drill's). */
export const ProviderField = z.enum(PROVIDER_NAMES, { error: `must be ${quoted(PROVIDER_NAMES)}` });

/** A provider as the lab reads any of them, without its section's type. */
export type AnyProvider = Provider<ProviderName, z.ZodType | null>;

/** The provider of that name. */
export function providerOf(name: ProviderName): AnyProvider {
  const p = PROVIDERS.find((q) => q.name === name);
  // The spec's schema only lets registered names through; a name from anywhere else is a bug.
  if (!p) throw new Error(`no provider "${String(name)}" is registered (common/providers/registry.ts)`);
  return p;
}

type Sectioned = Extract<Registered, { section: z.ZodType }>;
/** The providers' sections a spec may hold, each under its provider's name. */
export type ProviderSections = { [P in Sectioned as P['name']]?: z.output<P['section']> };

/**
 * The providers' sections of a spec's schema (the experiment's, a drill's), each optional under its provider's name:
 * a spec on another provider has none, and one on this provider without it is refused by sectionProblem.
 */
export const providerSectionsShape = Object.fromEntries(PROVIDERS.flatMap((p) => (p.section ? [[p.name, p.section.optional()]] : []))) as {
  [P in Sectioned as P['name']]: z.ZodOptional<P['section']>;
};

/** The sections a spec holds, each under its provider's name (a host request, a drill's input carry them on). */
export function sectionsOf(spec: object): ProviderSections {
  return Object.fromEntries(PROVIDERS.flatMap((p) => (p.section && p.sectionIn(spec) !== undefined ? [[p.name, p.sectionIn(spec)]] : []))) as ProviderSections;
}

/** The presets of runs on each provider (beside this machine's, common/input/presets.ts). */
export const PROVIDER_PRESETS: Readonly<Record<string, Record<string, unknown>>> = Object.assign({}, ...PROVIDERS.map((p) => p.presets ?? {}));

/** The providers whose hosts can have a storage kind. */
export function providersHosting(kind: StorageKind): ProviderName[] {
  return PROVIDERS.filter((p) => (p.storageKinds as readonly StorageKind[]).includes(kind)).map((p) => p.name);
}

/**
 * Why a class of this kind cannot run on the provider; null when it can. With `suggest`, the message names the
 * providers that host the kind.
 */
export function storageKindProblem(provider: ProviderName, kind: StorageKind, suggest: boolean): string | null {
  const p = providerOf(provider);
  if (p.storageKinds.includes(kind)) return null;
  const hosting = providersHosting(kind);
  return `"${kind}" cannot run on provider "${p.name}"; use ${p.storageKinds.join(' or ')}${suggest && hosting.length ? `, or set provider to ${quoted(hosting)}` : ''}`;
}

/** The refusal of a spec on a provider with a section of its own but without it; null when it has it (or needs none). */
export function sectionProblem(spec: { provider: ProviderName }): { path: string; message: string } | null {
  const p = providerOf(spec.provider);
  if (!p.section || p.sectionIn(spec) !== undefined) return null;
  return { path: p.name, message: p.sectionMissing ?? `provider "${p.name}" needs its section "${p.name}"` };
}

/** Why the provider's hosts cannot share a backup store of this kind; null when they can. */
export function backupStoreKindProblem(provider: ProviderName, kind: BackupStoreKind): string | null {
  const p = providerOf(provider);
  if (p.backupStores.includes(kind)) return null;
  return `hosts ${p.where} cannot share a ${kind}; use kind ${quoted(p.backupStores)}`;
}

/**
 * The client tools a provider's hosts have, as the version rules take them (postgres-versions.ts): the major of
 * tools older than the server may be (null: they match the server), and where else to run, in words ("on AWS").
 */
export function clientToolsOf(provider: ProviderName): { clientToolsMajor: number | null; elsewhere: string | null } {
  const matching = PROVIDERS.filter((p) => p.clientToolsMajor === null).map((p) => p.where);
  return { clientToolsMajor: providerOf(provider).clientToolsMajor, elsewhere: matching.length ? matching.join(' or ') : null };
}

/** The providers that can cut the network between their hosts (the partition drill), quoted for a message. */
export function networkCutters(): string {
  return quoted(PROVIDERS.filter((p) => p.cutsNetwork).map((p) => p.name));
}

/** The pattern of a host record's instanceId: any registered provider's own id of a host. */
export function isInstanceId(id: string): boolean {
  return PROVIDERS.some((p) => p.instanceIdPattern?.test(id) ?? false);
}
