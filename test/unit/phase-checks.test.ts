/**
 * Every registered phase (common/phases/registry.ts) held to what its module promises: its self-checks pass on its
 * plausible result and each fails on the result its module breaks for it (a check that cannot fail is true by
 * construction); every check it can carry has such a break; its report section, medians, progress step, host
 * activity and watchdog step are there. A new phase is tested here by being registered.
 */
import { createPhaseActivities } from '../../activities/host/phases';
import { stepOf } from '../../activities/host/watchdog';
import type { HostDeps } from '../../activities/host/deps';
import { PHASES, phaseChecks, phaseMedians, phaseReports } from '../../common/phases/registry';
import { CLUSTER_STEPS } from '../../common/results/progress';
import { PRESETS } from '../../common/input/presets';
import { resolveSpec } from '../../common/input/resolve';

const HOST = 'h-gp3-0';
const byName = (name: string, result: unknown) => ({ [name]: result });

describe.each(PHASES.map((p) => [p.name, p] as const))('phase %s', (name, phase) => {
  const healthy = () => structuredClone(phase.selfTest.healthy) as never;
  const checksOf = (result: unknown) => phase.checks(HOST, byName(name, result));

  it('passes every check it carries on its plausible result, and carries at least one', () => {
    const checks = checksOf(healthy());
    expect(checks.length).toBeGreaterThan(0);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.every((c) => c.scope === HOST)).toBe(true);
  });

  it.each(Object.keys(phase.selfTest.breaks))('fails "%s" on the result its module breaks for it, and nothing else', (check) => {
    const result = healthy();
    phase.selfTest.breaks[check](result);
    const failed = checksOf(result).filter((c) => !c.ok);
    expect(failed.map((c) => c.name)).toEqual([check]);
  });

  it('has a break for every check it can carry', () => {
    const names = new Set(checksOf(healthy()).map((c) => c.name));
    for (const check of Object.keys(phase.selfTest.breaks)) {
      const result = healthy();
      phase.selfTest.breaks[check](result);
      for (const c of checksOf(result)) names.add(c.name);
    }
    expect([...names].filter((n) => !(n in phase.selfTest.breaks))).toEqual([]);
  });

  it('renders its report section (a heading and a row per host) and medians over the clusters that measured it', () => {
    const lines = phaseReports([
      { hostId: HOST, phases: byName(name, healthy()) },
      { hostId: 'h-local-disk-0', phases: {} },
    ]);
    expect(lines.filter((l) => l.startsWith('## '))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith(`| ${HOST} |`))).toHaveLength(1);
    expect(lines.some((l) => l.startsWith('| h-local-disk-0 |'))).toBe(false);
    expect(phaseMedians([byName(name, healthy()), {}])).toHaveProperty(name);
    expect(phaseChecks(HOST, {}).length).toBe(0);
  });

  it('is a step of the cluster, the watchdog names its activity by it, and the host provides its activity', () => {
    expect(CLUSTER_STEPS.map((s) => s.name)).toContain(name);
    expect(stepOf(phase.activity, { hostId: HOST })).toBe(name);
    expect(Object.keys(createPhaseActivities({} as HostDeps))).toContain(phase.activity);
  });

  it('has a step with a bound from its own inputs in every preset that runs it', () => {
    for (const preset of Object.keys(PRESETS)) {
      const spec = resolveSpec({ preset });
      const step = phase.step(spec.phases, { scale: spec.data.scale, workload: spec.workload, sharedBuffersMiB: spec.postgres.sharedBuffersMiB, storageMiBps: 125 }, HOST);
      if (!phase.enabledIn(spec.phases)) expect(step).toBeNull();
      else expect(step).toMatchObject({ activity: phase.activity, input: { hostId: HOST }, boundSeconds: expect.any(Number) });
    }
  });
});

describe('the phase registry', () => {
  it('names each phase and each activity once, and the host provides exactly the registered activities', () => {
    expect(new Set(PHASES.map((p) => p.name)).size).toBe(PHASES.length);
    expect(new Set(PHASES.map((p) => p.activity)).size).toBe(PHASES.length);
    expect(Object.keys(createPhaseActivities({} as HostDeps)).sort()).toEqual(PHASES.map((p) => p.activity).sort());
  });

  it('puts the phases after the TPS run, in plan order, before the results are saved', () => {
    const steps = CLUSTER_STEPS.map((s) => s.name);
    const at = PHASES.map((p) => steps.indexOf(p.name));
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(Math.min(...at)).toBe(steps.indexOf('tps') + 1);
    expect(Math.max(...at)).toBe(steps.indexOf('save results') - 1);
  });
});
