/**
 * The modelled volume against its model, and what it costs, measured with fio in one run:
 *
 * 1. fidelity: every pattern of bench/volume-patterns.ts on a modelled gp3 (and the QD 1 patterns on the nvme
 *    model), measured vs model, with the device's own accounting (docs/storage-emulation.md quotes the table);
 * 2. cost: randread and randwrite of 8 KiB at QD 32 through the modelled volume (its server, FUSE, the loop device) at
 *    a gp3 budget of 3,000 IOPS and with the model off (as fast as the path goes), beside the same fio on the raw
 *    backing (a direct-I/O loop device over a file in RAM, tmpfs): IOPS, and CPU seconds (the server's own, and the
 *    whole machine's) per I/O, side by side. The target: at most 10 % of a core per 3,000 IOPS. Each volume pattern
 *    runs on the server's own loop (infra/volume/loop.go) and then on go-fuse's server (--serve go-fuse): the ratio
 *    of their CPU an I/O is measured in the same minute.
 *
 * 3. zeros: 1 GiB written sequentially with direct I/O (1 MiB, QD 4) onto fresh space of a volume with the model off,
 *    as a restore's preparation writes, once as zeros and once as data, side by side: the server's CPU seconds per GiB.
 *    Zeros over pages never written are populated, not copied (infra/volume/store.go): a restore's zero-filled WAL
 *    segments (4 GiB on local-quick's hosts) are what this costs.
 *
 *   node dist/bench/volume-fidelity.js [--seconds 15] [--cost-seconds 10] [--parts fidelity,cost,zeros]
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gp3Model, nvmeModel, serverParams } from '../common/model/devices';
import { detachLoop } from '../lib/block-devices';
import { detectCgroups } from '../lib/cgroups';
import { runFio, type FioJob } from '../lib/fio';
import { registerLabRoot } from '../lib/lab-fs';
import { parseProcStat } from '../lib/parsers/proc';
import { runProcess } from '../lib/process-runner';
import { createTestVolume, volumeSupport, type TestVolume } from '../test/helpers/volume';
import { fidelityTable, patterns, runPattern, type PatternResult } from './volume-patterns';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '15' }, 'cost-seconds': { type: 'string', default: '10' }, parts: { type: 'string', default: 'fidelity,cost,zeros' } },
});
const PARTS = new Set(values.parts.split(','));
const SECONDS = Number(values.seconds);
const COST_SECONDS = Number(values['cost-seconds']);

const busySeconds = () => parseProcStat(readFileSync('/proc/stat', 'utf8')).busySeconds;

interface CostRow {
  path: string;
  rw: string;
  iops: number;
  meanLatencyMs: number;
  /** CPU seconds per second of the volume's server (null on the raw path), and of the whole machine. */
  serverCores: number | null;
  machineCores: number;
}

async function fidelity(dir: string): Promise<PatternResult[]> {
  const results: PatternResult[] = [];
  let vol: TestVolume | null = null;
  try {
    vol = await createTestVolume(path.join(dir, 'gp3'), { params: serverParams(gp3Model()), sizeBytes: 1024 * 2 ** 20 });
    for (const p of patterns(vol.loop.name, SECONDS)) {
      const r = await runPattern(vol.control, p);
      results.push({ ...r, pattern: `gp3: ${r.pattern}` });
      console.error(`  gp3: ${p.name} done`);
    }
  } finally {
    await vol?.remove();
  }
  try {
    vol = await createTestVolume(path.join(dir, 'nvme'), { params: serverParams(nvmeModel()), sizeBytes: 1024 * 2 ** 20 });
    for (const p of patterns(vol.loop.name, SECONDS).filter((x) => x.judged === 'read latency' || x.judged === 'write latency')) {
      const r = await runPattern(vol.control, p);
      results.push({ ...r, pattern: `nvme: ${r.pattern}` });
      console.error(`  nvme: ${p.name} done`);
    }
  } finally {
    await vol?.remove();
  }
  return results;
}

