/** fio's JSON output, parsed from real runs of fio 3.33 (test/fixtures/fio-3.33). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseFioJson } from '../../lib/fio';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const fixture = (name: string) => readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'fio-3.33', name), 'utf8');

describe('parseFioJson', () => {
  it('reads a 70/30 mix: IOPS, mean latency and counts of each direction', () => {
    const r = parseFioJson(fixture('randrw-70-30.json'));
    expect(r.version).toBe('fio-3.33');
    expect(r.reads).toBe(4266);
    expect(r.writes).toBe(1899);
    expect(r.readIops).toBeCloseTo(4257.485, 3);
    expect(r.readLatencyMs).toBeCloseTo(0.406767, 6);
    expect(r.writeLatencyMs).toBeCloseTo(1.192066, 6);
    expect(r.syncLatencyMs).toBeNull();
    expect(r.runtimeSeconds).toBeCloseTo(1.001, 3);
  });

  it('reads the fsyncs of a write-and-fsync job', () => {
    const r = parseFioJson(fixture('write-fsync.json'));
    expect(r.reads).toBe(0);
    expect(r.readLatencyMs).toBeNull();
    expect(r.syncs).toBe(1023);
    expect(r.syncLatencyMs).toBeCloseTo(0.799012, 6);
  });

  it('refuses a job that failed', () => {
    const failed = JSON.parse(fixture('write-fsync.json'));
    failed.jobs[0].error = 5;
    expect(() => parseFioJson(`fio: warning before the document\n${JSON.stringify(failed)}`)).toThrow(/error 5/);
  });
});
