import type { HostRecord, HostRequest } from '../../common/core/hosts';
import { hostTaskQueue } from '../../common/core/names';

/** What a mocked provisionHost returns: the host as asked for, on loopback, with nothing enforced but its memory. */
export function fakeHostRecord(request: HostRequest): HostRecord {
  return {
    hostId: request.hostId,
    runId: request.runId,
    provider: 'local',
    className: request.className,
    kind: request.storageClass.kind,
    taskQueue: hostTaskQueue(request.hostId),
    emulated: true,
    // As the local provider records them (iopsBudget null: nothing enforced).
    limits: { iops: null, throughputMiBps: null, memoryLimitMiB: request.memoryLimitMiB, iopsBudget: null },
    postgres: { host: '127.0.0.1', port: 5432 },
  };
}
