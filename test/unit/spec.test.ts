import { PRESET_NAMES } from '../../common/input/presets';
import { classLimits, classWorkload, InvalidSpecError, mergeSpec } from '../../common/input/spec';
import { resolveSpec, revalidateSpec } from '../../common/input/resolve';
import { planRun } from '../../common/input/plan';

function problemsOf(input: unknown): { path: string; message: string }[] {
  try {
    resolveSpec(input);
  } catch (err) {
    if (err instanceof InvalidSpecError) return err.problems;
    throw err;
  }
  throw new Error('expected the spec to be rejected');
}

describe('experiment spec', () => {
  it.each(PRESET_NAMES)('preset %s resolves to a valid spec', (preset) => {
    const spec = resolveSpec({ preset });
    expect(spec.preset).toBe(preset);
    expect(Object.keys(spec.storageClasses).length).toBeGreaterThanOrEqual(2);
    expect(spec.compare).toBeDefined();
  });

  it('defaults to local-quick, the embedded default', () => {
    const spec = resolveSpec({});
    expect(spec.preset).toBe('local-quick');
    expect(spec.provider).toBe('local');
    // The data set is several times the host's memory limit, so reads reach the device.
    expect((spec.data.scale * 100_000 * 146) / (spec.host.memoryLimitMiB * 2 ** 20)).toBeGreaterThanOrEqual(4);
  });

  it('merges overrides field by field and lets null remove a class', () => {
    const spec = resolveSpec({ preset: 'ci', workload: { clients: 4 }, storageClasses: { gp3: null }, compare: null });
    expect(spec.workload.clients).toBe(4);
    expect(spec.workload.threads).toBe(2);
    expect(Object.keys(spec.storageClasses)).toEqual(['local-disk']);
    expect(mergeSpec({ a: [1, 2] }, { a: [3] })).toEqual({ a: [3] });
  });

  it.each([
    [{ preset: 'nope' }, 'preset', 'unknown preset'],
    [{ preset: 'ci', storageClasses: { gp3: { kind: 'floppy' } } }, 'storageClasses.gp3.kind', 'must be one of'],
    [{ preset: 'ci', compare: { baseline: 'gp3', candidate: 'nvme' } }, 'compare.candidate', 'unknown storage class'],
    [{ preset: 'ci', workload: { clients: 0 } }, 'workload.clients', 'at least 1'],
    [{ preset: 'ci', data: { scale: 0 } }, 'data.scale', 'at least 1'],
    [{ preset: 'ci', data: { scale: -3 } }, 'data.scale', 'at least 1'],
    [{ preset: 'ci', host: { memoryLimitMiB: 80 } }, 'host.memoryLimitMiB', 'below shared_buffers'],
    [{ preset: 'ci', workload: { threads: 9 } }, 'workload.threads', 'threads <= clients'],
    [{ preset: 'ci', workload: { clinets: 3 } }, 'workload.clinets', 'unknown field'],
    [{ preset: 'ci', provider: 'gcp' }, 'provider', 'must be "local" or "aws"'],
    [{ preset: 'ci', storageClasses: { nvme: { kind: 'instance-store' } } }, 'storageClasses.nvme.kind', 'cannot run on provider "local"'],
    [{ preset: 'ci', workload: { durationSeconds: 'ten' } }, 'workload.durationSeconds', 'whole number'],
    [{ preset: 'ci', storageClasses: { 'Fast Disk': { kind: 'local-disk' } } }, 'storageClasses.Fast Disk', 'lower-case'],
    [{ preset: 'ci', storageClasses: { 'local-disk': { kind: 'local-disk', iops: 3000 } } }, 'storageClasses.local-disk.iops', 'no provisioned IOPS'],
    [{ preset: 'ci', storageClasses: { 'local-disk': { kind: 'local-disk', iopsBudget: 'shared' } } }, 'storageClasses.local-disk.iopsBudget', 'only an emulated-ebs class'],
    [{ preset: 'ci', storageClasses: { gp3: { kind: 'emulated-ebs', iopsBudget: 'pooled' } } }, 'storageClasses.gp3.iopsBudget', 'must be "shared"'],
    [{ preset: 'seed-full', aws: null }, 'aws', 'needs an aws section'],
    [{ preset: 'ci', workload: { script: '' } }, 'workload.script', 'must not be empty'],
  ])('rejects %j naming %s', (input, path, fragment) => {
    const problems = problemsOf(input);
    const match = problems.find((p) => p.path === path);
    expect(match).toBeDefined();
    expect(match!.message).toContain(fragment);
  });

  it('reports every problem at once', () => {
    const problems = problemsOf({ preset: 'ci', workload: { clients: 0 }, data: { scale: 0 } });
    expect(problems.map((p) => p.path)).toEqual(expect.arrayContaining(['workload.clients', 'data.scale']));
  });

  it('rejects a non-object input with a hint', () => {
    expect(problemsOf('local-quick')[0].message).toContain('{"preset":"local-quick"}');
  });
});

