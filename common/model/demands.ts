/**
 * Measured per-transaction demands for the prediction model (common/model/predict.ts): from a run's class (its median
 * cluster's TPS run and sampler) or from a diagnose capture. Pure and workflow-safe.
 */
import { breakdownCounts, breakdownTotal, SYNC_REP_EVENT } from '../results/breakdown';
import { syncStandbyWait, type DiagnoseCapture } from '../results/diagnose-capture';
import type { SamplerReadings } from '../results/sampler-readings';
import { groupedFlushWaitMs, type ModelVariant, type PredictTarget, type WorkloadDemands } from './predict';
import type { ClassResult, ClusterResult, ExperimentResult } from '../results/result';

/** pgbench_accounts' primary key adds about this share of the heap (the estimate volumeBytes uses too). */
const INDEX_SHARE = 0.15;
const MIB = 2 ** 20;
/** Postgres writes data pages of this many KiB. */
const PAGE_KIB = 8;

/** The cluster of a class whose TPS is the median (the class's representative), among those with a TPS run. */
export function medianCluster(cls: ClassResult): ClusterResult | null {
  const ok = cls.clusters.filter((c) => c.status === 'ok' && c.tpsRun).sort((a, b) => a.tpsRun!.tps - b.tpsRun!.tps);
  return ok.length ? ok[Math.floor((ok.length - 1) / 2)] : null;
}

/** What a class ran on, as a prediction target: its storage, the host's cores and memory, the clients. */
export function targetOfClass(result: ExperimentResult, className: string): PredictTarget {
  const cls = result.classes[className];
  if (!cls) throw new Error(`run ${result.runId} has no class "${className}"; it has: ${Object.keys(result.classes).join(', ')}`);
  const cluster = medianCluster(cls);
  const limitedKind = cls.kind === 'ebs' || cls.kind === 'emulated-ebs';
  return {
    kind: cls.kind,
    ...(limitedKind && cls.limits.iops ? { iops: cls.limits.iops } : {}),
    ...(limitedKind && cls.limits.throughputMiBps ? { throughputMiBps: cls.limits.throughputMiBps } : {}),
    // A class on the modelled volume is predicted with its device model; runs recorded on the kernel's throttles
    // before it keep how those held their budget (before the shared budget: separate read and write limits).
    ...(cls.kind === 'emulated-ebs' && !cls.device ? { iopsBudget: cls.limits.iopsBudget ?? 'separate' } : {}),
    ...(cls.device?.name === 'io2' ? { volumeType: 'io2' as const } : {}),
    ...(cluster?.diagnostics?.cpu ? { vcpus: cluster.diagnostics.cpu.cores } : {}),
    memoryMiB: cls.limits.memoryLimitMiB,
    clients: cluster?.tpsRun?.clients ?? result.spec.workload.clients,
    label: className,
  };
}

/** Server time per transaction by part: mean active backends / TPS (Little's law), split by sampled wait shares. */
function serverParts(d: SamplerReadings, tps: number): WorkloadDemands['serverMs'] {
  const counts = breakdownCounts(d.waitEvents);
  const total = breakdownTotal(counts);
  if (total === 0 || tps <= 0) return null;
  const serverMs = (1000 * d.avgActiveSessions) / tps;
  const part = (n: number) => (serverMs * n) / total;
  return {
    cpu: part(counts.cpu),
    pageReads: part(counts.pageReads),
    walFsync: part(counts.walFsync),
    lock: part(counts.lockAndScheduler),
    other: part(counts.other),
  };
}

/**
 * The client's transactions in the sampled window: what the server committed there (the sampler's own left out) ÷ the
 * commits one client transaction makes. The measured TPS counts the client's transactions: a pgbench script of two
 * statements outside BEGIN/END commits twice per transaction (predict-holdout's), so its demands are per the
 * client's transaction, the unit the model's throughput is in. `clientTx`: the client's count over the window (its
 * TPS x the window), used where the server's is missing; the ratio is rounded, as a script commits a whole number of
 * times.
 */
export function windowTransactions(d: Pick<SamplerReadings, 'database' | 'ownTransactions' | 'samples'>, clientTx: number): { tx: number; commitsPerTx: number } {
  const counted = d.database.xactCommit + d.database.xactRollback - (d.ownTransactions ?? d.samples);
  if (!(counted > 0)) return { tx: clientTx, commitsPerTx: 1 };
  const commitsPerTx = clientTx > 0 ? Math.max(1, Math.round(counted / clientTx)) : 1;
  return { tx: counted / commitsPerTx, commitsPerTx };
}

