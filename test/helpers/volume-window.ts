/** A modelled gp3 volume's window for unit tests: every figure consistent (the server's and the kernel's counts agree). */
import type { VolumeWindow } from '../../common/results/sampler-readings';

export function gp3Window(opsPerSecond: number, seconds = 10, over: Partial<VolumeWindow> = {}): VolumeWindow {
  const reads = Math.round(opsPerSecond * seconds * 0.7);
  const writes = Math.round(opsPerSecond * seconds) - reads;
  return {
    model: 'gp3',
    params: {
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
    },
    seconds,
    modelOn: { start: true, end: true },
    served: { reads, writes, flushes: 500, discards: 0, readBytes: reads * 8192, writeBytes: writes * 8192 },
    modelled: { reads, writes, units: reads + writes, readBytes: reads * 8192, writeBytes: writes * 8192 },
    // The kernel counts each empty flush as a write of no bytes too.
    kernel: { reads, writes: writes + 500, flushes: 500, discards: 0, readBytes: reads * 8192, writeBytes: writes * 8192, readLatencyMs: 12, writeLatencyMs: 14 },
    throttleWaits: reads + writes,
    throttleWaitSeconds: 100,
    queueWaits: 0,
    meanQueue: 40,
    meanReadLatencyMs: 12,
    meanWriteLatencyMs: 14,
    meanFlushLatencyMs: 0.01,
    inFlight: { start: 40, end: 40 },
    serverCpuSeconds: 0.5,
    backing: 'ram',
    ...over,
  };
}
