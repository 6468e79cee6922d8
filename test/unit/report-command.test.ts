/** storage-lab report RUN renders both reports again from a stored result.json, through the results store. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { aggregate } from '../../analysis/aggregate';
import { DirResultsStore } from '../../lib/results-store';
import { reportCommand } from '../../client/commands/report';
import { UserError } from '../../client/errors';
import { resolveSpec } from '../../common/input/resolve';

describe('storage-lab report', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-report-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes report.md and report.html from result.json', async () => {
    const store = new DirResultsStore(dir);
    const result = aggregate({
      runId: 'exp-ci-1',
      spec: resolveSpec({ preset: 'ci' }),
      clusters: [],
      startedAt: 'a',
      finishedAt: 'b',
      environment: { cpus: 2, memoryMiB: 1024, kernel: 'k', provider: 'local' },
      cancelled: false,
    });
    await store.put('exp-ci-1', 'result.json', JSON.stringify(result));
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const files = await reportCommand('exp-ci-1', {}, store).finally(() => log.mockRestore());
    expect(files.map((f) => path.basename(f))).toEqual(['report.md', 'report.html']);
    expect(readFileSync(path.join(dir, 'exp-ci-1', 'report.md'), 'utf8')).toContain('# Storage Lab report: ci');
    const html = readFileSync(path.join(dir, 'exp-ci-1', 'report.html'), 'utf8');
    expect(html).toContain('<h1>Storage Lab report: ci</h1>');
    expect(html).toContain('no data measured'); // Nothing was measured in this result: the charts say so.
  });

  it('names the runs it has when the one asked for has no result', async () => {
    const store = new DirResultsStore(dir);
    await store.put('exp-other', 'result.json', '{}');
    await expect(reportCommand('exp-missing', {}, store)).rejects.toThrow(UserError);
    await expect(reportCommand('exp-missing', {}, store)).rejects.toThrow(/runs with results: exp-other/);
  });
});
