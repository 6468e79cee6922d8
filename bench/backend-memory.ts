/**
 * Memory per pgbench client, measured: a local Postgres and pgbench inside a memory cgroup of their own (root),
 * the lab's workload at a rising number of clients, and the cgroup's unreclaimable memory (anonymous pages plus
 * kernel memory: page tables, stacks, sockets) at its peak in each round. The slope over clients is the per-backend
 * figure the spec rules use (common/input/rules.ts, BACKEND_MEMORY); page cache is left out, it can be reclaimed.
 * Then the host agent (a Temporal worker, in the host's cgroup on every local host) is started against a throwaway
 * dev server and its own charge is measured once it polls.
 *   node dist/bench/backend-memory.js [--clients 8,64,128,256] [--seconds 8] [--scale 5] [--shared-buffers-mib 32]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadData } from '../activities/host/load';
import { runPgbench } from '../activities/host/pgbench';
import { RANDOM_UPDATE_SCRIPT } from '../common/input/presets';
import { createHostCgroup, detectCgroups, type HostCgroup } from '../lib/cgroups';
import { startThrowawayServer } from '../infra/temporal/dev-server';
import { startBenchHost } from './bench-host';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '8,64,128,256' },
    seconds: { type: 'string', default: '8' },
    scale: { type: 'string', default: '5' },
    'shared-buffers-mib': { type: 'string', default: '32' },
  },
});
const clientCounts = values.clients.split(',').map(Number);
const seconds = Number(values.seconds);
const scale = Number(values.scale);
const sharedBuffersMiB = Number(values['shared-buffers-mib']);
const MiB = 2 ** 20;

/** Unreclaimable bytes charged to the cgroup now: anonymous memory, shared memory (shared_buffers) and kernel memory. */
function unreclaimable(cg: HostCgroup): { anon: number; shmem: number; kernel: number } {
  const stat = readFileSync(path.join(cg.memoryDir, 'memory.stat'), 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(stat)?.[1] ?? NaN);
  if (cg.kind === 'v1')
    return {
      anon: field('rss'),
      shmem: field('shmem'),
      kernel: Number(readFileSync(path.join(cg.memoryDir, 'memory.kmem.usage_in_bytes'), 'utf8')),
    };
  return { anon: field('anon'), shmem: field('shmem'), kernel: field('kernel') };
}

/** Starts the host agent in the cgroup and returns its charge (MiB) 5 s after it polls; then stops it. */
async function measureAgent(cg: HostCgroup, config: object, address: string): Promise<number> {
  const file = path.join(os.tmpdir(), `storage-lab-bench-agent-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(config));
  const charged = () => {
    const u = unreclaimable(cg);
    return (u.anon + u.kernel) / MiB;
  };
  const before = charged();
  const agent = spawn(process.execPath, [path.join(__dirname, '..', 'worker', 'host-agent.js'), file], {
    env: { ...process.env, TEMPORAL_ADDRESS: address },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the host agent did not poll within 60 s')), 60_000);
      agent.stdout.on('data', (b: Buffer) => {
        if (b.toString().includes('polling')) {
          clearTimeout(timer);
          resolve();
        }
      });
      agent.on('exit', (code) => reject(new Error(`the host agent exited with code ${code}`)));
    });
    await new Promise((r) => setTimeout(r, 5_000));
    return charged() - before;
  } finally {
    agent.kill('SIGKILL');
    rmSync(file, { force: true });
  }
}

/** Least-squares slope and intercept of y over x. */
function fit(xs: number[], ys: number[]): { slope: number; intercept: number } {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const slope = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  return { slope, intercept: my - slope * mx };
}

async function main(): Promise<void> {
  const support = detectCgroups();
  if (!support.kind) throw new Error(`a memory cgroup is needed: ${support.reason}`);
  // The dev server starts before this process joins the cgroup: it is not part of a host.
  const serverDir = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-bench-memory-'));
  const { server } = await startThrowawayServer(serverDir);
  // Generous, so the limit never reclaims or kills during the measurement; the figure is what the clients use.
  const cg = createHostCgroup(support.kind, `bench-memory-${process.pid}`, 4096);
  // This process joins first, so Postgres (started by pg_ctl) and every pgbench it runs are children inside.
  for (const dir of cg.dirs) writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
  const maxClients = Math.max(...clientCounts);
  const host = await startBenchHost('memory', {
    shared_buffers: `${sharedBuffersMiB}MB`,
    max_connections: String(maxClients + 20),
    max_wal_size: '1024MB',
    wal_level: 'replica',
  });
  const hostId = host.deps.config.hostId;
  let agentMiB = NaN;
  const rows: { clients: number; anon: number; shmem: number; kernel: number }[] = [];
  try {
    console.log(`backend memory: PostgreSQL ${host.deps.config.pgBinDir}, scale ${scale}, shared_buffers ${sharedBuffersMiB} MiB, ${seconds} s per round, cgroup ${support.kind}`);
    await host.run(loadData, { hostId, scale, chunkRows: 100_000, writers: 2 });
    const input = { hostId, label: 'bench', scale, threads: 2, durationSeconds: seconds, script: RANDOM_UPDATE_SCRIPT };
    await host.run(runPgbench, { ...input, clients: 8 }); // Warm shared_buffers, so its pages are charged before round one.
    for (const clients of clientCounts) {
      const peak = { anon: 0, shmem: 0, kernel: 0 };
      const poll = setInterval(() => {
        const now = unreclaimable(cg);
        peak.anon = Math.max(peak.anon, now.anon);
        peak.shmem = Math.max(peak.shmem, now.shmem);
        peak.kernel = Math.max(peak.kernel, now.kernel);
      }, 100);
      const run = await host.run(runPgbench, { ...input, clients }).finally(() => clearInterval(poll));
      rows.push({ clients, ...peak });
      console.log(
        `  ${String(clients).padStart(4)} clients: ${run.tps.toFixed(0)} TPS; peak anon ${(peak.anon / MiB).toFixed(1)} MiB, shmem ${(peak.shmem / MiB).toFixed(1)} MiB, kernel ${(peak.kernel / MiB).toFixed(1)} MiB`,
      );
    }
    agentMiB = await measureAgent(cg, host.deps.config, server.address);
  } finally {
    await host.close();
    server.process.kill('SIGTERM');
    rmSync(serverDir, { recursive: true, force: true });
    // Back to where this process came from (host cgroups sit at <own cgroup>/storage-lab/<id>), so this one can go.
    for (const dir of cg.dirs) writeFileSync(path.join(path.dirname(path.dirname(dir)), 'cgroup.procs'), String(process.pid));
    for (const dir of cg.dirs) if (existsSync(dir)) rmdirSync(dir);
  }
  const xs = rows.map((r) => r.clients);
  const anon = fit(xs, rows.map((r) => r.anon / MiB));
  const kernel = fit(xs, rows.map((r) => r.kernel / MiB));
  const total = fit(xs, rows.map((r) => (r.anon + r.kernel) / MiB));
  console.log(`host agent: ${agentMiB.toFixed(1)} MiB once polling (anonymous + kernel)`);
  console.log(
    `per client: ${total.slope.toFixed(2)} MiB (anonymous ${anon.slope.toFixed(2)} + kernel ${kernel.slope.toFixed(2)}); at 0 clients ${total.intercept.toFixed(0)} MiB besides shared memory (this bench process included)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
