/**
 * The shared IOPS budget on a real loop device in a real cgroup: with the kernel's separate read and write limits a
 * reader and a writer together get twice the budget; with the controller they get the budget (and a reader alone
 * gets nearly all of it). Real dd processes with direct I/O, 4 KiB each, one I/O at a time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHostCgroup, detectCgroups, ioCounters, joinScript, removeHostCgroup, setIoLimits, type HostCgroup } from '../../lib/cgroups';
import { describeLoop, detachLoop, type LoopDevice } from '../../lib/block-devices';
import { SharedIoBudget } from '../../lib/io-budget';
import { runProcess } from '../../lib/process-runner';

const support = detectCgroups();
const maybe = support.kind ? describe : describe.skip;
const BUDGET = 1000;
const MEASURE_MS = 3000;

maybe('a shared IOPS budget on a real device', () => {
  let dir: string;
  let loop: LoopDevice;
  let cg: HostCgroup;
  let procs: ChildProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'io-budget-'));
    const file = path.join(dir, 'volume.img');
    await runProcess('truncate', ['-s', String(256 * 1024 * 1024), file]);
    loop = describeLoop((await runProcess('losetup', ['--find', '--show', '--direct-io=on', file])).stdout.trim());
    cg = createHostCgroup(support.kind!, `io-budget-test-${process.pid}`, 256);
  });

  afterEach(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : null)));
    procs = [];
  });

  afterAll(async () => {
    if (cg) removeHostCgroup(cg);
    if (loop) await detachLoop(loop.device);
    rmSync(dir, { recursive: true, force: true });
  });

  /** dd inside the cgroup, one 4 KiB direct I/O at a time, until killed. */
  function dd(direction: 'read' | 'write'): void {
    const io = direction === 'read' ? `if=${loop.device} of=/dev/null iflag=direct` : `if=/dev/zero of=${loop.device} oflag=direct`;
    procs.push(spawn('sh', ['-c', `${joinScript(cg)} && exec dd ${io} bs=4k count=10000000 status=none`], { stdio: 'ignore' }));
  }

  /** Reads and writes per second the cgroup did on the device over MEASURE_MS, after a settling second. */
  async function measure(): Promise<{ reads: number; writes: number }> {
    await new Promise((r) => setTimeout(r, 1000));
    const a = ioCounters(cg, loop.majMin)!;
    await new Promise((r) => setTimeout(r, MEASURE_MS));
    const b = ioCounters(cg, loop.majMin)!;
    return { reads: ((b.reads - a.reads) * 1000) / MEASURE_MS, writes: ((b.writes - a.writes) * 1000) / MEASURE_MS };
  }

  it('separate limits (the kernel alone): a reader and a writer get the budget each', async () => {
    setIoLimits(cg, loop.majMin, BUDGET, 1024 ** 3);
    dd('read');
    dd('write');
    const r = await measure();
    console.log(`separate limits of ${BUDGET}: ${r.reads.toFixed(0)} reads/s + ${r.writes.toFixed(0)} writes/s`);
    expect(r.reads + r.writes).toBeGreaterThan(1.6 * BUDGET);
  });

  it('shared budget: a reader and a writer together get the budget, not twice it', async () => {
    const budget = new SharedIoBudget(cg, loop.majMin, BUDGET, 1024 ** 3);
    budget.start();
    try {
      dd('read');
      dd('write');
      const r = await measure();
      console.log(`shared budget of ${BUDGET}: ${r.reads.toFixed(0)} reads/s + ${r.writes.toFixed(0)} writes/s, ${budget.resplits} re-splits`);
      expect(r.reads + r.writes).toBeLessThan(1.1 * BUDGET);
      expect(r.reads + r.writes).toBeGreaterThan(0.8 * BUDGET);
    } finally {
      budget.stop();
    }
  });

  it('shared budget: a reader alone gets nearly all of it (the split follows demand)', async () => {
    const budget = new SharedIoBudget(cg, loop.majMin, BUDGET, 1024 ** 3);
    budget.start();
    try {
      dd('read');
      const r = await measure();
      console.log(`shared budget of ${BUDGET}, reads only: ${r.reads.toFixed(0)} reads/s, split ${JSON.stringify(budget.split)}`);
      expect(r.reads).toBeGreaterThan(0.8 * BUDGET);
      expect(r.reads).toBeLessThan(1.1 * BUDGET);
    } finally {
      budget.stop();
    }
  });
});
