/** The determinism guard: workflow code may not import Node built-ins or activity implementations. */
import path from 'node:path';
import { runProcess } from '../../activities/lib/process-runner';
import { PROJECT_ROOT } from '../../infra/lab-paths';

/** Lints a snippet as if it were `file`, through the ESLint CLI (its config loader needs real ESM, not jest's). */
async function errorsFor(file: string, code: string): Promise<string[]> {
  const out = await runProcess(
    process.execPath,
    [path.join(PROJECT_ROOT, 'node_modules/eslint/bin/eslint.js'), '--stdin', '--stdin-filename', file, '--format', 'json'],
    { cwd: PROJECT_ROOT, input: code, okExitCodes: [0, 1] },
  );
  const [result] = JSON.parse(out.stdout) as { messages: { ruleId: string; message: string }[] }[];
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('lint rules', () => {
  it('bans Node built-ins in workflow code', async () => {
    const errors = await errorsFor('workflows/probe.ts', "import fs from 'node:fs';\nexport const x = fs;\n");
    expect(errors.join('\n')).toMatch(/no-restricted-imports: 'node:fs' import is restricted/);
    const plain = await errorsFor('workflows/probe.ts', "import { readFileSync } from 'fs';\nexport const x = readFileSync;\n");
    expect(plain.join('\n')).toMatch(/no-restricted-imports/);
  });

  it('bans process and timers in workflow code', async () => {
    const errors = await errorsFor('workflows/probe.ts', 'export const x = process.env.HOME;\n');
    expect(errors.join('\n')).toMatch(/no-restricted-globals/);
  });

  it('lets workflows import activity types but not activity code', async () => {
    const typeOnly = "import type { ControlActivities } from '../activities/control';\nexport type X = ControlActivities;\n";
    expect(await errorsFor('workflows/probe.ts', typeOnly)).toEqual([]);
    const value = "import { createControlActivities } from '../activities/control';\nexport const x = createControlActivities;\n";
    expect((await errorsFor('workflows/probe.ts', value)).join('\n')).toMatch(/activity types only/);
  });

  it('allows Node built-ins outside workflow code', async () => {
    expect(await errorsFor('activities/host/probe.ts', "import fs from 'node:fs';\nexport const x = fs;\n")).toEqual([]);
  });
});