/** One fio run on a device, with the machine's and (where given) the server's CPU over it. */
async function measureCost(label: string, device: string, rw: string, serverCpu: (() => Promise<number>) | null): Promise<CostRow> {
  const job: FioJob = { name: `cost-${rw}`, filename: `/dev/${device}`, size: '512M', bs: '8k', rw, direct: 1, ioengine: 'libaio', iodepth: 32, time_based: 1, runtime: COST_SECONDS, randrepeat: 0, norandommap: 1 };
  const s0 = serverCpu ? await serverCpu() : 0;
  const m0 = busySeconds();
  const t0 = performance.now();
  const fio = await runFio(job);
  const wall = (performance.now() - t0) / 1000;
  const m1 = busySeconds();
  const s1 = serverCpu ? await serverCpu() : 0;
  return {
    path: label,
    rw,
    iops: fio.readIops + fio.writeIops,
    meanLatencyMs: (rw === 'randread' ? fio.readLatencyMs : fio.writeLatencyMs) ?? NaN,
    serverCores: serverCpu ? (s1 - s0) / wall : null,
    machineCores: (m1 - m0) / wall,
  };
}

async function cost(dir: string): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  // The raw backing: a direct-I/O loop device over a file in RAM (tmpfs), the same block layer without the server.
  const tmpfs = path.join(dir, 'raw');
  execFileSync('mkdir', ['-p', tmpfs]);
  await runProcess('mount', ['-t', 'tmpfs', '-o', 'size=600m', 'tmpfs', tmpfs]);
  let rawLoop: string | null = null;
  let vol: TestVolume | null = null;
  let goFuse: TestVolume | null = null;
  try {
    await runProcess('truncate', ['-s', '512M', path.join(tmpfs, 'raw.img')]);
    // tmpfs takes O_DIRECT on recent kernels; where it does not, the loop device falls back to buffered I/O on RAM.
    const raw = (await runProcess('losetup', ['--find', '--show', '--direct-io=on', path.join(tmpfs, 'raw.img')])).stdout.trim();
    rawLoop = raw;
    // As an experiment's hosts run it: only a power-cut drill's keep the undo log (docs/storage-emulation.md). Beside
    // it, the same volume answered by go-fuse's server (--serve go-fuse), measured alternately, for the ratio.
    vol = await createTestVolume(path.join(dir, 'cost'), { params: serverParams(gp3Model()), sizeBytes: 1024 * 2 ** 20, powerCuts: false });
    goFuse = await createTestVolume(path.join(dir, 'cost-go-fuse'), { params: serverParams(gp3Model()), sizeBytes: 1024 * 2 ** 20, powerCuts: false, serve: 'go-fuse' });
    const servers: [string, TestVolume][] = [
      ['', vol],
      [', go-fuse\'s server', goFuse],
    ];
    // Each volume's measured region written once first (model off), as a run's volume holds its data set: a read of a
    // page never written would cost the server a page fault on its store that no run's read pays.
    for (const [, v] of servers) {
      await v.control.setModel(false);
      await runFio({ name: 'fill', filename: `/dev/${v.loop.name}`, size: '512M', bs: '1M', rw: 'write', direct: 1, ioengine: 'libaio', iodepth: 4 });
      await v.control.setModel(true);
    }
    for (const rw of ['randread', 'randwrite']) {
      rows.push(await measureCost('raw backing (loop over tmpfs)', path.basename(raw), rw, null));
      for (const [which, v] of servers) {
        await v.control.setModel(true);
        rows.push(await measureCost(`modelled gp3 (3,000 IOPS)${which}`, v.loop.name, rw, async () => (await v.control.stats()).cpuSeconds));
      }
      for (const [which, v] of servers) {
        await v.control.setModel(false);
        rows.push(await measureCost(`modelled volume, model off${which}`, v.loop.name, rw, async () => (await v.control.stats()).cpuSeconds));
        await v.control.setModel(true);
      }
    }
  } finally {
    await vol?.remove();
    await goFuse?.remove();
    if (rawLoop) await detachLoop(rawLoop);
    await runProcess('umount', [tmpfs], { okExitCodes: [0, 32] });
  }
  return rows;
}

interface ZerosRow {
  buffers: 'zeros' | 'data';
  seconds: number;
  serverCpuSecondsPerGiB: number;
}

