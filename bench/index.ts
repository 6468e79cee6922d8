/**
 * `npm run bench`: every benchmark, one after the other (never in parallel: each compares two things side by side
 * on this machine, and a neighbour would skew one side), each with its defaults; run one directly to pass options.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

const BENCHMARKS = ['process-start', 'loader-vs-pgbench', 'sampler-overhead', 'verdict-error-rates', 'backup-tools', 'history-budget', 'volume-fidelity', 'prediction-coverage'];

let failed = 0;
for (const name of BENCHMARKS) {
  const script = path.join(__dirname, `${name}.js`);
  if (!existsSync(script)) continue;
  console.log(`\n=== ${name}`);
  const r = spawnSync(process.execPath, [script], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
