import type { RunProgress } from '../../common/core/messages';
import { childrenPercent, clusterPercent, progressMarkdown, runPercent } from '../../common/results/progress';
import { describeStep, stepLinePercent } from '../../client/progress-view';

const at = '2026-11-30T00:00:00.000Z';

describe('run progress', () => {
  it('weights steps: a cluster half-way through its load is between a quarter and a third done', () => {
    expect(clusterPercent({ step: 'provision', percent: 0 })).toBe(0);
    const halfLoaded = clusterPercent({ step: 'load', percent: 50 });
    expect(halfLoaded).toBeGreaterThan(25);
    expect(halfLoaded).toBeLessThan(100 / 3);
    expect(clusterPercent({ step: 'tps', percent: 0 })).toBeGreaterThan(halfLoaded);
    expect(clusterPercent({ step: 'save results' })).toBeGreaterThan(clusterPercent({ step: 'backlog', percent: 50 }));
    expect(clusterPercent({ step: 'done' })).toBe(100);
    expect(clusterPercent({ step: 'failed' })).toBe(100);
  });

  it('counts clusters not started yet as 0, and children by their state', () => {
    expect(runPercent([{ step: 'done' }], 2)).toBe(50);
    expect(runPercent([], 0)).toBe(0);
    const child = (state: 'waiting' | 'running' | 'done' | 'failed') => ({ workflowId: state, label: state, state });
    expect(childrenPercent([child('done'), child('failed'), child('running'), child('waiting')])).toBe(50);
    expect(childrenPercent([])).toBe(0);
  });

  it('renders short lines for the UI: a host with the steps before it, children with their state', () => {
    const progress: RunProgress = {
      runId: 'r',
      stage: 'running clusters',
      percent: 41.5,
      clusters: {
        'x-gp3-0': {
          hostId: 'x-gp3-0',
          step: 'tps',
          steps: ['provision', 'configure', 'load', 'warmup', 'tps'].map((step) => ({ step, at })),
          at,
        },
      },
      children: [{ workflowId: 'r/local-disk-0', label: 'x-local-disk-0', state: 'done' }],
      failures: ['x-local-disk-0 tps attempt 1: agent killed'],
    };
    expect(progressMarkdown('Experiment r', progress)).toBe(
      [
        '**Experiment r**: running clusters · 41.5 %',
        '',
        '- **x-gp3-0** tps · after provision, configure, load, warmup',
        '- **x-local-disk-0** done · `r/local-disk-0`',
        '- **failures:** x-local-disk-0 tps attempt 1: agent killed',
      ].join('\n'),
    );
  });

  it('describes a running step from its heartbeat: percent, ETA only when known, headline figures first', () => {
    expect(describeStep({ hostId: 'h', step: 'tps', percent: 48, etaSeconds: 31, detail: { second: 29, failed: 0, latencyMs: 32.44, tps: 1970 }, at })).toBe(
      'tps 48% eta 31s tps 1,970 latencyMs 32.4 second 29 failed 0',
    );
    expect(describeStep({ hostId: 'h', step: 'vacuum', percent: 40, detail: { step: 'VACUUM (VERBOSE)', scanEtaSeconds: 12 }, at })).toBe(
      'vacuum 40% step VACUUM (VERBOSE) scanEtaSeconds 12',
    );
  });

  it("gives a drill host's --watch line its drill's percentage, not 0 %; a cluster step its weighted place", () => {
    // A restore drill at its verify step (62.5 % through its plan): the host's steps are the drill's, not a cluster's.
    const drillHost = { hostId: 'drill-restore', step: 'verify', steps: [{ step: 'fetch', at }, { step: 'verify', at }], at };
    const viewed = { hostPercent: { 'drill-restore': 62.5 } };
    expect(stepLinePercent(viewed, drillHost, drillHost.steps[1], true)).toBe(62.5);
    // An earlier step of a drill: nothing recorded its percentage then, so the line shows none (not 0 %).
    expect(stepLinePercent(viewed, drillHost, drillHost.steps[0], false)).toBeNull();
    // Cluster steps keep their weighted place: the latest with its own progress, an earlier one at its start.
    const cluster = { hostId: 'c1', step: 'load', percent: 50, steps: [{ step: 'provision', at }, { step: 'load', at }], at };
    expect(stepLinePercent({ hostPercent: {} }, cluster, cluster.steps[1], true)).toBe(clusterPercent({ step: 'load', percent: 50 }));
    expect(stepLinePercent({ hostPercent: {} }, cluster, cluster.steps[0], false)).toBe(0);
    expect(stepLinePercent({ hostPercent: {} }, cluster, cluster.steps[1], false)).toBe(clusterPercent({ step: 'load', percent: 0 }));
  });
});