/** Writes 1 GiB of zeros, then 1 GiB of data, each onto space of the volume never written before (model off). */
async function zeros(dir: string): Promise<ZerosRow[]> {
  const rows: ZerosRow[] = [];
  let vol: TestVolume | null = null;
  try {
    vol = await createTestVolume(path.join(dir, 'zeros'), { params: serverParams(gp3Model()), sizeBytes: 2 * 2 ** 30, modelOff: true });
    const server = async () => (await vol!.control.stats()).cpuSeconds;
    for (const [i, buffers] of (['zeros', 'data'] as const).entries()) {
      // fio's zero_buffers writes zeros; without it, fio fills each buffer with random data once (refill_buffers off).
      const job: FioJob = { name: `zeros-${buffers}`, filename: `/dev/${vol.loop.name}`, offset: `${i}G`, size: '1G', bs: '1M', rw: 'write', direct: 1, ioengine: 'libaio', iodepth: 4, ...(buffers === 'zeros' ? { zero_buffers: 1 } : {}) };
      const s0 = await server();
      const t0 = performance.now();
      await runFio(job);
      rows.push({ buffers, seconds: (performance.now() - t0) / 1000, serverCpuSecondsPerGiB: (await server()) - s0 });
    }
  } finally {
    await vol?.remove();
  }
  return rows;
}

async function main(): Promise<void> {
  if (!volumeSupport.ok) throw new Error(`cannot run: ${volumeSupport.reason}`);
  if (!detectCgroups().kind) throw new Error('cannot run: the buffered-writer pattern needs a memory cgroup');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-volume-bench-'));
  chmodSync(dir, 0o755);
  registerLabRoot(dir);
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  try {
    console.log(`load average before: ${load}; ${os.cpus().length} cores`);
    const results = PARTS.has('fidelity') ? await fidelity(dir) : [];
    if (results.length) console.log(`\nvolume fidelity: ${SECONDS} s a pattern\n${fidelityTable(results).join('\n')}`);
    const bad = results.filter((r) => !r.accounting.ok);
    for (const r of bad) console.log(`ACCOUNTING FAILED ${r.pattern}: ${r.accounting.detail}`);
    const rows = PARTS.has('cost') ? await cost(dir) : [];
    if (rows.length) console.log(`\nvolume cost: fio randread / randwrite 8 KiB QD 32, ${COST_SECONDS} s each, side by side`);
    const f = (v: number, d = 0) => v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
    if (rows.length) console.log('| path | pattern | IOPS | mean latency | server CPU | server CPU per 3,000 IOPS | machine CPU per I/O |\n|---|---|---|---|---|---|---|');
    for (const r of rows)
      console.log(
        `| ${r.path} | ${r.rw} | ${f(r.iops)} | ${f(r.meanLatencyMs, 3)} ms | ${r.serverCores === null ? '–' : `${f(100 * r.serverCores, 1)} % of a core`} | ${r.serverCores === null ? '–' : `${f((100 * r.serverCores * 3000) / r.iops, 1)} % of a core`} | ${f((1e6 * r.machineCores) / r.iops, 1)} µs |`,
      );
    const per3000 = (r: CostRow) => (r.serverCores! * 3000) / r.iops;
    const costs = rows.filter((r) => r.serverCores !== null && !r.path.includes('go-fuse')).map(per3000);
    if (costs.length) console.log(`\nthe server's CPU per 3,000 IOPS, at worst: ${f(100 * Math.max(...costs), 1)} % of a core (target: at most 10 %)`);
    for (const r of rows.filter((x) => x.path.startsWith('modelled gp3') && !x.path.includes('go-fuse'))) {
      const other = rows.find((x) => x.rw === r.rw && x.path === `${r.path}, go-fuse's server`);
      if (other) console.log(`${r.rw} at the budget: the server's own loop spends ${f(per3000(r) / per3000(other), 2)} times go-fuse's server's CPU an I/O`);
    }
    const zeroRows = PARTS.has('zeros') ? await zeros(dir) : [];
    if (zeroRows.length) {
      console.log('\nvolume writes onto fresh space, model off: 1 GiB sequential, direct I/O, 1 MiB at QD 4, side by side');
      console.log('| buffers | seconds | server CPU seconds per GiB |');
      console.log('|---|---|---|');
      for (const r of zeroRows) console.log(`| ${r.buffers} | ${f(r.seconds, 2)} | ${f(r.serverCpuSecondsPerGiB, 2)} |`);
      const [z, d] = zeroRows;
      console.log(`zeros cost ${f(z.serverCpuSecondsPerGiB / d.serverCpuSecondsPerGiB, 2)} times what data costs the server`);
    }
    console.log(`load average after: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
    if (bad.length) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
