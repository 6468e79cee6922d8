/**
 * `workload.script`, a pgbench script from an untrusted spec: the meta-commands it may use, and whether it writes.
 * Pure and workflow-safe. pgbench's `\shell` and `\setshell` run programs as the OS user that runs pgbench, so a
 * script may use only the meta-commands below; everything else (its syntax) is checked by the real pgbench before
 * anything is provisioned (lib/spec-checks.ts).
 */

/**
 * The meta-commands pgbench documents that stay inside the database, with the first major that has them; the real
 * pgbench of the host's version then refuses one it does not know ("invalid command").
 */
export const ALLOWED_META_COMMANDS: Readonly<Record<string, number>> = {
  set: 10,
  sleep: 10,
  if: 11,
  elif: 11,
  else: 11,
  endif: 11,
  gset: 12,
  aset: 14,
  startpipeline: 14,
  endpipeline: 14,
  syncpipeline: 17,
};

/** Meta-commands refused by name, with what they would do. */
export const REFUSED_META_COMMANDS: Readonly<Record<string, string>> = {
  shell: 'runs a shell command as the OS user that runs pgbench',
  setshell: 'runs a shell command as the OS user that runs pgbench and reads its output',
};

/**
 * Problems of a script's meta-commands; empty when every one is allowed. pgbench starts a meta-command at any
 * backslash outside a quoted string (`SELECT 1 \gset` too) and matches names case-insensitively, so every backslash
 * counts, quoted or not: a backslash in a string literal (E'\n') is refused too, with the way around it.
 */
export function metaCommandProblems(script: string): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const allowed = Object.keys(ALLOWED_META_COMMANDS).map((c) => `\\${c}`).join(', ');
  for (const match of script.matchAll(/\\([A-Za-z_]*)/g)) {
    const name = match[1].toLowerCase();
    if (name in ALLOWED_META_COMMANDS || seen.has(name)) continue;
    seen.add(name);
    const line = script.slice(0, match.index).split('\n').length;
    if (name in REFUSED_META_COMMANDS)
      problems.push(`line ${line}: \\${match[1]} is refused: it ${REFUSED_META_COMMANDS[name]}; remove it (allowed meta-commands: ${allowed})`);
    else
      problems.push(
        `line ${line}: "\\${match[1]}" is not an allowed pgbench meta-command (${allowed}); a backslash starts one anywhere outside a quoted string and is refused inside one too: write chr(10) instead of E'\\n'`,
      );
  }
  return problems;
}

/** Control characters a script may not hold (tabs and line ends are fine). */
const SCRIPT_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Every problem of a script that needs no pgbench to find. */
export function scriptProblems(script: string): string[] {
  const problems = metaCommandProblems(script);
  if (SCRIPT_CONTROL.test(script)) problems.push('contains a control character other than tab and line ends; remove it');
  return problems;
}

/** Statements that write a table (and so WAL): what a phase that fills WAL needs from the workload. */
const WRITING_STATEMENT = /\b(insert|update|delete|merge|copy|truncate|create|drop|alter|cluster|reindex|vacuum)\b/i;

/**
 * Whether a script writes: a data-modifying statement outside comments and meta-command lines. A heuristic that
 * errs towards "writes" (a keyword inside a string literal counts); the phase's own guard on the host catches the rest.
 */
export function scriptWrites(script: string): boolean {
  return WRITING_STATEMENT.test(scriptSql(script));
}

/** A script's SQL: without comments, meta-command lines and pgbench variables (:aid, names rather than statements). */
export function scriptSql(script: string): string {
  return script
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .split('\n')
    .map((line) => line.replace(/--.*$/, ''))
    .filter((line) => !/^\s*\\/.test(line))
    .join('\n')
    .replace(/:[A-Za-z_]\w*/g, ' ');
}
