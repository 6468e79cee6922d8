import { RANDOM_UPDATE_SCRIPT } from '../../common/input/presets';
import { metaCommandProblems, scriptProblems, scriptWrites } from '../../common/input/workload-script';

describe('workload scripts', () => {
  it('accepts the reference script and every documented in-database meta-command', () => {
    expect(scriptProblems(RANDOM_UPDATE_SCRIPT)).toEqual([]);
    const all = [
      '\\set aid random(1, 100000 * :scale)',
      '\\sleep 1 ms',
      '\\if :aid > 5',
      'SELECT 1;',
      '\\elif :aid > 2',
      'SELECT 2;',
      '\\else',
      'SELECT 3;',
      '\\endif',
      'SELECT abalance FROM pgbench_accounts WHERE aid = :aid \\gset',
      'SELECT 1 AS one \\aset',
      '\\startpipeline',
      'SELECT 1;',
      '\\syncpipeline',
      '\\endpipeline',
    ].join('\n');
    expect(scriptProblems(all)).toEqual([]);
  });

  it.each([
    ['\\shell at the start of a line', '\\shell touch /tmp/marker\nSELECT 1;', 'line 1: \\shell is refused'],
    ['\\setshell', 'SELECT 1;\n\\setshell x echo 1', 'line 2: \\setshell is refused'],
    ['\\SHELL in capitals (pgbench ignores case)', '\\SHELL touch /tmp/marker', '\\SHELL is refused'],
    ['\\shell after SQL on the same line', 'SELECT 1 \\shell touch /tmp/marker', '\\shell is refused'],
    ['an unknown meta-command', '\\bogus', '"\\bogus" is not an allowed pgbench meta-command'],
    ["psql's shell escape", '\\! touch /tmp/marker', '"\\" is not an allowed'],
    ['a backslash inside a string literal', "SELECT E'\\n';", "write chr(10) instead of E'\\n'"],
  ])('refuses %s', (_, script, fragment) => {
    const problems = metaCommandProblems(script);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(fragment);
  });

  it('refuses control characters other than tabs and line ends', () => {
    expect(scriptProblems('SELECT 1;\u0000')).toEqual([expect.stringContaining('control character')]);
    expect(scriptProblems('SELECT\t1;\r\n')).toEqual([]);
  });

  it.each([
    [RANDOM_UPDATE_SCRIPT, true],
    ['INSERT INTO t VALUES (1);', true],
    ['delete from t;', true],
    ['WITH x AS (UPDATE t SET a = 1 RETURNING a) SELECT * FROM x;', true],
    ['SELECT 1;', false],
    ['\\set update 1\nSELECT :update;', false],
    ['-- UPDATE nothing\nSELECT 1;', false],
    ['/* INSERT\n DELETE */ SELECT 1;', false],
  ])('knows whether %j writes', (script, writes) => {
    expect(scriptWrites(script)).toBe(writes);
  });
});
