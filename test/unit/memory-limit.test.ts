/**
 * The host's memory limit around a data set's preparation (lib/memory-limit.ts): lifted for it, set again after it
 * whatever happens, once for nested preparations, retried while the kernel cannot yet reclaim below it; and the order
 * prepareDataSet keeps with the I/O cap (the memory limit back first, while the writes of its reclaim are uncapped).
 */
import { MemoryLimit, type MemoryLimitFile, type MemoryLimitHost } from '../../lib/memory-limit';
import { IoCap } from '../../lib/io-cap';
import { prepareDataSet } from '../../activities/host/deps';
import { GP3, recorder } from '../helpers/io-cap';

const HOST: MemoryLimitHost = {
  cgroup: { kind: 'v1', cpuDir: null, memoryDir: '/sys/fs/cgroup/memory/storage-lab/h1', ioDir: null },
  limits: { iops: 3000, throughputMiBps: 125, memoryLimitMiB: 768 },
};

/** A limit file that records each write, and fails the next `busy` writes of a limit with EBUSY. */
function limitFile(busy = 0): MemoryLimitFile & { writes: string[] } {
  const writes: string[] = [];
  return {
    writes,
    write(bytes) {
      if (bytes !== null && busy > 0) {
        busy--;
        throw Object.assign(new Error('EBUSY: resource busy or locked, write'), { code: 'EBUSY' });
      }
      writes.push(bytes === null ? 'none' : `${bytes / 2 ** 20} MiB`);
    },
  };
}

describe('MemoryLimit', () => {
  it('lifts the limit for the preparation and sets the host\'s own again before returning', async () => {
    const file = limitFile();
    const limit = new MemoryLimit(HOST, file);
    expect(limit.liftable).toBe(true);
    const value = await limit.withoutLimit(async () => {
      file.writes.push('prepare');
      return 7;
    });
    expect(value).toBe(7);
    expect(file.writes).toEqual(['none', 'prepare', '768 MiB']);
  });

  it('sets it again when the preparation fails, and the failure stays the failure', async () => {
    const file = limitFile();
    const limit = new MemoryLimit(HOST, file);
    await expect(limit.withoutLimit(() => Promise.reject(new Error('restore failed')))).rejects.toThrow('restore failed');
    expect(file.writes).toEqual(['none', '768 MiB']);
  });

  it('lifts once for nested preparations and sets it again when the outermost ends', async () => {
    const file = limitFile();
    const limit = new MemoryLimit(HOST, file);
    await limit.withoutLimit(async () => {
      await limit.withoutLimit(async () => file.writes.push('inner'));
      file.writes.push('outer');
    });
    expect(file.writes).toEqual(['none', 'inner', 'outer', '768 MiB']);
  });

  it('tries again while the kernel cannot yet reclaim below the limit (EBUSY), then gives up with the reason', async () => {
    const retry = { attempts: 5, ms: 1 };
    const file = limitFile(2);
    await new MemoryLimit(HOST, file, retry).apply();
    expect(file.writes).toEqual(['768 MiB']);
    const stuck = limitFile(1000);
    await expect(new MemoryLimit(HOST, stuck, retry).apply()).rejects.toThrow(/memory limit of 768 MiB failed \(5 attempts\): EBUSY/);
    expect(stuck.writes).toEqual([]);
    // Any other refusal is not waited out.
    let tries = 0;
    const refused: MemoryLimitFile = {
      write() {
        tries++;
        throw Object.assign(new Error('EACCES: permission denied, open'), { code: 'EACCES' });
      },
    };
    await expect(new MemoryLimit(HOST, refused, retry).apply()).rejects.toThrow(/failed \(1 attempts\): EACCES/);
    expect(tries).toBe(1);
  });

  it.each<[string, MemoryLimitHost]>([
    ['no cgroup (an EC2 instance)', { ...HOST, cgroup: null }],
    ['no memory controller', { ...HOST, cgroup: { ...HOST.cgroup!, memoryDir: null } }],
    ['no limit enforced', { ...HOST, limits: { ...HOST.limits, memoryLimitMiB: null } }],
  ])('is a no-op on a host with %s', async (_name, host) => {
    const file = limitFile();
    const limit = new MemoryLimit(host, file);
    expect(limit.liftable).toBe(false);
    expect(await limit.withoutLimit(async () => 'prepared')).toBe('prepared');
    await limit.apply();
    expect(file.writes).toEqual([]);
  });
});

describe('prepareDataSet', () => {
  it('lifts the I/O cap, then the memory limit; sets the memory limit again first, the cap last', async () => {
    const model = recorder();
    const calls = model.calls;
    const file: MemoryLimitFile = { write: (bytes) => void calls.push(bytes === null ? 'memory unlimited' : 'memory limited') };
    const out = await prepareDataSet({ ioCap: new IoCap(GP3, model), memoryLimit: new MemoryLimit(HOST, file) }, async () => {
      calls.push('restore');
      return 'restored';
    });
    expect(out).toEqual({ value: 'restored', preparedWithoutCap: true, modelledIos: 0 });
    expect(calls).toEqual(['model off', 'memory unlimited', 'restore', 'memory limited', 'model on']);
  });

  it('lifts only the I/O cap where the agent owns no memory limit', async () => {
    const model = recorder();
    const calls = model.calls;
    await prepareDataSet({ ioCap: new IoCap(GP3, model) }, async () => void calls.push('load'));
    expect(calls).toEqual(['model off', 'load', 'model on']);
  });
});