/** A WAL flush as the source measured it: wal_sync_time / wal_sync (track_wal_io_timing), else the device's write latency. */
function flushLatency(d: SamplerReadings, notes: string[]): number | null {
  const syncs = d.wal?.wal_sync ?? 0;
  const time = d.wal?.wal_sync_time ?? 0;
  if (syncs > 0 && time > 0) return time / syncs;
  if (d.device?.writeLatencyMs != null) {
    notes.push('WAL flush latency: the device\'s mean write latency (track_wal_io_timing was off)');
    return d.device.writeLatencyMs;
  }
  return null;
}

/** Demands of one class of a run, from its median cluster. */
export function demandsFromClass(result: ExperimentResult, className: string, variant: Pick<ModelVariant, 'clientTransactions'> = {}): WorkloadDemands {
  const cls = result.classes[className];
  if (!cls) throw new Error(`run ${result.runId} has no class "${className}"; it has: ${Object.keys(result.classes).join(', ')}`);
  const cluster = medianCluster(cls);
  const run = cluster?.tpsRun;
  const d = cluster?.diagnostics;
  if (!run || !d) throw new Error(`class ${className} of run ${result.runId} has no TPS run with sampler readings to take demands from`);
  if (!d.cpu) throw new Error(`class ${className} of run ${result.runId} did not measure its CPU`);
  const notes: string[] = [];
  const window = windowTransactions(d, run.tps * d.seconds);
  const { tx, commitsPerTx } = variant.clientTransactions === false ? { tx: window.tx * window.commitsPerTx, commitsPerTx: 1 } : window;
  if (commitsPerTx > 1) notes.push(`${commitsPerTx} server commits per client transaction (the script's statements outside a transaction block): demands are per client transaction`);
  const perTx = (ratePerSecond: number) => (ratePerSecond * d.seconds) / tx;
  const serverMs = serverParts(d, run.tps);
  const serverTotal = serverMs ? serverMs.cpu + serverMs.pageReads + serverMs.walFsync + serverMs.lock + serverMs.other : 0;
  const inLatency = Math.max(0, run.latencyMs.mean - serverTotal);

  const readsFrom = d.cgroupIo ?? d.device;
  // A modelled volume counted every I/O that reached it itself: the reads and writes the device served (its own
  // accounting), the kernel's writeback merges included, rather than the cgroup's or the disk's counts.
  const v = d.volume && d.volume.seconds > 0 ? d.volume : null;
  if (!v && !d.cgroupIo) notes.push(d.device ? `device reads: /proc/diskstats of ${d.device.name} (every process's I/O on it, not only the host's)` : 'device reads: not measured');
  const reads = v ? v.modelled.reads / tx : readsFrom ? perTx(readsFrom.readIops) : 0;
  const readKiB = v
    ? v.modelled.reads > 0
      ? v.modelled.readBytes / 1024 / v.modelled.reads
      : PAGE_KIB
    : readsFrom && readsFrom.readIops > 0
      ? (readsFrom.readMBps * 1024) / readsFrom.readIops
      : PAGE_KIB;
  const walSyncs = d.wal?.wal_sync ?? 0;
  const walBytes = d.wal?.wal_bytes ?? d.walBytes ?? 0;

  // A host restored from a data set (issue 31) has no load result: its heap is the set's.
  const heapBytes = cluster.load?.heapBytes ?? cluster.dataSet?.heapBytes ?? 0;
  let dataBytes = d.databaseBytes ?? 0;
  if (!dataBytes && heapBytes) {
    dataBytes = heapBytes * (1 + INDEX_SHARE);
    notes.push(`data set: the heap plus ${INDEX_SHARE * 100} % for its index (the run did not record the database size)`);
  }
  const memoryMiB = cls.limits.memoryLimitMiB;
  let cache: WorkloadDemands['cache'] = null;
  if (cls.emulated && dataBytes > 0) {
    const cacheBytes = d.memory ? d.memory.cacheMiB * MIB : memoryMiB * MIB;
    if (!d.memory) notes.push('cache: the whole memory limit taken as cache (the run did not record its memory cgroup)');
    cache = { dataBytes, cacheBytes, memoryMiB };
  } else notes.push('cache: the memory limit was not enforced, so memory changes are not predicted');

  return {
    source: `run ${result.runId}, class ${className} (${cluster.hostId})`,
    clients: run.clients,
    measured: { tps: run.tps, latencyMs: { mean: run.latencyMs.mean, p95: run.latencyMs.p95 } },
    client: { gapMs: run.clientGapMs ?? 0, inLatencyMs: inLatency },
    cpu: {
      msPerTx: (1000 * d.cpu.seconds) / tx,
      vcpus: d.cpu.cores,
      // The clients ran on the host's cores too (the lab's pgbench does): what the whole machine used per transaction.
      ...(d.cpu.machineCoresBusy !== undefined && d.cpu.machineCoresBusy * d.seconds > d.cpu.seconds
        ? { machineMsPerTx: (1000 * d.cpu.machineCoresBusy * d.seconds) / tx }
        : {}),
      // The modelled volume's server, part of the machine's: the emulation's own work, which a real device does not
      // take from the host's cores (predict-reference.ts leaves it out at the reference's scale).
      ...(v && v.serverCpuSeconds > 0 ? { deviceMsPerTx: (1000 * v.serverCpuSeconds * (d.seconds / v.seconds)) / tx } : {}),
    },
    serverMs,
    reads: { perTx: reads, kib: readKiB },
    writes: v
      ? {
          // The device's writes without the WAL flushes' own (the model counts those itself): data pages as the
          // kernel's writeback and the backends' evictions brought them, at their mean size.
          kind: 'measured' as const,
          perTx: Math.max(0, v.modelled.writes - walSyncs) / tx,
          kib: v.modelled.writes > walSyncs ? Math.max(PAGE_KIB, (v.modelled.writeBytes - walBytes) / 1024 / (v.modelled.writes - walSyncs)) : PAGE_KIB,
          throttledPerTx: Math.max(0, v.modelled.writes - walSyncs) / tx,
        }
      : {
          kind: 'measured' as const,
          perTx: (d.bufferWrites ?? d.checkpoints?.buffersWritten ?? 0) / tx,
          kib: PAGE_KIB,
          // The throttle's writes without the WAL flushes' own (the model counts those itself).
          throttledPerTx: d.cgroupIo ? Math.max(0, d.cgroupIo.writeIops * d.seconds - walSyncs) / tx : null,
        },
    wal: {
      bytesPerTx: walBytes / tx,
      ...(walSyncs > 0 ? { flushesPerTx: walSyncs / tx } : {}),
      ...(walSyncs > 0 && d.wal?.wal_write_time ? { writeMsPerFlush: d.wal.wal_write_time / walSyncs } : {}),
    },
    device: { readLatencyMs: d.device?.readLatencyMs ?? null, flushLatencyMs: flushLatency(d, notes) },
    cache,
    storage: targetOfClass(result, className),
    notes,
  };
}

