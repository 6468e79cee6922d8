/**
 * The sampler's cost: pgbench TPS with and without the sampler on its own connection, on the same
 * local Postgres, in one run, in alternating pairs of short rounds so noise (a neighbour, a checkpoint) hurts both
 * alike. Both sides run the lab's own runPgbench activity; only `sampler` differs. Prints each pair, the median of
 * the paired TPS ratios, and the sampler backend's own CPU share (target: overhead at most 3 %).
 *   node dist/bench/sampler-overhead.js [--rounds 6] [--seconds 10] [--clients 16] [--scale 20] [--interval-ms 50]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { loadData } from '../activities/host/load';
import { runPgbench } from '../activities/host/pgbench';
import { resolveSpec } from '../common/input/resolve';
import { median, startBenchHost } from './bench-host';

const preset = resolveSpec({ preset: 'local-quick' });
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '10' },
    clients: { type: 'string', default: '16' },
    scale: { type: 'string', default: '20' },
    'interval-ms': { type: 'string', default: String(preset.sampler.intervalMs) },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const clients = Number(values.clients);
const scale = Number(values.scale);
const intervalMs = Number(values['interval-ms']);
/** The overhead target of the issue: at most 3 % of TPS. */
const TARGET = 0.03;

/** The data fits in memory, so pgbench is CPU-bound: the sampler's worst case, as it competes for the same cores. */
const SETTINGS = { shared_buffers: '128MB', max_wal_size: '4096MB', wal_level: 'replica', max_connections: String(clients + 20), track_io_timing: 'on' };

async function main(): Promise<void> {
  console.log(
    `sampler overhead: pgbench scale ${scale}, ${clients} clients, ${rounds} pairs of ${seconds} s rounds, sampling every ${intervalMs} ms (local-quick's interval); load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`,
  );
  const host = await startBenchHost('sampler', SETTINGS);
  const hostId = host.deps.config.hostId;
  const ratios: number[] = [];
  const cpuShares: number[] = [];
  const rates: number[] = [];
  const agentShares: number[] = [];
  try {
    await host.run(loadData, { hostId, scale, chunkRows: 100_000, writers: 2 });
    const input = { hostId, label: 'bench', scale, clients, threads: 2, durationSeconds: seconds, script: preset.workload.script };
    await host.run(runPgbench, { ...input, durationSeconds: 2 * seconds }); // Warm the caches for both sides.
    for (let r = 1; r <= rounds; r++) {
      const tps: Record<string, number> = {};
      const agentCpuSeconds: Record<string, number> = {};
      let sampledHostCpuSeconds = NaN;
      // Alternate which goes first, so a warming cache or a checkpoint favours neither.
      for (const sampled of r % 2 ? [false, true] : [true, false]) {
        const cpuBefore = process.cpuUsage();
        const run = await host.run(runPgbench, { ...input, sampler: sampled ? { intervalMs } : undefined });
        const cpu = process.cpuUsage(cpuBefore);
        tps[String(sampled)] = run.tps;
        // The agent's side of the sampler (the pg client, timers, /proc reads) runs in this process.
        agentCpuSeconds[String(sampled)] = (cpu.user + cpu.system) / 1e6;
        const d = run.diagnostics;
        if (d) {
          rates.push(d.samplesPerSecond);
          if (d.samplerCpuSeconds !== null && d.cpu) cpuShares.push(d.samplerCpuSeconds / d.cpu.seconds);
          if (d.cpu) sampledHostCpuSeconds = d.cpu.seconds;
        }
      }
      ratios.push(tps.true / tps.false);
      agentShares.push((agentCpuSeconds.true - agentCpuSeconds.false) / sampledHostCpuSeconds);
      console.log(
        `  pair ${r}: without ${tps.false.toFixed(0)} TPS, with ${tps.true.toFixed(0)} TPS (ratio ${(tps.true / tps.false).toFixed(3)}, ${rates[rates.length - 1].toFixed(1)} samples/s, sampler backend ${(100 * (cpuShares[cpuShares.length - 1] ?? NaN)).toFixed(2)} % of host CPU; agent CPU ${agentCpuSeconds.false.toFixed(2)} s without, ${agentCpuSeconds.true.toFixed(2)} s with)`,
      );
    }
  } finally {
    await host.close();
  }
  const ratio = median(ratios);
  const overhead = 1 - ratio;
  const sorted = [...ratios].sort((a, b) => a - b);
  // Half the spread of the middle half of the pairs: when it exceeds the target, the TPS ratio cannot tell.
  const noise = (sorted[Math.floor((3 * (sorted.length - 1)) / 4)] - sorted[Math.floor((sorted.length - 1) / 4)]) / 2;
  const verdict = noise > TARGET ? `inconclusive: run-to-run noise ±${(noise * 100).toFixed(1)} % is wider than the target` : overhead <= TARGET ? 'met' : 'NOT met';
  console.log(`paired TPS ratios (with / without): ${ratios.map((x) => x.toFixed(3)).join(' ')}`);
  console.log(`median ratio ${ratio.toFixed(3)}: TPS overhead ${(overhead * 100).toFixed(1)} % (target <= ${TARGET * 100} %: ${verdict})`);
  console.log(
    `sampler backend CPU: ${(100 * median(cpuShares)).toFixed(2)} % of the host's CPU seconds (target <= ${TARGET * 100} %: ${median(cpuShares) <= TARGET ? 'met' : 'NOT met'}); ${median(rates).toFixed(1)} samples/s`,
  );
  console.log(
    `agent-side sampler CPU (this process, with minus without): ${(100 * median(agentShares)).toFixed(2)} % of the host's CPU seconds`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
