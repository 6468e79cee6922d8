#!/usr/bin/env node
/**
 * storage-lab: start and watch experiments, drills and schedules; manage the local dev services.
 * Commands load lazily; one top-level catch maps a user error to exit code 2 and an internal one to a stack trace.
 */
import { Command } from 'commander';
import { UserError } from './errors';

const program = new Command('storage-lab')
  .description('Durable, reproducible PostgreSQL storage experiments on Temporal')
  .showHelpAfterError();

const collect = (value: string, previous: string[]) => [...previous, value];

program
  .command('run')
  .description('run an experiment (a preset, a spec file, or both with overrides)')
  .option('-p, --preset <name>', 'preset: local-quick, ci, nightly, seed-full')
  .option('-s, --spec <file>', 'JSON spec file (fields override the preset)')
  .option('--set <path=value>', 'override one field, e.g. --set workload.clients=32 (repeatable)', collect, [])
  .option('-o, --out <dir>', 'copy result.json and the report here when the run ends')
  .option('-w, --watch', 'show progress bars until the run ends')
  .option('--id <workflowId>', 'workflow id (default: exp-<name>-<time>)')
  .option('--dry-run', 'print the plan and the cost estimate; create nothing')
  .action(async (opts) => {
    await (await import('./commands/run')).runCommand(opts);
  });

program
  .command('status <runId>')
  .description('phase, percent and ETA of a run')
  .action(async (runId: string) => (await import('./commands/status')).statusCommand(runId));

program
  .command('watch <runId>')
  .description('progress bars for a run until it ends')
  .action(async (runId: string) => (await import('./commands/status')).watchCommand(runId));

program
  .command('report <runId>')
  .description('render report.md and report.html again from the run\'s stored result.json')
  .option('--results-dir <dir>', 'results folder (default: the lab\'s)')
  .action(async (runId: string, opts) => {
    await (await import('./commands/report')).reportCommand(runId, opts);
  });

program
  .command('sweep')
  .description('remove lab hosts (EC2 instances and volumes, local hosts) whose run is over or expired')
  .option('--dry-run', 'list what would be removed; remove nothing')
  .action(async (opts) => {
    await (await import('./commands/sweep')).sweepCommand(opts);
  });

const dev = program.command('dev').description('the local Temporal dev server and control worker');
dev
  .command('up')
  .description('start them (idempotent)')
  .action(async () => (await import('./commands/dev')).devUpCommand());
dev
  .command('down')
  .description('stop them')
  .action(async () => (await import('./commands/dev')).devDownCommand());
dev
  .command('status')
  .description('show whether they run')
  .action(async () => (await import('./commands/dev')).devStatusCommand());

program
  .command('demo')
  .description('dev up, then run local-quick end to end with progress, then print the report path and the UI URL')
  .option('-p, --preset <name>', 'preset to run', 'local-quick')
  .action(async (opts) => (await import('./commands/demo')).demoCommand(opts));

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof UserError) {
    console.error(`storage-lab: ${err.message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
