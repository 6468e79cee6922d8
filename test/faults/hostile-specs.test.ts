/**
 * Hostile and malformed specs (issue 9), through every way a run starts: a workflow start on the real server with
 * the real control worker (what the UI and schedules do), `storage-lab run|drill --spec FILE`, and the official
 * `temporal workflow start --input-file`. Every spec below is refused before any host exists: the failure names the
 * field and the fix and is non-retryable; nothing but the preflight ran, no child workflow started, nothing was
 * created; the CLI exits 2 without starting a workflow; and the programs the hostile ones ask for never ran (each
 * would touch a marker file in a folder anyone may write).
 */
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../lib/process-runner';
import { buildProgram } from '../../client/program';
import { cliFailure } from '../../client/errors';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { temporalBinary } from '../../infra/temporal/dev-server';
import { startTestLab, type TestLab } from '../helpers/lab';
import { serverAddress, uniqueId } from '../helpers/temporal';

type FailureType = 'InvalidSpecError' | 'PreflightError';

interface Case {
  name: string;
  input: unknown;
  /** The dotted path the failure must name, as "<path>:". */
  field: string;
  /** A piece of the fix the message must suggest. */
  fix: string;
  type?: FailureType;
  workflow?: string;
  /** The one activity it may run: the preflight that found the problem with the real tools or this environment. */
  preflight?: 'preflight' | 'preflightDrill';
  /** False for checks of the control worker's own environment, which the CLI cannot make for it. */
  cli?: boolean;
}

/** Programs the hostile specs ask for would touch a file here; nobody may, so the folder must stay empty. */
const markers = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR ?? '/tmp', 'hostile-markers-'));
chmodSync(markers, 0o1777);
let markerCount = 0;
const marker = () => path.join(markers, `ran-${++markerCount}`);

const ci = (over: Record<string, unknown>) => ({ preset: 'ci', ...over });
const withSettings = (settings: Record<string, unknown>) => ci({ postgres: { settings } });
const UPDATE = 'UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1;';
const refused = (name: string, value: unknown, fix = 'remove it'): Case => ({
  name: `refused setting ${name}`,
  input: withSettings({ [name]: value }),
  field: `postgres.settings.${name}`,
  fix,
});
const tool = (c: Omit<Case, 'preflight'>): Case => ({ ...c, preflight: c.workflow === WORKFLOW_TYPES.restoreDrill || c.workflow === WORKFLOW_TYPES.failoverDrill ? 'preflightDrill' : 'preflight' });

