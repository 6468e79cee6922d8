/**
 * What a lab process costs to start: the CPU (user + system) of a fresh Node process that loads what each of the
 * lab's processes loads, beside the same with the AWS SDK's three clients loaded too (what every one of them loaded
 * before the SDK became a first-use import), in alternating rounds so a neighbour hurts both sides alike. The suite
 * starts over a hundred host agents and supervisors (docs/benchmarks.md, "Loading less"). Prints each process's
 * median CPU, both sides and their ratio.
 *   node dist/bench/process-start.js [--rounds 7]
 */
import { parseArgs } from 'node:util';
import { inFreshProcess } from '../test/helpers/fresh-process';
import { median } from './bench-host';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const ROUNDS = Number(values.rounds);
const AWS_SDK = ['@aws-sdk/client-ec2', '@aws-sdk/client-s3', '@aws-sdk/client-ssm'];

/** Each process by what it imports at start (its main aside: it would connect to Temporal). */
const PROCESSES: Record<string, string[]> = {
  'host supervisor': ['worker/host-supervisor'],
  'host agent': ['activities/host', 'infra/providers/local/host-config-file', 'lib/io-cap', '@temporalio/worker'],
  'control worker': ['worker/control-worker'],
};

/** CPU seconds of a fresh process that requires `modules` (a worker's main that throws is caught, its imports stay). */
function cpuOf(modules: string[]): number {
  return Number(inFreshProcess(modules, 'const u = process.cpuUsage(); process.stdout.write(String((u.user + u.system) / 1e6));'));
}

console.log(`process start, ${ROUNDS} alternating rounds each; CPU seconds (user + system), medians`);
console.log('| process | as the lab loads it | with the AWS SDK too | ratio |');
console.log('|---|---|---|---|');
for (const [name, modules] of Object.entries(PROCESSES)) {
  const lean: number[] = [];
  const withSdk: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    lean.push(cpuOf(modules));
    withSdk.push(cpuOf([...modules, ...AWS_SDK]));
  }
  const a = median(lean);
  const b = median(withSdk);
  console.log(`| ${name} | ${a.toFixed(3)} s | ${b.toFixed(3)} s | ${(a / b).toFixed(2)} |`);
}
