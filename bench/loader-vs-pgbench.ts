/**
 * The lab's resumable loader against `pgbench -i -I dtGvp` (drop, tables, server-side generate, vacuum,
 * primary keys) at the same scale, on the same Postgres, in one run, alternating rounds so a noisy neighbour hurts
 * both alike. Prints each round and the ratio of medians (pgbench time / lab time; target >= 1.0).
 *   node dist/bench/loader-vs-pgbench.js [--scale 20] [--rounds 3] [--writers 2] [--chunk-rows 100000]
 */
import { parseArgs } from 'node:util';
import { loadData } from '../activities/host/load';
import { libpqEnv, withConnection } from '../lib/pg';
import { runProcess } from '../lib/process-runner';
import { LAB_DATABASE } from '../common/core/names';
import { median, startBenchHost, type BenchHost } from './bench-host';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    writers: { type: 'string', default: '2' },
    'chunk-rows': { type: 'string', default: '100000' },
  },
});
const scale = Number(values.scale);
const rounds = Number(values.rounds);
const writers = Number(values.writers);
const chunkRows = Number(values['chunk-rows']);

/** Same server settings as the local presets, so the comparison is about the loaders, not the server. */
const SETTINGS = { shared_buffers: '128MB', max_wal_size: '4096MB', wal_level: 'replica', max_connections: '50' };

async function dropAll(host: BenchHost): Promise<void> {
  await withConnection(host.deps.config, (c) =>
    c.query('DROP TABLE IF EXISTS public.pgbench_accounts, public.pgbench_branches, public.pgbench_tellers, public.pgbench_history; DROP SCHEMA IF EXISTS storage_lab CASCADE'),
  );
  await withConnection(host.deps.config, (c) => c.query('CHECKPOINT'));
}

async function timePgbench(host: BenchHost): Promise<number> {
  await dropAll(host);
  const t0 = process.hrtime.bigint();
  await runProcess('pgbench', ['-i', '-I', 'dtGvp', '-s', String(scale), '-q', LAB_DATABASE], {
    env: libpqEnv(host.deps.config),
  });
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function timeLab(host: BenchHost): Promise<number> {
  await dropAll(host);
  const t0 = process.hrtime.bigint();
  await host.run(loadData, { hostId: host.deps.config.hostId, scale, chunkRows, writers });
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function main(): Promise<void> {
  console.log(`loader benchmark: scale ${scale} (${(scale * 1e5).toLocaleString('en-US')} rows), ${rounds} rounds, lab writers ${writers}, chunk ${chunkRows} rows`);
  const host = await startBenchHost('loader', SETTINGS);
  const pg: number[] = [];
  const lab: number[] = [];
  try {
    for (let r = 1; r <= rounds; r++) {
      // Alternate which goes first, so warm caches and background writeback favour neither.
      const order = r % 2 ? ['pgbench', 'lab'] : ['lab', 'pgbench'];
      for (const which of order) {
        const s = which === 'pgbench' ? await timePgbench(host) : await timeLab(host);
        (which === 'pgbench' ? pg : lab).push(s);
        console.log(`  round ${r}: ${which.padEnd(7)} ${s.toFixed(2)} s`);
      }
    }
  } finally {
    await host.close();
  }
  const ratio = median(pg) / median(lab);
  console.log(`median: pgbench -i -I dtGvp ${median(pg).toFixed(2)} s, lab loader ${median(lab).toFixed(2)} s`);
  console.log(`ratio (pgbench time / lab time): ${ratio.toFixed(2)}  (target >= 1.0: ${ratio >= 1 ? 'met' : 'NOT met'})`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