const CASES: Case[] = [
  // The 28 malformed specs of before.
  { name: 'unknown preset', input: { preset: 'huge' }, field: 'preset', fix: 'use one of' },
  { name: 'not an object (a bare string in the UI form)', input: 'ci', field: '(spec)', fix: '{"preset":"local-quick"}' },
  { name: 'unknown top-level field', input: ci({ clients: 8 }), field: 'clients', fix: 'remove it or check its spelling' },
  { name: 'zero clients', input: ci({ workload: { clients: 0 } }), field: 'workload.clients', fix: 'at least 1' },
  { name: 'more threads than clients', input: ci({ workload: { threads: 16 } }), field: 'workload.threads', fix: 'threads <= clients' },
  { name: 'duration as text', input: ci({ workload: { durationSeconds: 'ten' } }), field: 'workload.durationSeconds', fix: 'whole number' },
  { name: 'empty pgbench script', input: ci({ workload: { script: '' } }), field: 'workload.script', fix: 'must not be empty' },
  { name: 'scale 0', input: ci({ data: { scale: 0 } }), field: 'data.scale', fix: 'at least 1' },
  { name: 'tiny load chunks', input: ci({ data: { chunkRows: 10 } }), field: 'data.chunkRows', fix: 'at least 1000' },
  { name: 'EBS class on the local provider', input: ci({ storageClasses: { gp3: { kind: 'ebs' } } }), field: 'storageClasses.gp3.kind', fix: 'use local-disk or emulated-ebs' },
  { name: 'IOPS on a local disk', input: ci({ storageClasses: { 'local-disk': { iops: 3000 } } }), field: 'storageClasses.local-disk.iops', fix: 'remove them' },
  { name: 'IOPS below any modelled volume', input: ci({ storageClasses: { gp3: { iops: 5 } } }), field: 'storageClasses.gp3.iops', fix: 'at least 10' },
  { name: 'storage class name with capitals', input: ci({ storageClasses: { Fast_Disk: { kind: 'local-disk' } } }), field: 'storageClasses.Fast_Disk', fix: 'lower-case' },
  { name: 'compare names a missing class', input: ci({ compare: { baseline: 'nvme', candidate: 'gp3' } }), field: 'compare.baseline', fix: 'use one of' },
  { name: 'memory limit below the minimum', input: ci({ host: { memoryLimitMiB: 32 } }), field: 'host.memoryLimitMiB', fix: 'at least 64' },
  { name: 'shared_buffers above the memory limit', input: ci({ postgres: { sharedBuffersMiB: 1024 } }), field: 'host.memoryLimitMiB', fix: 'raise host.memoryLimitMiB' },
  { name: 'settings key with a space', input: withSettings({ 'work mem': '4MB' }), field: 'postgres.settings.work mem', fix: 'lower-case letters, underscores' },
  { name: 'sampler too fast', input: ci({ sampler: { intervalMs: 1 } }), field: 'sampler.intervalMs', fix: 'at least 10' },
  { name: 'too many clusters per class', input: ci({ clustersPerClass: 100 }), field: 'clustersPerClass', fix: 'at most 16' },
  { name: 'negative expiry', input: ci({ expiresAfterHours: -1 }), field: 'expiresAfterHours', fix: '>0' },
  { name: 'aws provider without an aws section', input: ci({ provider: 'aws', storageClasses: { 'local-disk': null, gp3: { kind: 'ebs' } } }), field: 'aws', fix: 'needs an aws section' },
  { name: 'PostgreSQL version not installed here', input: ci({ postgres: { version: 13 } }), field: 'postgres.version', fix: 'install it', type: 'PreflightError', preflight: 'preflight', cli: false },
  { name: 'memory limit beyond this machine', input: ci({ host: { memoryLimitMiB: 900_000 } }), field: 'host.memoryLimitMiB', fix: 'lower host.memoryLimitMiB', type: 'PreflightError', preflight: 'preflight', cli: false },
  { name: 'nightly: bad regression option', input: { preset: 'ci', regression: { minEffect: 3 } }, field: 'regression.minEffect', fix: 'must be between 0 and 1', workflow: WORKFLOW_TYPES.nightlyRegression },
  { name: 'restore drill: unknown recovery target', input: { preset: 'ci', target: 'yesterday' }, field: 'target', fix: 'must be "time", "lsn" or "latest"', workflow: WORKFLOW_TYPES.restoreDrill },
  { name: 'restore drill: no table to checksum', input: { preset: 'ci', checksumTables: [] }, field: 'checksumTables', fix: 'at least one table', workflow: WORKFLOW_TYPES.restoreDrill },
  { name: 'failover drill: zero rounds', input: { preset: 'ci', rounds: 0 }, field: 'rounds', fix: 'at least 1', workflow: WORKFLOW_TYPES.failoverDrill },
  { name: 'nightly: bad spec field', input: { preset: 'ci', data: { scale: -5 } }, field: 'data.scale', fix: 'at least 1', workflow: WORKFLOW_TYPES.nightlyRegression },

  // Scripts that run programs, or that pgbench refuses.
  { name: '\\shell touching a marker', input: ci({ workload: { script: `\\shell touch ${marker()}\n${UPDATE}` } }), field: 'workload.script', fix: '\\shell is refused' },
  { name: '\\setshell', input: ci({ workload: { script: `\\setshell x touch ${marker()}\n${UPDATE}` } }), field: 'workload.script', fix: '\\setshell is refused' },
  { name: '\\SHELL after SQL on one line', input: ci({ workload: { script: `${UPDATE} \\SHELL touch ${marker()}` } }), field: 'workload.script', fix: '\\SHELL is refused' },
  { name: 'nightly: \\shell', input: { preset: 'ci', workload: { script: `\\shell touch ${marker()}\n${UPDATE}` } }, field: 'workload.script', fix: 'remove it', workflow: WORKFLOW_TYPES.nightlyRegression },
  tool({ name: 'script syntax error (pgbench)', input: ci({ workload: { script: `${UPDATE}\n\\set aid\n` } }), field: 'workload.script', fix: 'syntax error in command "set" at column 9' }),
  { name: 'read-only script with the backlog on', input: ci({ workload: { script: 'SELECT abalance FROM pgbench_accounts WHERE aid = 1;' } }), field: 'workload.script', fix: 'set phases.backlog.enabled to false' },

  // Settings: unknown, bad, multi-line, and every family that runs programs or moves files and sockets.
  tool({ name: 'unknown setting', input: withSettings({ shared_bufers: '64MB' }), field: 'postgres.settings.shared_bufers', fix: 'did you mean shared_buffers?' }),
  tool({ name: 'bad value', input: withSettings({ max_connections: 'lots' }), field: 'postgres.settings.max_connections', fix: 'set a value it accepts' }),
  tool({ name: 'value out of range', input: withSettings({ checkpoint_timeout: '5s' }), field: 'postgres.settings.checkpoint_timeout', fix: '(30 .. 86400)' }),
  tool({ name: 'developer option', input: withSettings({ trace_notify: true }), field: 'postgres.settings.trace_notify', fix: 'remove it' }),
  { name: 'newline in a value', input: withSettings({ search_path: 'public\narchive_command = x' }), field: 'postgres.settings.search_path', fix: 'remove newlines' },
  refused('archive_command', `touch ${marker()}`),
  refused('restore_command', `touch ${marker()}`),
  refused('archive_cleanup_command', `touch ${marker()}`),
  refused('recovery_end_command', `touch ${marker()}`),
  refused('ssl_passphrase_command', `touch ${marker()}`),
  refused('shared_preload_libraries', 'auto_explain'),
  refused('dynamic_library_path', markers),
  refused('jit_provider', 'evil'),
  refused('data_directory', markers),
  refused('hba_file', marker()),
  refused('external_pid_file', marker()),
  refused('log_directory', markers),
  refused('include', marker()),
  refused('ssl_key_file', '/etc/shadow'),
  refused('listen_addresses', '*'),
  refused('port', 5432),
  refused('unix_socket_directories', markers),
  refused('archive_mode', 'on', 'set durability.enabled instead'),
  refused('wal_level', 'minimal'),
  refused('synchronous_standby_names', '*'),
  refused('zero_damaged_pages', 'on'),
  { name: "an extension's setting", input: withSettings({ 'auto_explain.log_min_duration': 0 }), field: 'postgres.settings.auto_explain.log_min_duration', fix: 'remove it' },

  // Sizes that cannot fit.
  { name: '2000 clients on ci (384 MiB hosts)', input: ci({ workload: { clients: 2000 } }), field: 'workload.clients', fix: 'lower workload.clients to at most' },
  { name: 'clients above max_connections', input: ci({ workload: { clients: 64, threads: 2 }, postgres: { settings: { max_connections: 40 } } }), field: 'postgres.settings.max_connections', fix: 'raise max_connections to at least 69' },
  { name: 'sizeGiB too small', input: ci({ storageClasses: { gp3: { sizeGiB: 0.25 } } }), field: 'storageClasses.gp3.sizeGiB', fix: 'raise it to at least' },

  // Fields that reach AWS, a backup tool's config or a host's user-data: each by its pattern (issue 19).
  { name: 'AMI id with a path', input: ci({ aws: { imageId: 'ami-0abcdef1234567890/../../x' } }), field: 'aws.imageId', fix: 'an AMI id: "ami-" and 8 or 17' },
  { name: 'temporalAddress with a scheme', input: ci({ aws: { temporalAddress: 'https://evil.example.com:7233' } }), field: 'aws.temporalAddress', fix: 'no scheme and no path' },
  { name: 'newline in the instance type (an agent.env line)', input: ci({ host: { instanceType: 'm6id.4xlarge\nTEMPORAL_ADDRESS=evil:7233' } }), field: 'host.instanceType', fix: 'must not contain a control character' },
  { name: 'image parameter outside /aws/service/', input: ci({ aws: { imageSsmParameter: '/storage-lab/db-password' } }), field: 'aws.imageSsmParameter', fix: 'a public SSM parameter under /aws/service/' },
  { name: 'backup bucket with a newline (a pgBackRest option)', input: ci({ durability: { backupStore: { kind: 's3', bucket: 'lab\nrepo1-path=/etc' } } }), field: 'durability.backupStore.bucket', fix: 'must not contain a control character' },
  { name: 'backup prefix climbing out with ..', input: ci({ durability: { backupStore: { kind: 's3', bucket: 'lab-backups', prefix: 'storage-lab/../../etc' } } }), field: 'durability.backupStore.prefix', fix: 'no "." or ".." segment' },
  { name: 'folder store at an absolute folder', input: ci({ durability: { backupStore: { kind: 'folder', path: markers } } }), field: 'durability.backupStore.path', fix: 'an absolute folder is refused' },
  { name: 'restore drill: folder store climbing out', input: { preset: 'ci', backup: { store: { kind: 'folder', path: '../../var/lib/postgresql' } } }, field: 'backup.store.path', fix: 'no "." or ".." segment', workflow: WORKFLOW_TYPES.restoreDrill },
  { name: 'failover drill: plain-http store off this machine', input: { preset: 'ci', backup: { store: { kind: 's3', bucket: 'lab-backups', endpoint: 'http://evil.example.com' } } }, field: 'backup.store.endpoint', fix: 'http:// only to 127.0.0.1', workflow: WORKFLOW_TYPES.failoverDrill },
  { name: 'seed-full: 16 clusters per class of m6id.32xlarge above aws.maxCostUsd', input: { preset: 'seed-full', clustersPerClass: 16, host: { instanceType: 'm6id.32xlarge' }, aws: { maxCostUsd: 100, hourlyPriceUsd: { 'm6id.32xlarge': 7.5936 } } }, field: 'aws.maxCostUsd', fix: 'above its ceiling of $100 (aws.maxCostUsd); lower clustersPerClass' },
  { name: 'nine storage classes', input: ci({ storageClasses: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`c${i}`, { kind: 'local-disk' }])) }), field: 'storageClasses', fix: 'a run compares at most 8' },
  { name: 'a volume above gp3\'s largest', input: ci({ storageClasses: { gp3: { sizeGiB: 100_000 } } }), field: 'storageClasses.gp3.sizeGiB', fix: 'at most 16384' },
  { name: 'a script over 64 KiB', input: ci({ workload: { script: `${UPDATE}\n${'-- x\n'.repeat(20_000)}` } }), field: 'workload.script', fix: 'at most 65536' },
  { name: 'a script of meta-commands only (a log bomb)', input: ci({ phases: { backlog: { enabled: false } }, workload: { script: '\\set x 1\n' } }), field: 'workload.script', fix: 'runs no SQL statement' },
  { name: 'log_statement = all', input: withSettings({ log_statement: 'all' }), field: 'postgres.settings.log_statement', fix: 'set it to "none", or remove it' },
  { name: 'failover drill: log_min_duration_statement = 0', input: { preset: 'ci', postgres: { settings: { log_min_duration_statement: 0 } } }, field: 'postgres.settings.log_min_duration_statement', fix: 'set it to -1', workflow: WORKFLOW_TYPES.failoverDrill },
  { name: 'the same drill twice', input: ci({ durability: { drills: ['restore', 'restore'] } }), field: 'durability.drills', fix: 'each drill at most once' },
  { name: '16 TiB volumes, 32 at once, on this machine', input: ci({ storageClasses: { gp3: { sizeGiB: 16_384 } }, clustersPerClass: 16, maxParallelClusters: 32 }), field: 'storageClasses.gp3.sizeGiB', fix: 'GiB free; lower storageClasses.gp3.sizeGiB', type: 'PreflightError', preflight: 'preflight', cli: false },

  // The drills and the nightly run, through the tools.
  { name: 'restore drill: archive_command', input: { preset: 'ci', postgres: { settings: { archive_command: `touch ${marker()}` } } }, field: 'postgres.settings.archive_command', fix: 'remove it', workflow: WORKFLOW_TYPES.restoreDrill },
  { name: 'failover drill: restore_command', input: { preset: 'ci', postgres: { settings: { restore_command: `touch ${marker()}` } } }, field: 'postgres.settings.restore_command', fix: 'remove it', workflow: WORKFLOW_TYPES.failoverDrill },
  { name: 'restore drill: more clients than max_connections', input: { preset: 'ci', host: { memoryLimitMiB: 4096 }, workload: { clients: 200 } }, field: 'workload.clients', fix: 'lower workload.clients to at most 94', workflow: WORKFLOW_TYPES.restoreDrill },
  tool({ name: 'restore drill: bad value (server)', input: { preset: 'ci', postgres: { settings: { work_mem: 'lots' } } }, field: 'postgres.settings.work_mem', fix: 'set a value it accepts', workflow: WORKFLOW_TYPES.restoreDrill }),
  tool({ name: 'failover drill: unknown setting (server)', input: { preset: 'ci', postgres: { settings: { wal_keep_segments: 64 } } }, field: 'postgres.settings.wal_keep_segments', fix: 'fix the name or remove it', workflow: WORKFLOW_TYPES.failoverDrill }),
  tool({ name: 'nightly: bad value (server), no child', input: { preset: 'ci', postgres: { settings: { wal_sync_method: 'bogus' } } }, field: 'postgres.settings.wal_sync_method', fix: 'Available values', workflow: WORKFLOW_TYPES.nightlyRegression }),
];

