/**
 * The device models in their one place (common/model/devices.ts): each class's model, the parameters its server gets,
 * and the memory a volume is held in.
 */
import { deviceModelOf, describeModel, gp3Model, nvmeModel, serverParams } from '../../common/model/devices';
import { modelledDevice, targetCaps } from '../../common/model/predict';
import { chooseBacking, RAM_BACKING_MARGIN_BYTES, volumeServerEnv } from '../../lib/volume';

describe('device models', () => {
  it('models an emulated-ebs class as gp3 at its own IOPS and MiB/s, or io2; an nvme class as m6id\'s instance store', () => {
    expect(deviceModelOf({ kind: 'emulated-ebs', iops: 6000, throughputMiBps: 250 })).toMatchObject({ name: 'gp3', iops: 6000, throughputMiBps: 250, readLatencyMs: 1.05, writeLatencyMs: 2, opUnitKiB: 256 });
    expect(deviceModelOf({ kind: 'emulated-ebs', volumeType: 'io2', iops: 16000 })).toMatchObject({ name: 'io2', iops: 16000, throughputMiBps: 4000, readLatencyMs: 0.45 });
    expect(deviceModelOf({ kind: 'nvme' })).toMatchObject({ name: 'nvme', iops: null, readIops: 268_336, writeIops: 134_168, readLatencyMs: 0.125 });
    expect(deviceModelOf({ kind: 'local-disk' })).toBeNull();
    expect(deviceModelOf({ kind: 'ebs' })).toBeNull();
    // Every figure names where it comes from.
    for (const m of [gp3Model(), nvmeModel()]) expect(m.sources.every((s) => s.figure && s.source)).toBe(true);
  });

  it('gives the server bytes and microseconds', () => {
    expect(serverParams(gp3Model())).toEqual({
      name: 'gp3',
      iops: 3000,
      bytesPerSecond: 125 * 2 ** 20,
      readIops: 0,
      writeIops: 0,
      readBytesPerSecond: 0,
      writeBytesPerSecond: 0,
      opUnitBytes: 256 * 1024,
      readLatencyUs: 1050,
      writeLatencyUs: 2000,
      flushLatencyUs: 0,
      queueDepth: 64,
      burstMs: 5,
    });
    expect(serverParams(nvmeModel())).toMatchObject({ iops: 0, readIops: 268_336, writeIops: 134_168, readBytesPerSecond: 1205 * 2 ** 20, readLatencyUs: 125 });
    expect(describeModel(gp3Model())).toBe('gp3 (EBS gp3 at 3000 IOPS and 125 MiB/s): 3,000 IOPS and 125 MiB/s, reads and writes together; read 1.05 ms, write 2 ms, flush 0 ms; queue depth 64');
  });

  it('is what the predictor takes for a modelled target, and not for a run on the kernel\'s throttles', () => {
    expect(modelledDevice({ kind: 'emulated-ebs', iops: 3000 })?.name).toBe('gp3');
    expect(targetCaps({ kind: 'emulated-ebs', iops: 3000 })).toEqual({ sharedBudget: true, iops: 3000, mibps: 125, throttleSeesWriteback: true });
    // A run recorded on the cgroup throttles keeps what they delivered.
    expect(modelledDevice({ kind: 'emulated-ebs', iops: 3000, iopsBudget: 'shared' })).toBeNull();
    expect(targetCaps({ kind: 'emulated-ebs', iops: 3000, iopsBudget: 'shared' }).iops).toBeCloseTo(3000 * 0.88, 6);
    expect(targetCaps({ kind: 'nvme' })).toEqual({ sharedBudget: false, iops: null, mibps: null, throttleSeesWriteback: true });
  });
});

describe('where a volume keeps its bytes', () => {
  const GiB = 2 ** 30;
  it('in RAM when the volume, its host and the margin fit in the memory available, else in a file', () => {
    expect(chooseBacking(10 * GiB, 1 * GiB, {}, 11 * GiB + RAM_BACKING_MARGIN_BYTES)).toBe('ram');
    expect(chooseBacking(10 * GiB, 1 * GiB, {}, 11 * GiB + RAM_BACKING_MARGIN_BYTES - 1)).toBe('file');
    expect(chooseBacking(1, 1, {}, null)).toBe('file');
    expect(chooseBacking(100 * GiB, 1, { STORAGE_LAB_VOLUME_BACKING: 'ram' }, 0)).toBe('ram');
    expect(chooseBacking(1, 1, { STORAGE_LAB_VOLUME_BACKING: 'file' }, 100 * GiB)).toBe('file');
  });
});

describe("a volume server's environment", () => {
  test('the path only, and a CPU profile per server when the operator names an absolute folder for them', () => {
    expect(volumeServerEnv({ PATH: '/bin', AWS_SECRET_ACCESS_KEY: 'k', PGPASSWORD: 'p' }, '/lab/hosts/h1')).toEqual({ PATH: '/bin' });
    expect(volumeServerEnv({ PATH: '/bin', STORAGE_LAB_VOLUME_PPROF_DIR: '/tmp/prof' }, '/lab/hosts/h1', 42)).toEqual({
      PATH: '/bin',
      STORAGE_LAB_VOLUME_PPROF: '/tmp/prof/h1-42.pprof',
    });
    expect(volumeServerEnv({ STORAGE_LAB_VOLUME_PPROF_DIR: 'relative' }, '/lab/hosts/h1')).toEqual({ PATH: '/usr/bin:/bin' });
  });
});
