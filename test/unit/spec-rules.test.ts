import { resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { PRESET_NAMES } from '../../common/input/presets';
import { HOST_MEMORY, memoryProblems, perClientMiB } from '../../common/input/rules';
import { volumeBytes } from '../../common/input/spec';
import { resolveSpec } from '../../common/input/resolve';
import { problemsOf } from '../helpers/spec-problems';

const ci = (over: Record<string, unknown>) => ({ preset: 'ci', ...over });

describe('sizes that cannot fit', () => {
  it('every preset fits its own hosts', () => {
    for (const preset of PRESET_NAMES) expect(problemsOf(resolveSpec, { preset })).toEqual([]);
  });

  it('refuses 2000 clients on the ci preset (384 MiB hosts), naming the estimate and the most that fit', () => {
    const [problem] = problemsOf(resolveSpec, ci({ workload: { clients: 2000 } }));
    expect(problem.path).toBe('workload.clients');
    expect(problem.message).toContain('2000 clients');
    expect(problem.message).toContain('1.66 MiB per connection');
    expect(problem.message).toMatch(/lower workload\.clients to at most (\d+) or raise host\.memoryLimitMiB to at least \d+/);
    const most = Number(/at most (\d+)/.exec(problem.message)![1]);
    // The limit is exact: the most that fit pass, one more does not.
    expect(problemsOf(resolveSpec, ci({ workload: { clients: most } }))).toEqual([]);
    expect(problemsOf(resolveSpec, ci({ workload: { clients: most + 1 } })).map((p) => p.path)).toEqual(['workload.clients']);
  });

  it('names the memory limit when shared_buffers alone does not fit', () => {
    const [problem] = problemsOf(resolveSpec, ci({ postgres: { sharedBuffersMiB: 300 } }));
    expect(problem.path).toBe('host.memoryLimitMiB');
    expect(problem.message).toContain(`plus ${HOST_MEMORY.baseMiB} MiB for the server's own processes and the host agent`);
  });

  it("checks a class's own memory limit, naming it", () => {
    const [problem] = problemsOf(resolveSpec, ci({ storageClasses: { gp3: { memoryLimitMiB: 192 } }, workload: { clients: 64, threads: 2 } }));
    expect(problem.path).toBe('workload.clients');
    expect(problem.message).toContain('but storageClasses.gp3.memoryLimitMiB is 192');
    expect(problemsOf(resolveSpec, ci({ storageClasses: { gp3: { memoryLimitMiB: 100 } } }))[0].path).toBe('storageClasses.gp3.memoryLimitMiB');
  });

  it('charges page tables for shared_buffers to every client', () => {
    expect(perClientMiB(0)).toBeCloseTo(1.6);
    expect(perClientMiB(16_384)).toBeCloseTo(1.6 + 32);
    const n = { limitMiB: 4096, sharedBuffersMiB: 2048, labConnections: 2, limitPath: 'host.memoryLimitMiB', clientsPath: 'workload.clients' };
    // 2048 + 128 + 402 x (1.6 + 4) = 4427 MiB > 4096 MiB; without the page tables it would fit.
    expect(memoryProblems({ ...n, clients: 400 })).toHaveLength(1);
    expect(memoryProblems({ ...n, clients: 300 })).toEqual([]);
  });

  it('refuses clients above a max_connections the spec sets, and counts the reserved slots', () => {
    expect(problemsOf(resolveSpec, ci({ workload: { clients: 64, threads: 2 }, postgres: { settings: { max_connections: 50 } } }))).toEqual([
      { path: 'postgres.settings.max_connections', message: expect.stringContaining('64 clients + 2 connections of the lab + 3 reserved for superusers = 69') },
    ]);
    expect(problemsOf(resolveSpec, ci({ workload: { clients: 64, threads: 2 }, postgres: { settings: { max_connections: '69' } } }))).toEqual([]);
    const reserved = problemsOf(resolveSpec, ci({ workload: { clients: 64, threads: 2 }, postgres: { settings: { max_connections: 69, superuser_reserved_connections: 10 } } }));
    expect(reserved[0].message).toContain('+ 10 reserved');
    // Without an override the lab gives clients + 20: always enough.
    expect(problemsOf(resolveSpec, ci({ host: { memoryLimitMiB: 1024 }, workload: { clients: 200, threads: 2 } }))).toEqual([]);
  });

  it('refuses a volume smaller than the data, WAL and phases, and accepts one that holds them', () => {
    const spec = resolveSpec(ci({}));
    const gib = volumeBytes(spec) / 2 ** 30;
    const [problem] = problemsOf(resolveSpec, ci({ storageClasses: { gp3: { sizeGiB: gib * 0.9 } } }));
    expect(problem.path).toBe('storageClasses.gp3.sizeGiB');
    expect(problem.message).toContain(`raise it to at least ${Math.ceil(gib)}`);
    expect(problemsOf(resolveSpec, ci({ storageClasses: { gp3: { sizeGiB: Math.ceil(gib) } } }))).toEqual([]);
  });

  it('refuses a read-only workload when the backlog phase is on, and only then', () => {
    const readOnly = { workload: { script: 'SELECT abalance FROM pgbench_accounts WHERE aid = 1;' } };
    expect(problemsOf(resolveSpec, ci(readOnly))).toEqual([
      { path: 'workload.script', message: expect.stringContaining('cannot fill the backlog phase with WAL; add a data-modifying statement or set phases.backlog.enabled to false') },
    ]);
    expect(problemsOf(resolveSpec, ci({ ...readOnly, phases: { backlog: { enabled: false } } }))).toEqual([]);
  });

  it('refuses a \\shell script with the field and the fix', () => {
    expect(problemsOf(resolveSpec, ci({ workload: { script: '\\shell touch /tmp/x\nUPDATE pgbench_accounts SET abalance = 0 WHERE aid = 1;' } }))).toEqual([
      { path: 'workload.script', message: expect.stringContaining('\\shell is refused: it runs a shell command as the OS user that runs pgbench; remove it') },
    ]);
  });

  it("checks the drills' hosts too", () => {
    // max_connections 100 on every drill host: 256 pgbench clients were accepted before and could never connect.
    const restore = problemsOf(resolveRestoreDrill, { preset: 'ci', host: { memoryLimitMiB: 4096 }, workload: { clients: 256 } });
    expect(restore).toEqual([{ path: 'workload.clients', message: expect.stringContaining("more than the lab's max_connections of 100; lower workload.clients to at most 94") }]);
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', host: { memoryLimitMiB: 4096 }, workload: { clients: 94 } })).toEqual([]);
    expect(problemsOf(resolveFailoverDrill, { preset: 'ci', writer: { connections: 64 } }).map((p) => p.path)).toEqual(['writer.connections']);
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', storageClass: { kind: 'local-disk', sizeGiB: 1 } }).map((p) => p.path)).toEqual(['storageClass.sizeGiB']);
  });
});
