/**
 * The storage-lab command tree (commander): every command, its options and arguments. Actions load their modules
 * lazily. Built by a function, so the CLI parses argv with it and a test can check the README's commands against the
 * same tree without running any action (test/e2e/readme-commands.test.ts).
 */
import { Command } from 'commander';
import { PredictTargetSchema } from '../common/model/predict';
import { PRESET_NAMES } from '../common/input/presets';

/** A fresh command tree of the CLI. */
export function buildProgram(): Command {
  const program = new Command('storage-lab')
    .description('Durable, reproducible PostgreSQL storage experiments on Temporal')
    .showHelpAfterError();

  const collect = (value: string, previous: string[]) => [...previous, value];

  program
    .command('run')
    .description('run an experiment (a preset, a spec file, or both with overrides)')
    .option('-p, --preset <name>', `preset: ${PRESET_NAMES.join(', ')}`)
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
    .description('stage, steps, percent and ETA of a run')
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

  const datasets = program.command('datasets').description('published data sets: loaded once, restored onto other hosts and later runs');
  datasets
    .command('list')
    .description('key, state, rows, sizes, load and publish seconds, publisher and expiry of every set')
    .option('--store-path <path>', 'a folder store below the backups folder (a spec\'s durability.backupStore.path)')
    .option('--s3-bucket <bucket>', 'an S3 store\'s bucket (a spec\'s durability.backupStore.bucket)')
    .option('--s3-prefix <prefix>', 'its key prefix (default storage-lab/backups)')
    .option('--s3-region <region>', 'its region (default us-east-1)')
    .option('--s3-endpoint <url>', 'an S3-compatible endpoint (unset on AWS)')
    .option('--json', 'print the sets as JSON')
    .action(async (opts) => {
      await (await import('./commands/datasets')).datasetsListCommand(opts);
    });
  datasets
    .command('rm <keys...>')
    .description('remove data sets (manifest first, so no run starts restoring one)')
    .option('--store-path <path>', 'a folder store below the backups folder')
    .option('--s3-bucket <bucket>', 'an S3 store\'s bucket')
    .option('--s3-prefix <prefix>', 'its key prefix (default storage-lab/backups)')
    .option('--s3-region <region>', 'its region (default us-east-1)')
    .option('--s3-endpoint <url>', 'an S3-compatible endpoint (unset on AWS)')
    .option('--force', 'remove a set another run is still building')
    .action(async (keys: string[], opts) => {
      await (await import('./commands/datasets')).datasetsRmCommand(keys, opts);
    });

  const schedule = program.command('schedule').description('Temporal Schedules that start nightly regressions, experiments and drills');
  schedule
    .command('create <name>')
    .description('create a schedule (cron in UTC; overlap policy SKIP)')
    .requiredOption('--cron <expr>', "cron expression, e.g. '0 2 * * *' (02:00 UTC every day)")
    .option('--workflow <name>', 'what it starts: nightly, experiment, restore-drill, failover-drill, partition-drill, power-cut-drill, sweep, diagnose', 'nightly')
    .option('-p, --preset <name>', 'preset of the run (nightly: default nightly)')
    .option('-s, --spec <file>', 'JSON input file (fields override the preset)')
    .option('--set <path=value>', 'override one field, e.g. --set regression.minEffect=0.2 (repeatable)', collect, [])
    .option('--note <text>', 'a note shown with the schedule')
    .option('--paused', 'create it paused')
    .action(async (name: string, opts) => (await import('./commands/schedule')).scheduleCreateCommand(name, opts));
  schedule
    .command('list')
    .description('schedules with their next and last runs')
    .action(async () => (await import('./commands/schedule')).scheduleListCommand());
  schedule
    .command('pause <name>')
    .option('--note <text>', 'why')
    .description('stop starting runs until unpaused')
    .action(async (name: string, opts) => (await import('./commands/schedule')).schedulePauseCommand(name, opts));
  schedule
    .command('unpause <name>')
    .option('--note <text>', 'why')
    .description('start runs on the calendar again')
    .action(async (name: string, opts) => (await import('./commands/schedule')).scheduleUnpauseCommand(name, opts));
  schedule
    .command('trigger <name>')
    .description('start a run now (skipped while the previous one still runs)')
    .action(async (name: string) => {
      await (await import('./commands/schedule')).scheduleTriggerCommand(name);
    });
  schedule
    .command('delete <name>')
    .description('delete a schedule (its runs are not touched)')
    .action(async (name: string) => (await import('./commands/schedule')).scheduleDeleteCommand(name));

  const history = program
    .command('history')
    .description('runs of a preset by environment: median TPS per class and the regression verdict')
    .option('-p, --preset <name>', 'only this preset')
    .option('--env <key>', 'only this environment key')
    .option('--limit <n>', 'latest runs per preset', '20')
    .option('--json', 'the index entries as JSON')
    .action(async (opts) => {
      await (await import('./commands/history')).historyCommand(opts);
    });
  history
    .command('pin <runs...>')
    .description("pin runs as the baseline of their preset and environment (instead of the latest runs)")
    .action(async (runs: string[]) => {
      await (await import('./commands/history')).pinCommand(runs);
    });
  history
    .command('unpin <runs...>')
    .description('remove runs from the pinned baseline')
    .action(async (runs: string[]) => {
      await (await import('./commands/history')).unpinCommand(runs);
    });

  const drill = program.command('drill').description('durability drills: point-in-time restore onto a fresh host, quorum failover, network partition, power cut');
  for (const [kind, what] of [
    ['restore', 'restore a backup to a target between marker rows; RTO split, RPO, verification'],
    ['failover', 'kill -9 the primary of a quorum cluster; write downtime and lost acknowledged commits'],
    ['partition', 'cut the primary of a quorum cluster off its standbys; split-brain and lost acknowledged commits, RTO, the old primary fenced and rewound'],
    ['power-cut', "cut the power of a primary on a modelled volume at random moments; acknowledged commits lost, crash recovery time, pg_amcheck and checksums, the device's dropped writes"],
  ] as const) {
    const command = drill
      .command(kind)
      .description(what)
      .option('-p, --preset <name>', 'preset: ci, local-quick')
      .option('-s, --spec <file>', 'JSON drill input file (fields override the preset)')
      .option('--set <path=value>', 'override one field, e.g. --set rounds=5 (repeatable)', collect, [])
      .option('-w, --watch', 'show progress until the drill ends, then its figures')
      .option('--id <workflowId>', 'workflow id (default: drill-<kind>-<time>)');
    if (kind === 'restore') command.option('--compare-tools', 'run the drill with WAL-G, then with pgBackRest, and print one table of both');
    command.action(async (opts) => {
      await (await import('./commands/drill')).drillCommand(kind, opts);
    });
  }

  program
    .command('diagnose')
    .description('sample any PostgreSQL 12+ read-only and say what bounds it: storage-bound | cpu-bound | lock-bound | client-bound | idle')
    .requiredOption('--dsn <url>', 'postgresql://user@host:port/database (password from PGPASSWORD, PGPASSFILE or --password-env)')
    .option('--seconds <n>', 'how long to sample', '60')
    .option('--interval-ms <ms>', 'time between wait-event samples', '50')
    .option('--json', 'print the capture as JSON (predict --from takes it); the verdict line goes to stderr')
    .option('--html <file>', 'write the report as one self-contained HTML file')
    .option('--no-fsync-probe', 'skip pg_test_fsync beside the data directory (done only when the server runs here)')
    .option('--password-env <name>', 'environment variable that holds the password')
    .action(async (opts) => {
      await (await import('./commands/diagnose')).diagnoseCommand(opts);
    });

  program
    .command('captures')
    .description('the diagnose captures diagnoseWorkflow kept in the results store: verdict and evidence, oldest first')
    .option('--target <user@host:port/db>', 'only this server, as captures name it')
    .option('--json', 'the index entries as JSON')
    .option('--results-dir <dir>', 'results folder (default: the lab\'s)')
    .action(async (opts) => {
      await (await import('./commands/diagnose')).capturesCommand(opts);
    });

  program
    .command('predict')
    .description('predict TPS and latency of a measured run or capture on other storage and hosts (a closed queueing model)')
    .option('--from <run|file>', 'a run id, a result.json file, or a diagnose capture (diagnose --json)')
    .option('--class <name>', 'the run\'s storage class to take the demands from (default: its first)')
    .option('--target <json>', `target(s), e.g. '{"kind":"ebs","iops":6000,"throughputMiBps":250}' or @file; an array for several; fields: ${Object.keys(PredictTargetSchema.shape).join(', ')}`)
    .option('--reference', 'predict the published reference\'s gp3 and NVMe classes, each from the other\'s figures; with --from RUN, from that run\'s classes at the reference\'s scale')
    .option('--matrix <run|file>', 'predict every class of a run from every other (the predict-matrix preset\'s table): errors, intervals, baselines, goals')
    .option('--json', 'print the demands and predictions as JSON')
    .option('--results-dir <dir>', 'results folder (default: the lab\'s)')
    .action(async (opts) => {
      await (await import('./commands/predict')).predictCommand(opts);
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

  return program;
}