/** What the run did on the server: activity types it scheduled and children it started. */
async function sideEffects(client: Client, workflowId: string): Promise<{ activities: string[]; children: number }> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const { EventType } = temporal.api.enums.v1;
  const events = history.events ?? [];
  return {
    activities: events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    children: events.filter((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED).length,
  };
}

/** Problems of one refused run: its failure and what it did on the server. */
async function judge(client: Client, c: Case, workflowId: string, failure: unknown): Promise<string[]> {
  if (!(failure instanceof WorkflowFailedError)) return [`${c.name}: not rejected (${String(failure)})`];
  const problems: string[] = [];
  const cause = failure.cause as { type?: string; nonRetryable?: boolean; message: string };
  const type = c.type ?? 'InvalidSpecError';
  if (cause.type !== type) problems.push(`${c.name}: failure type ${cause.type}, expected ${type}`);
  if (!cause.nonRetryable) problems.push(`${c.name}: retryable`);
  if (!cause.message.includes(`${c.field}:`)) problems.push(`${c.name}: message does not name ${c.field}: ${cause.message}`);
  if (!cause.message.includes(c.fix)) problems.push(`${c.name}: message does not suggest "${c.fix}": ${cause.message}`);
  const done = await sideEffects(client, workflowId);
  const expected = c.preflight ? [c.preflight] : [];
  if (done.activities.join() !== expected.join() || done.children)
    problems.push(`${c.name}: ran [${done.activities.join(', ')}] and ${done.children} children; expected [${expected.join(', ')}] and none`);
  return problems;
}

