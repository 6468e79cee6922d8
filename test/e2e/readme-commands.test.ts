/**
 * Every command the README tells a person to type exists, and the cheap ones run: each `storage-lab ...`,
 * `npm ...` and `node dist/...` line of README.md's code blocks (and of docs/*.md and infra/providers/aws/README.md) is parsed
 * by the CLI's own commander tree (client/program.ts): its command, options and arguments must exist. The README's
 * commands that need no worker (dry runs, `predict --reference`, listings, `--help` of each command it names) then
 * run for real on a lab home of their own, against the suite's Temporal server, and must exit 0. Every relative link
 * of those files must point at a file that exists (and an anchor at a heading there). The checker itself is tested
 * on planted bad lines in test/unit/doc-commands.test.ts.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { runProcess } from '../../lib/process-runner';
import { commandProblem, docCommands, linkProblems, type DocCommand } from '../helpers/doc-commands';
import { uniqueId } from '../helpers/temporal';

const README = path.join(PROJECT_ROOT, 'README.md');
const DOCS = [README, path.join(PROJECT_ROOT, 'infra', 'providers', 'aws', 'README.md'), ...readdirSync(path.join(PROJECT_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join(PROJECT_ROOT, 'docs', f))];
const cli = path.join(PROJECT_ROOT, 'dist', 'client', 'cli.js');

const commandsOf = (file: string) => docCommands(readFileSync(file, 'utf8'), file);
const where = (c: DocCommand) => `${path.relative(PROJECT_ROOT, c.file)}:${c.line}: ${c.text}`;

/** The storage-lab arguments of a command line, or null when it is not one (npm test, node dist/...). */
function storageLabArgs(c: DocCommand): string[] | null {
  const [name, ...args] = c.words;
  if (name === 'storage-lab') return args;
  if (name === 'npm' && args[0] === 'run' && args[1] === 'storage-lab' && args[2] === '--') return args.slice(3);
  return null;
}

/**
 * The README commands that create nothing and need no worker: they run here. Everything else (a run, a drill, a
 * schedule, dev up) is checked by the parser only.
 */
function runsHere(args: string[]): boolean {
  const [command, sub] = args;
  return (
    args.includes('--help') ||
    (command === 'run' && args.includes('--dry-run')) ||
    // --reference alone reads only the published figures; with --from it needs a run.
    (command === 'predict' && args.includes('--reference') && !args.includes('--from')) ||
    (command === 'dev' && sub === 'status') ||
    (command === 'history' && sub !== 'pin' && sub !== 'unpin') ||
    command === 'captures' ||
    (command === 'schedule' && sub === 'list')
  );
}

/** The command path of storage-lab arguments (`schedule create`, `run`): the words before the first option. */
function commandPath(args: string[]): string[] {
  const words: string[] = [];
  for (const a of args) {
    if (a.startsWith('-') || words.length === 2) break;
    words.push(a);
  }
  // Only `schedule`, `drill`, `history` and `dev` have commands of their own; a second word elsewhere is an argument.
  return ['schedule', 'drill', 'history', 'dev'].includes(words[0]) ? words : words.slice(0, 1);
}

describe('the README: every command exists and the cheap ones run', () => {
  const readme = commandsOf(README);
  let home: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(() => {
    home = mkdtempSync(path.join(process.env.STORAGE_LAB_TEST_DIR!, 'readme-'));
    chmodSync(home, 0o755);
    // A lab of its own (folders, control queue) on the suite's Temporal server, which global setup put in TEMPORAL_ADDRESS.
    env = { ...process.env, STORAGE_LAB_HOME: home, STORAGE_LAB_HOSTS_DIR: path.join(home, 'hosts'), STORAGE_LAB_CONTROL_QUEUE: uniqueId('readme') };
  });

  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('holds the two commands and a tour of the CLI', () => {
    const lines = readme.map((c) => c.words.join(' '));
    expect(lines).toEqual(expect.arrayContaining(['npm run demo', 'npm test']));
    expect(readme.filter((c) => c.words[0] === 'storage-lab').length).toBeGreaterThanOrEqual(20);
  });

  it('names only commands, options and arguments the CLI, npm and the build have', async () => {
    const problems: string[] = [];
    for (const file of DOCS)
      for (const c of commandsOf(file)) {
        const problem = await commandProblem(c);
        if (problem) problems.push(`${where(c)}\n    ${problem}`);
      }
    expect(problems).toEqual([]);
  });

  it('runs the commands that need no worker, and the --help of every command it names, each exiting 0', async () => {
    const lines = readme.map((c) => ({ c, args: storageLabArgs(c) })).filter((l): l is { c: DocCommand; args: string[] } => l.args !== null);
    const helps = [...new Set(lines.map((l) => commandPath(l.args).join(' ')))].map((p) => [...p.split(' '), '--help']);
    const runs = [...lines.filter((l) => runsHere(l.args)).map((l) => l.args), ...helps];
    expect(runs.length).toBeGreaterThanOrEqual(15);
    const failures: string[] = [];
    for (const args of runs) {
      const r = await runProcess(process.execPath, [cli, ...args], { env, timeoutMs: 120_000, okExitCodes: [0, 1, 2] });
      if (r.exitCode !== 0) failures.push(`storage-lab ${args.join(' ')}: exit ${r.exitCode}\n${r.stderr.trim() || r.stdout.trim()}`);
    }
    expect(failures).toEqual([]);
  });

  it('links only files that exist, and headings that exist there', () => {
    expect(DOCS.flatMap((file) => linkProblems(readFileSync(file, 'utf8'), file))).toEqual([]);
    expect(DOCS.length).toBeGreaterThanOrEqual(12);
  });
});
