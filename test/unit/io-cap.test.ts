/**
 * The emulated I/O cap's pure parts: which hosts have a cap to lift, the control-file lines that set and remove it,
 * that withoutCap() applies it again whatever the preparation does, and the report's line on uncapped preparation.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as cgroups from '../../lib/cgroups';
import { IoCap, ioCapPlan, type IoCapHost } from '../../lib/io-cap';
import { renderMarkdown, uncappedPreparationLine } from '../../analysis/report/markdown';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import type { ExperimentResult } from '../../common/results/result';

const GP3: IoCapHost = {
  kind: 'emulated-ebs',
  emulated: true,
  limits: { iops: 3000, throughputMiBps: 125, memoryLimitMiB: 768 },
  device: 'loop7',
  cgroup: { kind: 'v1', cpuDir: null, memoryDir: null, ioDir: '/sys/fs/cgroup/blkio/storage-lab/h1' },
};

describe('ioLimitWrites', () => {
  it('caps each v1 throttle file, and removes each with "MAJ:MIN 0"', () => {
    expect(cgroups.ioLimitWrites('v1', '7:3', cgroups.evenLimits(3000, 131072000))).toEqual([
      { file: 'blkio.throttle.read_iops_device', value: '7:3 3000' },
      { file: 'blkio.throttle.write_iops_device', value: '7:3 3000' },
      { file: 'blkio.throttle.read_bps_device', value: '7:3 131072000' },
      { file: 'blkio.throttle.write_bps_device', value: '7:3 131072000' },
    ]);
    expect(cgroups.ioLimitWrites('v1', '7:3', null).map((w) => w.value)).toEqual(['7:3 0', '7:3 0', '7:3 0', '7:3 0']);
  });

  it('writes one v2 io.max line, "max" where there is no limit', () => {
    expect(cgroups.ioLimitWrites('v2', '259:1', cgroups.evenLimits(3000, 131072000))).toEqual([
      { file: 'io.max', value: '259:1 riops=3000 wiops=3000 rbps=131072000 wbps=131072000' },
    ]);
    expect(cgroups.ioLimitWrites('v2', '259:1', null)).toEqual([{ file: 'io.max', value: '259:1 riops=max wiops=max rbps=max wbps=max' }]);
  });
});

describe('ioCapPlan', () => {
  it('lifts an emulated gp3 cap: the class limits on the device', () => {
    expect(ioCapPlan(GP3, '7:3')).toEqual({
      liftable: true,
      cgroup: { kind: 'v1', ioDir: GP3.cgroup!.ioDir },
      majMin: '7:3',
      iops: 3000,
      bytesPerSecond: 125 * 2 ** 20,
      budget: 'separate',
    });
    // A class that asked for one budget for reads and writes (the default of new specs).
    expect(ioCapPlan({ ...GP3, limits: { ...GP3.limits, iopsBudget: 'shared' } }, '7:3')).toMatchObject({ liftable: true, budget: 'shared' });
  });

  it.each<[string, IoCapHost, string | null, RegExp]>([
    ['a local disk', { ...GP3, kind: 'local-disk', emulated: false, limits: { iops: null, throughputMiBps: null, memoryLimitMiB: 768 } }, '8:0', /no emulated cap on this local-disk host/],
    ['a real EBS volume on AWS', { ...GP3, kind: 'ebs', cgroup: null }, '259:1', /real EBS volume's cap cannot be lifted: preparation runs at the real cap/],
    ['an instance store on AWS', { ...GP3, kind: 'instance-store', cgroup: null }, '259:2', /no emulated cap on this instance-store host/],
    ['gp3 not emulated (no root)', { ...GP3, emulated: false, limits: { iops: null, throughputMiBps: null, memoryLimitMiB: null }, cgroup: null }, '7:3', /not emulated/],
    ['gp3 without an I/O cgroup', { ...GP3, cgroup: null }, '7:3', /no I\/O cgroup/],
    ['gp3 whose device is gone', GP3, null, /device loop7 is unknown/],
  ])('is a no-op that says why on %s', (_name, host, majMin, note) => {
    const cap = new IoCap(host, majMin);
    expect(cap.liftable).toBe(false);
    expect(cap.note).toMatch(note);
  });
});

describe('IoCap', () => {
  afterEach(() => jest.restoreAllMocks());

  function spied() {
    const calls: string[] = [];
    jest.spyOn(cgroups, 'removeIoLimits').mockImplementation((_cg, majMin) => void calls.push(`remove ${majMin}`));
    jest.spyOn(cgroups, 'setIoLimits').mockImplementation((_cg, majMin, iops, bps) => void calls.push(`set ${majMin} ${iops} ${bps}`));
    return calls;
  }

  it('lifts for the preparation and applies the cap again before returning', async () => {
    const calls = spied();
    const cap = new IoCap(GP3, '7:3');
    const seen = await cap.withoutCap(async () => {
      calls.push('prepare');
      return cap.capped;
    });
    expect(seen).toBe(false);
    expect(cap.capped).toBe(true);
    expect(calls).toEqual(['remove 7:3', 'prepare', `set 7:3 3000 ${125 * 2 ** 20}`]);
  });

  it('applies the cap again when the preparation fails, and the failure stays the failure', async () => {
    const calls = spied();
    const cap = new IoCap(GP3, '7:3');
    await expect(cap.withoutCap(() => Promise.reject(new Error('bloat failed')))).rejects.toThrow('bloat failed');
    expect(cap.capped).toBe(true);
    expect(calls).toEqual(['remove 7:3', `set 7:3 3000 ${125 * 2 ** 20}`]);
  });

  it('applies the cap again after a lift that failed half-way', async () => {
    const calls = spied();
    jest.spyOn(cgroups, 'removeIoLimits').mockImplementation(() => {
      throw new Error('EBUSY');
    });
    const cap = new IoCap(GP3, '7:3');
    await expect(cap.withoutCap(async () => calls.push('prepare'))).rejects.toThrow('EBUSY');
    expect(calls).toEqual([`set 7:3 3000 ${125 * 2 ** 20}`]);
    expect(cap.capped).toBe(true);
  });

  it('writes nothing on a host without an emulated cap', async () => {
    const calls = spied();
    const cap = new IoCap({ ...GP3, kind: 'ebs', cgroup: null }, '259:1');
    expect(await cap.withoutCap(async () => cap.capped)).toBe(true);
    cap.apply();
    expect(calls).toEqual([]);
  });
});

describe('the report on uncapped preparation', () => {
  const fixture = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'test', 'fixtures', 'results', 'predict-check-1.json'), 'utf8')) as ExperimentResult;

  it('says nothing when every preparation ran capped (results from before)', () => {
    expect(uncappedPreparationLine(fixture)).toBeNull();
    expect(renderMarkdown(fixture)).not.toMatch(/cap lifted/);
  });

  it('names the hosts and the preparation that ran uncapped, in one line', () => {
    const result = structuredClone(fixture);
    const [first] = Object.values(result.classes).filter((c) => c.kind === 'emulated-ebs');
    const c = first.clusters[0];
    c.load = { ...c.load!, preparedWithoutCap: true };
    if (c.phases.vacuum) c.phases.vacuum.preparedWithoutCap = true;
    const line = uncappedPreparationLine(result)!;
    expect(line).toContain(`${c.hostId} (load${c.phases.vacuum ? ', making the dead tuples' : ''})`);
    expect(line).toMatch(/not storage figures/);
    expect(line).not.toContain('\n');
    expect(renderMarkdown(result).split('\n').filter((l) => l === line)).toHaveLength(1);
  });
});
