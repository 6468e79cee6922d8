import type { RunProgress } from '../../common/messages';
import { clusterPercent, progressMarkdown, runPercent } from '../../common/progress';

const at = '2026-11-30T00:00:00.000Z';

describe('run progress', () => {
  it('weights phases: a cluster half-way through its load is between a quarter and a third done', () => {
    expect(clusterPercent({ hostId: 'h', phase: 'provision', percent: 0, at })).toBe(0);
    const halfLoaded = clusterPercent({ hostId: 'h', phase: 'load', percent: 50, at });
    expect(halfLoaded).toBeGreaterThan(25);
    expect(halfLoaded).toBeLessThan(100 / 3);
    expect(clusterPercent({ hostId: 'h', phase: 'tps', percent: 0, at })).toBeGreaterThan(halfLoaded);
    expect(clusterPercent({ hostId: 'h', phase: 'done', at })).toBe(100);
    expect(clusterPercent({ hostId: 'h', phase: 'failed', at })).toBe(100);
  });

  it('counts clusters not started yet as 0', () => {
    expect(runPercent([{ hostId: 'a', phase: 'done', at }], 2)).toBe(50);
    expect(runPercent([], 0)).toBe(0);
  });

  it('renders short lines for the UI, headline figures first', () => {
    const progress: RunProgress = {
      runId: 'r',
      phase: 'running clusters',
      percent: 41.5,
      etaSeconds: 30,
      clusters: {
        'x-gp3-0': {
          hostId: 'x-gp3-0',
          phase: 'tps',
          percent: 48,
          etaSeconds: 31,
          detail: { second: 29, failed: 0, latencyMs: 32.44, tps: 1970 },
          at,
        },
      },
      failures: ['x-local-disk-0 tps attempt 1: agent killed'],
    };
    expect(progressMarkdown('Experiment r', progress)).toBe(
      [
        '**Experiment r**: running clusters · 41.5 % · ETA 30 s',
        '',
        '- **x-gp3-0** tps 48 % · ETA 31 s · tps 1,970 · latencyMs 32.4 · second 29 · failed 0',
        '- **failures:** x-local-disk-0 tps attempt 1: agent killed',
      ].join('\n'),
    );
  });
});
