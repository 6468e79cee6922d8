/**
 * What the docs tell a person to type, checked against the code: the `storage-lab ...`, `npm ...` and
 * `node dist/...` lines of the Markdown code blocks (each parsed by the CLI's own commander tree, client/program.ts,
 * without running any action), and every relative link (the file exists; an #anchor names a heading there).
 */
import { CommanderError, type Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildProgram } from '../../client/program';
import { PROJECT_ROOT } from '../../lib/lab-paths';

/** A command line found in a Markdown code block. */
export interface DocCommand {
  file: string;
  /** 1-based line of its first line in the file. */
  line: number;
  /** As written (continuation lines joined), without a trailing comment. */
  text: string;
  /** Its words as the shell splits them, from the command's name on (leading VAR=value assignments dropped). */
  words: string[];
  /** Why the line is not a plain command the shell would run as written, or null. */
  syntaxProblem: string | null;
}

/** Code blocks whose lines are shell commands (a block of output is marked `text`). */
const SHELL_BLOCKS = new Set(['', 'bash', 'sh', 'shell', 'console']);
const FENCE = /^\s*(```|~~~)\s*([\w-]*)/;
/** A leading environment assignment (`STORAGE_LAB_AWS=1 node dist/...`). */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** The words of a shell line, or why it is more than one plain command (pipes, redirections, substitutions). */
export function shellWords(line: string): { words: string[]; problem: string | null } {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return { words, problem: 'a single quote is not closed' };
      word += line.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && '"\\$`'.includes(line[j + 1] ?? '')) j++;
        else if (line[j] === '$' || line[j] === '`') return { words, problem: 'expands a variable or a command inside double quotes' };
        word += line[j];
      }
      if (j >= line.length) return { words, problem: 'a double quote is not closed' };
      inWord = true;
      i = j;
    } else if (c === '\\') {
      word += line[i + 1] ?? '';
      inWord = true;
      i++;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if (c === '#' && !inWord) {
      break; // A comment to the end of the line.
    } else if ('|;&<>`$'.includes(c)) {
      return { words, problem: `uses the shell's "${c}": write one plain command a line` };
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return { words, problem: null };
}

/** The storage-lab, npm and node dist/ command lines of a Markdown text's shell code blocks. */
export function docCommands(markdown: string, file: string): DocCommand[] {
  const commands: DocCommand[] = [];
  const lines = markdown.split('\n');
  let block: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const fence = FENCE.exec(lines[i]);
    if (fence) {
      block = block === null ? fence[2] : null;
      continue;
    }
    if (block === null || !SHELL_BLOCKS.has(block)) continue;
    const first = i;
    let text = lines[i].trim().replace(/^\$ /, '');
    while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i].trim()}`;
    const { words, problem } = shellWords(text);
    while (words.length && ASSIGNMENT.test(words[0])) words.shift();
    const [name, next] = words;
    if (name === 'storage-lab' || name === 'npm' || (name === 'node' && next?.startsWith('dist/')))
      commands.push({ file, line: first + 1, text: text.replace(/\s+#.*$/, ''), words, syntaxProblem: problem });
  }
  return commands;
}

/** Every command of a tree, the tree's root first. */
function commandsOf(command: Command): Command[] {
  return [command, ...command.commands.flatMap(commandsOf)];
}

/** Thrown by the test's preAction hook: the arguments parsed, so the action would have run. */
class Parsed extends Error {}

/**
 * Why `storage-lab <args>` would be refused by the CLI's own parser (an unknown command or option, a missing
 * argument or required option, a command group without its subcommand), or null when it parses. No action runs.
 */
export async function cliProblem(args: string[]): Promise<string | null> {
  const program = buildProgram();
  for (const command of commandsOf(program))
    command.exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined });
  program.hook('preAction', () => {
    throw new Parsed();
  });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err instanceof Parsed) return null;
    if (!(err instanceof CommanderError)) throw err;
    if (err.exitCode === 0) return null; // --help
    return err.code === 'commander.help' ? 'names a command group without one of its commands' : err.message;
  }
  return 'ran no command';
}

/** The package's npm scripts. */
function npmScripts(root: string): Record<string, string> {
  return (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
}

/** Why a documented command would not run as written, or null: the checks a reader would hit first. */
export async function commandProblem(cmd: DocCommand, root = PROJECT_ROOT): Promise<string | null> {
  if (cmd.syntaxProblem) return cmd.syntaxProblem;
  const [name, ...args] = cmd.words;
  if (name === 'storage-lab') return cliProblem(args);
  if (name === 'node') {
    const script = args[0];
    const source = script.replace(/^dist\//, '').replace(/\.js$/, '.ts');
    if (!existsSync(path.join(root, source))) return `${script}: no ${source} in the project`;
    return existsSync(path.join(root, script)) ? null : `${script}: not built (npx tsc -p tsconfig.json builds it)`;
  }
  const scripts = npmScripts(root);
  if (args[0] === 'test') return args.length === 1 && scripts.test ? null : 'npm test takes no arguments here';
  if (args[0] !== 'run') return `npm ${args[0] ?? ''}: the docs use only "npm test" and "npm run <script>"`;
  const script = args[1];
  if (!script || !(script in scripts)) return `npm run ${script ?? ''}: no such script in package.json (${Object.keys(scripts).join(', ')})`;
  if (args.length === 2) return null;
  if (script === 'storage-lab' && args[2] === '--') return cliProblem(args.slice(3));
  return `npm run ${script}: pass its arguments after "--" (only the storage-lab script takes any)`;
}

/** The GitHub anchors of a Markdown text's headings (lower case, punctuation dropped, spaces as dashes, repeats numbered). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inBlock = false;
  for (const line of markdown.split('\n')) {
    if (FENCE.test(line)) inBlock = !inBlock;
    const heading = inBlock ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n ? `${base}-${n}` : base);
  }
  return anchors;
}

/** Problems of a Markdown file's relative links: a file that does not exist, an anchor no heading there has. */
export function linkProblems(markdown: string, file: string): string[] {
  const problems: string[] = [];
  let inBlock = false;
  markdown.split('\n').forEach((line, i) => {
    if (FENCE.test(line)) inBlock = !inBlock;
    if (inBlock) return;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [where, anchor] = target.split('#');
      const linked = where ? path.resolve(path.dirname(file), decodeURIComponent(where)) : file;
      const at = `${path.relative(PROJECT_ROOT, file)}:${i + 1}: (${target})`;
      if (where && !existsSync(linked)) problems.push(`${at} ${path.relative(PROJECT_ROOT, linked)} does not exist`);
      else if (anchor && linked.endsWith('.md') && !headingAnchors(where ? readFileSync(linked, 'utf8') : markdown).has(anchor))
        problems.push(`${at} no heading of ${path.relative(PROJECT_ROOT, linked)} has the anchor #${anchor}`);
    }
  });
  return problems;
}
