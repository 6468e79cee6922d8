/** The determinism guard: workflow code may not import Node built-ins or activity implementations; no floating promises. */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../activities/lib/process-runner';
import { PROJECT_ROOT } from '../../infra/lab-paths';

/** Snippets to lint, each as if it were a file in the folder named. */
const PROBES = {
  nodeFs: ['workflows', "import fs from 'node:fs';\nexport const x = fs;\n"],
  plainFs: ['workflows', "import { readFileSync } from 'fs';\nexport const x = readFileSync;\n"],
  processEnv: ['workflows', 'export const x = process.env.HOME;\n'],
  activityTypes: ['workflows', "import type { ControlActivities } from '../activities/control';\nexport type X = ControlActivities;\n"],
  activityCode: ['workflows', "import { createControlActivities } from '../activities/control';\nexport const x = createControlActivities;\n"],
  floatingInWorkflow: ['workflows', 'async function step(): Promise<void> {}\nexport function plan(): void {\n  step();\n}\n'],
  floatingInActivity: ['activities/host', 'async function step(): Promise<void> {}\nexport function plan(): void {\n  step();\n}\n'],
  awaitedInWorkflow: ['workflows', 'async function step(): Promise<void> {}\nexport async function plan(): Promise<void> {\n  await step();\n}\n'],
  nodeFsInActivity: ['activities/host', "import fs from 'node:fs';\nexport const x = fs;\n"],
} as const;

/**
 * Lints every probe in one run of the ESLint CLI (its config loader needs real ESM, not jest's; typed rules take
 * seconds to start). Probes are written where they claim to be, as typed rules need them in the TypeScript project,
 * then removed.
 */
async function lintProbes(): Promise<Record<keyof typeof PROBES, string[]>> {
  const files = Object.fromEntries(
    Object.entries(PROBES).map(([name, [dir]]) => [name, path.join(PROJECT_ROOT, dir, `zz-lint-probe-${process.pid}-${name}.ts`)]),
  ) as Record<keyof typeof PROBES, string>;
  for (const [name, [, code]] of Object.entries(PROBES)) writeFileSync(files[name as keyof typeof PROBES], code);
  try {
    const out = await runProcess(
      process.execPath,
      [path.join(PROJECT_ROOT, 'node_modules/eslint/bin/eslint.js'), '--format', 'json', ...Object.values(files)],
      { cwd: PROJECT_ROOT, okExitCodes: [0, 1] },
    );
    const results = JSON.parse(out.stdout) as { filePath: string; messages: { ruleId: string; message: string }[] }[];
    const byFile = new Map(results.map((r) => [r.filePath, r.messages.map((m) => `${m.ruleId}: ${m.message}`)]));
    return Object.fromEntries(Object.entries(files).map(([name, file]) => [name, byFile.get(file) ?? ['(not linted)']])) as Record<keyof typeof PROBES, string[]>;
  } finally {
    for (const file of Object.values(files)) rmSync(file, { force: true });
  }
}

describe('lint rules', () => {
  let errors: Record<keyof typeof PROBES, string[]>;
  beforeAll(async () => {
    errors = await lintProbes();
  });

  it('bans Node built-ins in workflow code', () => {
    expect(errors.nodeFs.join('\n')).toMatch(/no-restricted-imports: 'node:fs' import is restricted/);
    expect(errors.plainFs.join('\n')).toMatch(/no-restricted-imports/);
  });

  it('bans process in workflow code', () => {
    expect(errors.processEnv.join('\n')).toMatch(/no-restricted-globals/);
  });

  it('lets workflows import activity types but not activity code', () => {
    expect(errors.activityTypes).toEqual([]);
    expect(errors.activityCode.join('\n')).toMatch(/activity types only/);
  });

  it('refuses a promise nobody awaits in workflows and activities: a step of the plan that may never happen', () => {
    expect(errors.floatingInWorkflow.join('\n')).toMatch(/no-floating-promises/);
    expect(errors.floatingInActivity.join('\n')).toMatch(/no-floating-promises/);
    expect(errors.awaitedInWorkflow).toEqual([]);
  });

  it('allows Node built-ins outside workflow code', () => {
    expect(errors.nodeFsInActivity).toEqual([]);
  });
});