/**
 * storage-lab with `argv` in this process, as client/cli.ts runs it: the command tree parses argv, and a failure
 * becomes its printed message and exit code (cliFailure); what the command printed to stderr is kept. One at a time:
 * the environment and console.error are this process's.
 */
async function cliInThisProcess(argv: string[], env: Record<string, string>): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const stderr: string[] = [];
  const stdout: string[] = [];
  const error = jest.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void stderr.push(a.map(String).join(' ')));
  const log = jest.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void stdout.push(a.map(String).join(' ')));
  try {
    await buildProgram().exitOverride().parseAsync(['node', 'storage-lab', ...argv]);
    return { exitCode: 0, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  } catch (err) {
    const failure = cliFailure(err);
    stderr.push(failure.message === null ? String(err) : `storage-lab: ${failure.message}`);
    return { exitCode: failure.exitCode, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  } finally {
    error.mockRestore();
    log.mockRestore();
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

const CLI_COMMANDS: Record<string, string[]> = {
  [WORKFLOW_TYPES.experiment]: ['run'],
  [WORKFLOW_TYPES.restoreDrill]: ['drill', 'restore'],
  [WORKFLOW_TYPES.failoverDrill]: ['drill', 'failover'],
};

describe('hostile and malformed specs (faults)', () => {
  let lab: TestLab;
  beforeAll(async () => {
    lab = await startTestLab('hostile');
  });
  afterAll(async () => {
    await lab?.close();
  });
  afterAll(() => {
    // The last word, after every path: no program a spec asked for ever ran.
    expect(readdirSync(markers)).toEqual([]);
  });

  it(`refuses ${CASES.length} specs started as workflows (the UI's path) before any host exists, naming field and fix`, async () => {
    const runs = await Promise.all(
      CASES.map(async (c) => {
        const workflowId = uniqueId('hostile');
        const handle = await lab.client.workflow.start(c.workflow ?? WORKFLOW_TYPES.experiment, { taskQueue: lab.taskQueue, workflowId, args: [c.input] });
        return { c, workflowId, failure: await handle.result().then(() => null, (e: unknown) => e) };
      }),
    );
    const problems = (await Promise.all(runs.map(({ c, workflowId, failure }) => judge(lab.client, c, workflowId, failure)))).flat();
    expect(problems).toEqual([]);
    expect(markerCount).toBeGreaterThanOrEqual(12);
    // Nothing was created: no host folder, no mount, no loop device, no cgroup, no process.
    expect(lab.leftovers([])).toEqual([]);
    expect(readdirSync(markers)).toEqual([]);
  });

  it('refuses them through storage-lab run|drill --spec FILE: exit code 2, field and fix, no workflow started', async () => {
    const cases = CASES.filter((c) => c.cli !== false && CLI_COMMANDS[c.workflow ?? WORKFLOW_TYPES.experiment]);
    const dir = mkdtempSync(path.join(lab.paths.home, 'specs-'));
    const env = { TEMPORAL_ADDRESS: serverAddress(), STORAGE_LAB_CONTROL_QUEUE: lab.taskQueue, STORAGE_LAB_HOME: lab.paths.home };
    // The first case of each command as the real program (node dist/client/cli.js: its argv, its exit code); every
    // case through the same command tree and top-level catch in this process (client/cli.ts's two steps), which
    // spares a Node start and the CLI's imports per case (about 2 s each on a loaded 2-core machine, 80 cases).
    const asProcess = new Set(Object.keys(CLI_COMMANDS).map((w) => cases.find((c) => (c.workflow ?? WORKFLOW_TYPES.experiment) === w)));
    const results: string[][] = [];
    for (const c of cases) {
      const file = path.join(dir, `${uniqueId('spec')}.json`);
      writeFileSync(file, JSON.stringify(c.input));
      const workflowId = uniqueId('hostile-cli');
      const argv = [...CLI_COMMANDS[c.workflow ?? WORKFLOW_TYPES.experiment], '--spec', file, '--id', workflowId];
      const r = asProcess.has(c)
        ? await runProcess(process.execPath, [path.join(PROJECT_ROOT, 'dist/client/cli.js'), ...argv], { env: { ...process.env, ...env }, timeoutMs: 60_000, okExitCodes: [0, 1, 2] })
        : await cliInThisProcess(argv, env);
      const started = await lab.client.workflow.getHandle(workflowId).describe().then(
        () => true,
        (e: unknown) => !(e instanceof WorkflowNotFoundError),
      );
      const problems: string[] = [];
      if (r.exitCode !== 2) problems.push(`${c.name}: exit code ${r.exitCode}\n${r.stdout}${r.stderr}`);
      if (!r.stderr.includes(`${c.field}:`)) problems.push(`${c.name}: stderr does not name ${c.field}: ${r.stderr}`);
      if (!r.stderr.includes(c.fix)) problems.push(`${c.name}: stderr does not suggest "${c.fix}": ${r.stderr}`);
      if (started) problems.push(`${c.name}: a workflow was started`);
      results.push(problems);
    }
    expect(results.flat()).toEqual([]);
    expect(cases.length).toBeGreaterThanOrEqual(50);
    expect(asProcess.size).toBe(Object.keys(CLI_COMMANDS).length);
    expect(lab.leftovers([])).toEqual([]);
  });

  it('refuses them through the official temporal workflow start --input-file', async () => {
    const picked = [
      '\\shell touching a marker',
      'unknown setting',
      'refused setting archive_command',
      'nightly: bad value (server), no child',
      'restore drill: archive_command',
      'backup bucket with a newline (a pgBackRest option)',
      'restore drill: folder store climbing out',
    ];
    const cases = picked.map((name) => CASES.find((c) => c.name === name)!);
    const dir = mkdtempSync(path.join(lab.paths.home, 'inputs-'));
    const problems = (
      await Promise.all(
        cases.map(async (c) => {
          const file = path.join(dir, `${uniqueId('input')}.json`);
          writeFileSync(file, JSON.stringify(c.input));
          const workflowId = uniqueId('hostile-temporal');
          const args = ['workflow', 'start', '--address', serverAddress(), '--namespace', 'default', '--task-queue', lab.taskQueue];
          args.push('--type', c.workflow ?? WORKFLOW_TYPES.experiment, '--workflow-id', workflowId, '--input-file', file);
          await runProcess(temporalBinary(), args, { timeoutMs: 60_000 });
          const failure = await lab.client.workflow.getHandle(workflowId).result().then(() => null, (e: unknown) => e);
          return judge(lab.client, c, workflowId, failure);
        }),
      )
    ).flat();
    expect(problems).toEqual([]);
    expect(lab.leftovers([])).toEqual([]);
    expect(existsSync(markers) && readdirSync(markers)).toEqual([]);
  });
});
