import { buildInput, parseSet, validateInput } from '../../client/spec-input';

describe('CLI spec input', () => {
  it('parses --set values as JSON where they can be', () => {
    expect(parseSet('workload.clients=32')).toEqual({ path: ['workload', 'clients'], value: 32 });
    expect(parseSet('storageClasses.gp3=null')).toEqual({ path: ['storageClasses', 'gp3'], value: null });
    expect(parseSet('name=my-run')).toEqual({ path: ['name'], value: 'my-run' });
    expect(() => parseSet('workload.clients')).toThrow(/expected path=value/);
  });

  it('keeps several --set on one branch, and null removes a preset key', () => {
    const input = buildInput({
      preset: 'ci',
      set: ['workload.clients=4', 'workload.threads=1', 'storageClasses.gp3=null', 'compare=null'],
    });
    expect(input).toEqual({ preset: 'ci', workload: { clients: 4, threads: 1 }, storageClasses: { gp3: null }, compare: null });
    const spec = validateInput(input);
    expect(Object.keys(spec.storageClasses)).toEqual(['local-disk']);
    expect(spec.compare).toBeUndefined();
    expect(spec.workload).toMatchObject({ clients: 4, threads: 1 });
  });

  it('turns a bad spec into a user error that names the field', () => {
    expect(() => validateInput(buildInput({ preset: 'ci', set: ['workload.clients=0'] }))).toThrow(/workload\.clients/);
  });
});