/** The least round trip a standby that commits wait for is given. */
const MIN_RTT_MS = 0.01;

/** Demands of a diagnose capture: the clients are the backends seen in a transaction; their think time by Little's law. */
export function demandsFromCapture(capture: DiagnoseCapture): WorkloadDemands {
  const d = capture.diagnostics;
  const notes: string[] = [];
  const tps = capture.tps;
  if (tps <= 0) throw new Error(`the capture of ${capture.target} saw no transactions: nothing to predict from`);
  const tx = tps * d.seconds;
  const perTx = (ratePerSecond: number) => (ratePerSecond * d.seconds) / tx;
  const serverMs = serverParts(d, tps);
  const serverTotal = serverMs ? serverMs.cpu + serverMs.pageReads + serverMs.walFsync + serverMs.lock + serverMs.other : (1000 * d.avgActiveSessions) / tps;
  const clients = Math.max(1, d.sessions?.distinctBackends ?? Math.ceil(d.avgActiveSessions));
  // A closed loop: clients = TPS x (time in the server + time outside it).
  const gapMs = Math.max(0, (1000 * clients) / tps - serverTotal);
  notes.push(`clients: the ${clients} client backends seen in a transaction; time outside the server ${gapMs.toFixed(2)} ms per transaction by Little's law`);

  let reads: number;
  let readKiB = PAGE_KIB;
  const pgIoReads = d.io ? Object.values(d.io).reduce((s, io) => s + io.reads, 0) : null;
  if (d.device && capture.local) {
    reads = perTx(d.device.readIops);
    readKiB = d.device.readIops > 0 ? (d.device.readMBps * 1024) / d.device.readIops : PAGE_KIB;
    notes.push(`device reads: /proc/diskstats of ${d.device.name} (every process's I/O on it)`);
  } else if (pgIoReads !== null) {
    reads = pgIoReads / tx;
    notes.push('device reads: pg_stat_io reads (they include reads the OS page cache served)');
  } else {
    reads = d.database.blksRead / tx;
    notes.push('device reads: pg_stat_database blks_read (they include reads the OS page cache served)');
  }
  let cpu: WorkloadDemands['cpu'];
  if (d.cpu) cpu = { msPerTx: (1000 * d.cpu.seconds) / tx, vcpus: d.cpu.cores };
  else {
    cpu = { msPerTx: serverMs?.cpu ?? 0, vcpus: 0 };
    notes.push('CPU: the sampled active time without a wait event (the server is on another machine); its vCPUs are unknown');
  }
  const fsyncMs = capture.fsync ? capture.fsync.usecsPerOp / 1000 : null;
  const walSyncs = d.wal?.wal_sync ?? 0;
  const walSyncTime = d.wal?.wal_sync_time ?? 0;
  const sharedBuffersBytes = settingBytes(capture.settings.shared_buffers, capture.settings.block_size);
  const cache: WorkloadDemands['cache'] =
    capture.local && d.databaseBytes
      ? { dataBytes: d.databaseBytes, cacheBytes: capture.local.pageCacheMiB * MIB + sharedBuffersBytes, memoryMiB: capture.local.memoryMiB }
      : null;
  if (!cache) notes.push('cache: the server\'s memory is not known here, so memory changes are not predicted');
  const flushLatencyMs = walSyncs > 0 && walSyncTime > 0 ? walSyncTime / walSyncs : fsyncMs;
  // A commit's wait for its standbys: what the samples saw commits spend in IPC:SyncRep where they saw it (the wait
  // itself), else the standbys' flush lag. The model adds a standby's grouped flush itself (taken to be as fast as
  // the primary's): the round trip is the rest. (At least a loopback's 0.01 ms: 0 would say commits wait for none.)
  const standbyWait = syncStandbyWait(capture);
  const sampledWaitMs = serverMs ? (serverTotal * (d.waitEvents[SYNC_REP_EVENT] ?? 0)) / Math.max(1, breakdownTotal(breakdownCounts(d.waitEvents))) : 0;
  const standbyFlushMs = groupedFlushWaitMs(flushLatencyMs ?? 0, tps / 1000);
  const waitMs = sampledWaitMs > 0 ? sampledWaitMs : (standbyWait?.waitMs ?? 0);
  const syncStandbyRttMs = standbyWait ? Math.max(MIN_RTT_MS, waitMs - standbyFlushMs) : 0;
  if (standbyWait)
    notes.push(
      `synchronous standbys: ${standbyWait.detail}; commits waited ${waitMs.toFixed(2)} ms for them (${sampledWaitMs > 0 ? `sampled in ${SYNC_REP_EVENT}` : 'the flush lag: no samples in it'}); round trip taken as that less a grouped flush like the primary's (${standbyFlushMs.toFixed(2)} ms): ${syncStandbyRttMs.toFixed(2)} ms`,
    );
  return {
    source: `diagnose capture of ${capture.target} at ${capture.capturedAt}`,
    clients,
    measured: { tps, latencyMs: { mean: serverTotal, p95: null } },
    client: { gapMs, inLatencyMs: 0 },
    cpu,
    serverMs,
    reads: { perTx: reads, kib: readKiB },
    writes: { kind: 'measured', perTx: (d.bufferWrites ?? 0) / tx, kib: PAGE_KIB, throttledPerTx: null },
    wal: { bytesPerTx: (d.wal?.wal_bytes ?? d.walBytes ?? 0) / tx, ...(walSyncs > 0 ? { flushesPerTx: walSyncs / tx } : {}) },
    device: {
      readLatencyMs: capture.local ? (d.device?.readLatencyMs ?? null) : capture.evidence.msPerBlockRead,
      flushLatencyMs,
    },
    cache,
    storage: { kind: 'local-disk', ...(syncStandbyRttMs > 0 ? { syncStandbyRttMs } : {}), ...(capture.local?.memoryMiB ? { memoryMiB: capture.local.memoryMiB } : {}), ...(d.cpu ? { vcpus: d.cpu.cores } : {}), clients, label: 'the captured server' },
    notes,
  };
}

/** A size setting as pg_settings shows it in current_setting() ("128MB", "16GB", "16384" in blocks). */
export function settingBytes(value: string | undefined, blockSize = '8192'): number {
  if (!value) return 0;
  const m = /^(\d+(?:\.\d+)?)\s*(kB|MB|GB|TB)?$/.exec(value.trim());
  if (!m) return 0;
  const unit = { kB: 2 ** 10, MB: 2 ** 20, GB: 2 ** 30, TB: 2 ** 40 }[m[2] as 'kB' | 'MB' | 'GB' | 'TB'] ?? Number(blockSize);
  return Number(m[1]) * unit;
}