describe("an emulated EBS class's IOPS budget", () => {
  it('is one budget for reads and writes; the kernel\'s separate limits are refused; other kinds have none', () => {
    const spec = resolveSpec({ preset: 'local-quick' });
    expect(spec.storageClasses.gp3.iopsBudget).toBe('shared');
    expect(spec.storageClasses.nvme.iopsBudget).toBeUndefined();
    expect(classLimits(spec.storageClasses.gp3)?.iopsBudget).toBe('shared');
    expect(() => resolveSpec({ preset: 'local-quick', storageClasses: { gp3: { iopsBudget: 'separate' } } })).toThrow(
      /storageClasses\.gp3\.iopsBudget: a modelled volume has one budget for reads and writes/,
    );
    expect(revalidateSpec(spec)).toEqual(spec);
  });

  it('models gp3 or io2 for an emulated-ebs class, and m6id\'s NVMe for an nvme class, which takes no IOPS', () => {
    expect(() => resolveSpec({ preset: 'local-quick', storageClasses: { gp3: { volumeType: 'io2', iops: 16000 } } })).not.toThrow();
    expect(() => resolveSpec({ preset: 'local-quick', storageClasses: { nvme: { volumeType: 'io2' } } })).toThrow(/storageClasses\.nvme\.volumeType: only an emulated-ebs class/);
    expect(() => resolveSpec({ preset: 'local-quick', storageClasses: { nvme: { iops: 3000 } } })).toThrow(/storageClasses\.nvme\.iops: a nvme class has no provisioned IOPS/);
    expect(() => resolveSpec({ preset: 'local-quick', provider: 'aws' })).toThrow(/"nvme" cannot run on provider "aws"/);
  });

  it("is named in the dry run's plan by its model and budget (an nvme class has no IOPS to print as undefined)", () => {
    const volumes = planRun(resolveSpec({ preset: 'local-quick' }), 'plan-test').hosts.map((h) => [h.className, h.volume]);
    expect(volumes).toEqual([
      ['gp3', expect.stringMatching(/GiB modelled volume: gp3 \(EBS gp3 at 3000 IOPS and 125 MiB\/s\), 3,000 IOPS and 125 MiB\/s, reads and writes together$/)],
      ['nvme', expect.stringMatching(/GiB modelled volume: nvme \(m6id\.4xlarge's instance-store NVMe SSD \(1 x 950 GB\)\), 268,336 read \/ 134,168 write IOPS/)],
    ]);
    expect(volumes.join(' ')).not.toMatch(/undefined|cgroup/);
  });

  it('stays as it was in a spec resolved before the choice (a recorded history): separate limits, unchanged by revalidation', () => {
    const legacy = resolveSpec({ preset: 'local-quick' });
    delete legacy.storageClasses.gp3.iopsBudget;
    expect(revalidateSpec(legacy)).toEqual(legacy);
    expect(classLimits(legacy.storageClasses.gp3)?.iopsBudget).toBe('separate');
  });
});

describe("a class's own client count (the predict-matrix preset)", () => {
  test('a class runs its own clients, with the threads capped at them; the others run workload.clients', () => {
    const spec = resolveSpec({ preset: 'predict-matrix' });
    expect(classWorkload(spec, 'nvme-c8')).toMatchObject({ clients: 8, threads: 2 });
    expect(classWorkload(spec, 'nvme-c64')).toMatchObject({ clients: 64, threads: 2 });
    const one = resolveSpec({ preset: 'ci', storageClasses: { gp3: { kind: 'emulated-ebs', clients: 1 } } });
    expect(classWorkload(one, 'gp3')).toMatchObject({ clients: 1, threads: 1 });
    expect(classWorkload(one, 'local-disk').clients).toBe(one.workload.clients);
  });

  test('more clients than workload.clients (which sizes max_connections and the memory checks) is refused at the field', () => {
    expect(problemsOf({ preset: 'ci', storageClasses: { gp3: { kind: 'emulated-ebs', clients: 9 } } })).toEqual([
      expect.objectContaining({ path: 'storageClasses.gp3.clients', message: expect.stringMatching(/more than workload.clients \(8\).*raise workload.clients to 9/) }),
    ]);
  });
});
