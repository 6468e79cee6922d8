/**
 * Every registered provider (common/providers/registry.ts) held to what its module declares, and the lab to reading
 * it: the spec takes exactly the registered names; every storage kind has a provider; a spec on a provider is refused
 * a kind it does not host, a backup store its hosts cannot share, the partition drill where it cannot cut, and a
 * missing section, each naming the field; its presets run on it; its timings reach the bounds; a provider with a cost
 * model prices its runs and one without prices nothing. A new provider is tested here by being registered.
 */
import { clusterBounds } from '../../common/input/bounds';
import { estimateCost } from '../../common/input/cost';
import { LOCAL_PRESETS, PRESET_NAMES } from '../../common/input/presets';
import { resolveSpec } from '../../common/input/resolve';
import { hostDeadAfterSeconds, STORAGE_KINDS } from '../../common/input/spec';
import { isInstanceId, PROVIDER_NAMES, PROVIDERS, providersHosting, sectionsOf } from '../../common/providers/registry';
import { problemsOf } from '../helpers/spec-problems';

type Input = Record<string, unknown>;
/** A complete input on a provider: its own first preset, or the ci preset moved onto it. */
const inputOn = (p: (typeof PROVIDERS)[number]): Input => (p.presets ? { preset: Object.keys(p.presets)[0] } : { preset: 'ci', provider: p.name });
const STORES: Record<string, Input> = { folder: { kind: 'folder' }, s3: { kind: 's3', bucket: 'lab-backups' } };
const at = (problems: { path: string; message: string }[], path: string) => problems.filter((p) => p.path === path);

describe('the provider registry', () => {
  it('names each provider once, and the spec takes exactly those names', () => {
    expect(new Set(PROVIDER_NAMES).size).toBe(PROVIDERS.length);
    for (const name of PROVIDER_NAMES) expect(at(problemsOf(resolveSpec, { preset: 'ci', provider: name }), 'provider')).toEqual([]);
    const [refused] = at(problemsOf(resolveSpec, { preset: 'ci', provider: 'nowhere' }), 'provider');
    for (const name of PROVIDER_NAMES) expect(refused.message).toContain(`"${name}"`);
  });

  it('hosts every storage kind on some provider, and no provider a kind the spec does not know', () => {
    for (const kind of STORAGE_KINDS) expect(providersHosting(kind)).not.toEqual([]);
    for (const p of PROVIDERS) for (const kind of p.storageKinds) expect(STORAGE_KINDS).toContain(kind);
  });

  it("takes each preset's name once: this machine's and every provider's", () => {
    const names = [...Object.keys(LOCAL_PRESETS), ...PROVIDERS.flatMap((p) => Object.keys(p.presets ?? {}))];
    expect(new Set(names).size).toBe(names.length);
    expect([...PRESET_NAMES].sort()).toEqual([...names].sort());
  });
});

describe.each(PROVIDERS.map((p) => [p.name, p] as const))('provider %s', (name, p) => {
  it('runs its own presets', () => {
    for (const preset of Object.keys(p.presets ?? {})) expect(resolveSpec({ preset }).provider).toBe(name);
  });

  it('refuses a class of a kind it does not host, naming the field and the providers that host it', () => {
    for (const kind of STORAGE_KINDS.filter((k) => !p.storageKinds.includes(k))) {
      const [refused] = at(problemsOf(resolveSpec, { ...inputOn(p), storageClasses: { other: { kind } } }), 'storageClasses.other.kind');
      expect(refused.message).toContain(`cannot run on provider "${name}"`);
      for (const host of providersHosting(kind)) expect(refused.message).toContain(`"${host}"`);
    }
    for (const kind of p.storageKinds) expect(at(problemsOf(resolveSpec, { ...inputOn(p), storageClasses: { other: { kind } } }), 'storageClasses.other.kind')).toEqual([]);
  });

  it('refuses a backup store its hosts cannot share, and takes one they can', () => {
    for (const [kind, store] of Object.entries(STORES)) {
      const problems = at(problemsOf(resolveSpec, { ...inputOn(p), durability: { enabled: true, backupStore: store } }), 'durability.backupStore.kind');
      if ((p.backupStores as readonly string[]).includes(kind)) expect(problems).toEqual([]);
      else expect(problems).toEqual([{ path: 'durability.backupStore.kind', message: expect.stringContaining(`use kind ${p.backupStores.map((k) => `"${k}"`).join(' or ')}`) }]);
    }
  });

  it('refuses the partition drill unless it can cut the network between its hosts', () => {
    const cut = at(problemsOf(resolveSpec, { ...inputOn(p), durability: { drills: ['partition'] } }), 'durability.drills').filter((q) => q.message.includes('nftables'));
    expect(cut).toHaveLength(p.cutsNetwork ? 0 : 1);
  });

  it('refuses a spec on it without its section, naming the section', () => {
    const base = resolveSpec(inputOn(p));
    if (!p.section) {
      expect(sectionsOf(base)).toEqual({});
      return;
    }
    expect(p.sectionIn(base)).toBeDefined();
    expect(sectionsOf(base)).toEqual({ [name]: p.sectionIn(base) });
    expect(at(problemsOf(resolveSpec, { ...inputOn(p), [name]: null }), name)).toEqual([{ path: name, message: expect.stringContaining(`provider "${name}"`) }]);
  });

  it("gives a host its agent's start bound and the dead-host default", () => {
    const spec = resolveSpec(inputOn(p));
    expect(clusterBounds(spec).agentStartSeconds).toBe(p.agentStartSeconds);
    expect(hostDeadAfterSeconds(spec)).toBe(p.deadAfterSeconds);
    expect(hostDeadAfterSeconds({ ...spec, host: { ...spec.host, deadAfterSeconds: 42 } })).toBe(42);
  });

  it('prices its runs with its cost model, or prices nothing without one', () => {
    const spec = resolveSpec(inputOn(p));
    if (p.cost) expect(estimateCost(spec).lines.length).toBeGreaterThan(0);
    else expect(() => estimateCost(spec)).toThrow(/prices nothing/);
  });

  it('asks nothing of a spec on another provider', () => {
    for (const other of PROVIDERS.filter((q) => q.name !== name)) expect(p.runProblemsOf(resolveSpec(inputOn(other)))).toEqual([]);
  });
});

describe('a host record of a carried continuation', () => {
  it("holds an instance id only of a form a registered provider gives", () => {
    expect(isInstanceId('i-0123456789abcdef0')).toBe(true);
    for (const id of ['', 'i-', 'i-XYZ', '../etc', 'i-0123456789abcdef0\n']) expect(isInstanceId(id)).toBe(false);
    expect(PROVIDERS.some((p) => p.instanceIdPattern !== null)).toBe(true);
  });
});
