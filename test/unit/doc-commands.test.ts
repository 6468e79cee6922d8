/**
 * The checker of the docs' commands and links (test/helpers/doc-commands.ts), fed planted lines: a command the CLI
 * no longer has, an option it never had, a missing argument, an npm script or a built file that does not exist, a
 * link to nowhere. Each must fail, naming what is wrong, while the real forms pass: otherwise the README test
 * (test/e2e/readme-commands.test.ts) could not fail.
 */
import path from 'node:path';
import { PROJECT_ROOT } from '../../lib/lab-paths';
import { cliProblem, commandProblem, docCommands, headingAnchors, linkProblems, shellWords } from '../helpers/doc-commands';

const README = path.join(PROJECT_ROOT, 'README.md');
const fence = '```';

describe('shell words of a documented line', () => {
  it('splits as the shell does, with quotes and a trailing comment', () => {
    expect(shellWords(`storage-lab predict --target '{"kind":"ebs","iops":6000}' --json   # as JSON`)).toEqual({
      words: ['storage-lab', 'predict', '--target', '{"kind":"ebs","iops":6000}', '--json'],
      problem: null,
    });
    expect(shellWords(`storage-lab schedule create nightly --cron "0 2 * * *"`).words).toEqual(['storage-lab', 'schedule', 'create', 'nightly', '--cron', '0 2 * * *']);
  });

  it('refuses what is more than one plain command', () => {
    expect(shellWords('storage-lab status RUN | grep tps').problem).toMatch(/"\|"/);
    expect(shellWords('storage-lab status $RUN').problem).toMatch(/"\$"/);
    expect(shellWords("storage-lab run --spec 'x.json").problem).toMatch(/single quote/);
  });
});

describe('commands of a Markdown text', () => {
  const markdown = [
    '# Title',
    `${fence}bash`,
    'npm run demo   # everything',
    'STORAGE_LAB_VERSIONING_MANUAL=1 node dist/worker/control-worker.js',
    'storage-lab run --preset ci \\',
    '  --watch',
    'temporal workflow list',
    fence,
    `${fence}text`,
    'storage-lab run --preset ci --no-such-flag',
    fence,
  ].join('\n');

  it('takes storage-lab, npm and node dist/ lines from shell blocks only, continuation lines joined', () => {
    const found = docCommands(markdown, README);
    expect(found.map((c) => [c.line, c.words])).toEqual([
      [3, ['npm', 'run', 'demo']],
      [4, ['node', 'dist/worker/control-worker.js']],
      [5, ['storage-lab', 'run', '--preset', 'ci', '--watch']],
    ]);
  });
});

describe('a documented command checked against the CLI', () => {
  it('passes the commands and options the CLI has', async () => {
    for (const line of [
      'run --preset seed-full --dry-run',
      'run --preset ci --set workload.clients=16 --set storageClasses.gp3.iops=1500 --watch',
      'drill restore --preset ci --compare-tools',
      'diagnose --dsn postgresql://me@db:5432/app --seconds 60 --no-fsync-probe',
      'history pin exp-1 exp-2',
      'schedule create nightly --cron 0 --preset nightly',
      'dev status',
      'predict --help',
    ])
      expect([line, await cliProblem(line.split(' '))]).toEqual([line, null]);
  });

  it('fails a command, an option or an argument the CLI does not have, naming it', async () => {
    expect(await cliProblem(['frobnicate'])).toMatch(/unknown command 'frobnicate'/);
    expect(await cliProblem(['run', '--preset', 'ci', '--no-such-flag'])).toMatch(/unknown option '--no-such-flag'/);
    expect(await cliProblem(['drill', 'failover', '--compare-tools'])).toMatch(/unknown option '--compare-tools'/);
    expect(await cliProblem(['schedule', 'create', 'nightly'])).toMatch(/required option '--cron <expr>' not specified/);
    expect(await cliProblem(['status'])).toMatch(/missing required argument 'runId'/);
    expect(await cliProblem(['sweep', 'now'])).toMatch(/too many arguments/);
    expect(await cliProblem(['schedule'])).toMatch(/command group without one of its commands/);
  });

  it('fails npm scripts and built files that do not exist', async () => {
    const problem = (line: string) => commandProblem(docCommands(`${fence}bash\n${line}\n${fence}`, README)[0]);
    expect(await problem('npm run demo')).toBeNull();
    expect(await problem('npm test')).toBeNull();
    expect(await problem('npm run storage-lab -- predict --reference')).toBeNull();
    expect(await problem('npm run storage-lab -- frobnicate')).toMatch(/unknown command 'frobnicate'/);
    expect(await problem('npm run no-such-script')).toMatch(/no such script in package\.json/);
    expect(await problem('npm install left-pad')).toMatch(/only "npm test" and "npm run <script>"/);
    expect(await problem('node dist/client/cli.js --help')).toBeNull();
    expect(await problem('node dist/bench/no-such-bench.js --rounds 3')).toMatch(/no bench\/no-such-bench\.ts in the project/);
    expect(await problem('storage-lab status RUN | head')).toMatch(/plain command/);
  });

  it('finds the one planted bad line of a README and passes the others', async () => {
    const readme = [`${fence}bash`, 'storage-lab dev up', 'storage-lab report RUN', 'storage-lab reprot RUN', 'storage-lab captures --json', fence].join('\n');
    const results = await Promise.all(docCommands(readme, README).map(async (c) => [c.line, await commandProblem(c)] as const));
    expect(results.filter(([, p]) => p !== null)).toEqual([[4, expect.stringMatching(/unknown command 'reprot'/)]]);
    expect(results).toHaveLength(4);
  });
});

describe('relative links', () => {
  it("anchors are GitHub's: lower case, punctuation dropped, spaces as dashes, repeats numbered", () => {
    expect([...headingAnchors('# Storage Lab\n## The two commands\n## CLI: `run` & co.\n```\n# not a heading\n```\n## The two commands')]).toEqual([
      'storage-lab',
      'the-two-commands',
      'cli-run--co',
      'the-two-commands-1',
    ]);
  });

  it('fails a link to a file that does not exist or an anchor no heading has', () => {
    const markdown = [
      '# Doc',
      '## Two words',
      'See [the spec](common/input/spec.ts), [above](#two-words), [config](package.json) and [Temporal](https://temporal.io).',
      'Gone: [old](docs/no-such-doc.md), [nowhere](#no-such-heading), [AWS](infra/providers/aws/README.md#no-such-section). Not a link: `[x](y.md)`.',
    ].join('\n');
    expect(linkProblems(markdown, README)).toEqual([
      expect.stringMatching(/README\.md:4: \(docs\/no-such-doc\.md\) docs\/no-such-doc\.md does not exist/),
      expect.stringMatching(/README\.md:4: \(#no-such-heading\) no heading of README\.md has the anchor #no-such-heading/),
      expect.stringMatching(/\(infra\/providers\/aws\/README\.md#no-such-section\) no heading of infra\/providers\/aws\/README\.md has the anchor/),
    ]);
  });
});
