/**
 * The lint guards: workflow code may not import Node built-ins, activity implementations, or any type but activities'
 * (the rest it shares through common/); the CLI no workflow code at all; no floating promises;
 * the layers import only downwards (eslint.config.js LAYERS); and the code that runs as root reads, creates, writes,
 * chowns and deletes files only through lib/lab-fs.ts.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../lib/process-runner';
import { PROJECT_ROOT } from '../../lib/lab-paths';

/** Snippets to lint, each as if it were a file in the folder named. */
const PROBES = {
  nodeFs: ['workflows', "import fs from 'node:fs';\nexport const x = fs;\n"],
  plainFs: ['workflows', "import { readFileSync } from 'fs';\nexport const x = readFileSync;\n"],
  processEnv: ['workflows', 'export const x = process.env.HOME;\n'],
  activityTypes: ['workflows', "import type { ControlActivities } from '../activities/control';\nexport type X = ControlActivities;\n"],
  activityCode: ['workflows', "import { createControlActivities } from '../activities/control';\nexport const x = createControlActivities;\n"],
  libTypesInWorkflow: ['workflows', "import type { BackupTool } from '../lib/backup-tool';\nexport type X = BackupTool;\n"],
  analysisTypesInWorkflow: ['workflows', "import type { TpsUnit } from '../analysis/regression-verdict';\nexport type X = TpsUnit;\n"],
  workflowTypesInClient: ['client', "import type { SweepInput } from '../workflows/sweeper-workflow';\nexport type X = SweepInput;\n"],
  workflowCodeInClient: ['client', "import { failureMessage } from '../workflows/failures';\nexport const x = failureMessage;\n"],
  floatingInWorkflow: ['workflows', 'async function step(): Promise<void> {}\nexport function plan(): void {\n  step();\n}\n'],
  floatingInActivity: ['activities/host', 'async function step(): Promise<void> {}\nexport function plan(): void {\n  step();\n}\n'],
  awaitedInWorkflow: ['workflows', 'async function step(): Promise<void> {}\nexport async function plan(): Promise<void> {\n  await step();\n}\n'],
  nodeFsInActivity: ['activities/host', "import { statSync } from 'node:fs';\nexport const x = statSync;\n"],
  readFileSyncInActivity: ['activities/host', "import { readFileSync } from 'node:fs';\nexport const x = (p: string) => readFileSync(p, 'utf8');\n"],
  createReadStreamInLib: ['lib', "import { createReadStream } from 'node:fs';\nexport const x = (p: string) => createReadStream(p);\n"],
  readdirPromisesInInfra: ['infra', "import { readdir, readFile } from 'node:fs/promises';\nexport const x = [readdir, readFile];\n"],
  memberReadInWorker: ['worker', "import * as fs from 'node:fs';\nexport const x = (p: string) => fs.readFileSync(p);\n"],
  guardedReadInActivity: ['activities/host', "import { readLabFile } from '../../lib/lab-fs';\nexport const x = (p: string) => readLabFile(p, { maxBytes: 4096, tail: true });\n"],
  readInClient: ['client', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n"],
  rmSyncInActivity: ['activities/host', "import { rmSync } from 'node:fs';\nexport const x = (p: string) => rmSync(p, { recursive: true });\n"],
  chownSyncInActivity: ['activities/host', "import { chownSync } from 'fs';\nexport const x = (p: string) => chownSync(p, 0, 0);\n"],
  writeFileSyncInActivity: ['activities/host', "import { writeFileSync } from 'node:fs';\nexport const x = (p: string) => writeFileSync(p, '');\n"],
  promisesWriteInInfra: ['infra', "import { writeFile } from 'node:fs/promises';\nexport const x = writeFile;\n"],
  memberCallInWorker: ['worker', "import * as fs from 'node:fs';\nexport const x = (p: string) => fs.rmSync(p);\n"],
  fsWriteInClient: ['client', "import { writeFileSync } from 'node:fs';\nexport const x = writeFileSync;\n"],
  rmSyncInLib: ['lib', "import { rmSync } from 'node:fs';\nexport const x = (p: string) => rmSync(p);\n"],
  // Back edges against the layers, one a layer, and the imports each layer may make.
  infraImportsActivities: ['infra', "import { createHostActivities } from '../activities/host';\nexport const x = createHostActivities;\n"],
  clientImportsActivities: ['client', "import { runPgbench } from '../activities/host/pgbench';\nexport const x = runPgbench;\n"],
  commonImportsLib: ['common', "import { runProcess } from '../lib/process-runner';\nexport const x = runProcess;\n"],
  libImportsAnalysis: ['lib', "import { aggregate } from '../analysis/aggregate';\nexport const x = aggregate;\n"],
  analysisImportsInfra: ['analysis', "import { LocalProvider } from '../infra/providers/local/local-provider';\nexport const x = LocalProvider;\n"],
  activitiesImportWorkflows: ['activities/host', "import { clusterWorkflow } from '../../workflows/cluster-workflow';\nexport const x = clusterWorkflow;\n"],
  downwardImports: ['activities/control', "import { aggregate } from '../../analysis/aggregate';\nimport { runProcess } from '../../lib/process-runner';\nimport { LocalProvider } from '../../infra/providers/local/local-provider';\nexport const x = [aggregate, runProcess, LocalProvider];\n"],
  clientUsesLowerLayers: ['client', "import { renderMarkdown } from '../analysis/report/markdown';\nimport { DirResultsStore } from '../lib/results-store';\nimport type { HostActivities } from '../activities/host';\nexport const x = [renderMarkdown, DirResultsStore];\nexport type X = HostActivities;\n"],
  packageNamedLikeALayer: ['worker', "import { Client } from '@temporalio/client';\nexport const x = Client;\n"],
} as const;

/** The file guard itself may call what it guards. */
const GUARD_FILE = path.join(PROJECT_ROOT, 'lib', 'lab-fs.ts');

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
      [path.join(PROJECT_ROOT, 'node_modules/eslint/bin/eslint.js'), '--no-ignore', '--format', 'json', ...Object.values(files), GUARD_FILE],
      { cwd: PROJECT_ROOT, okExitCodes: [0, 1] },
    );
    const results = JSON.parse(out.stdout) as { filePath: string; messages: { ruleId: string; message: string }[] }[];
    const byFile = new Map(results.map((r) => [r.filePath, r.messages.map((m) => `${m.ruleId}: ${m.message}`)]));
    guardErrors = byFile.get(GUARD_FILE) ?? ['(not linted)'];
    return Object.fromEntries(Object.entries(files).map(([name, file]) => [name, byFile.get(file) ?? ['(not linted)']])) as Record<keyof typeof PROBES, string[]>;
  } finally {
    for (const file of Object.values(files)) rmSync(file, { force: true });
  }
}

let guardErrors: string[] = [];

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

  it('lets workflows import activity types but not activity code, nor the types of lib/ and analysis/', () => {
    expect(errors.activityTypes).toEqual([]);
    expect(errors.activityCode.join('\n')).toMatch(/activity types only/);
    expect(errors.libTypesInWorkflow.join('\n')).toMatch(/common\/ and activity types only/);
    expect(errors.analysisTypesInWorkflow.join('\n')).toMatch(/common\/ and activity types only/);
  });

  it('keeps the CLI off workflow code, types included: it reaches workflows through the Temporal client', () => {
    expect(errors.workflowTypesInClient.join('\n')).toMatch(/no-restricted-imports: .*runs against the layers/);
    expect(errors.workflowCodeInClient.join('\n')).toMatch(/no-restricted-imports: .*runs against the layers/);
  });

  it('refuses a promise nobody awaits in workflows and activities: a step of the plan that may never happen', () => {
    expect(errors.floatingInWorkflow.join('\n')).toMatch(/no-floating-promises/);
    expect(errors.floatingInActivity.join('\n')).toMatch(/no-floating-promises/);
    expect(errors.awaitedInWorkflow).toEqual([]);
  });

  it('allows Node built-ins outside workflow code', () => {
    expect(errors.nodeFsInActivity).toEqual([]);
  });

  it('refuses an rm, chown or write in activities, infra and workers that bypasses the file guard, and lets the guard do it', () => {
    for (const name of ['rmSyncInActivity', 'chownSyncInActivity', 'writeFileSyncInActivity', 'promisesWriteInInfra'] as const)
      expect(`${name}: ${errors[name].join('\n')}`).toMatch(/no-restricted-imports: '\w+' import from '(node:)?fs(\/promises)?' is restricted\. Read, create, write, chown and delete files through lib\/lab-fs\.ts/);
    expect(errors.memberCallInWorker.join('\n')).toMatch(/no-restricted-properties: 'fs\.rmSync' is restricted/);
    expect(errors.memberCallInWorker.join('\n')).toMatch(/no-restricted-syntax: Import the fs functions you need by name/);
    expect(errors.fsWriteInClient).toEqual([]);
    expect(errors.rmSyncInLib.join('\n')).toMatch(/no-restricted-imports: 'rmSync' import from 'node:fs' is restricted/);
    expect(guardErrors).toEqual([]);
  });

  it('refuses a read that bypasses the file guard (it would follow a link another user planted), and lets the guard read', () => {
    for (const name of ['readFileSyncInActivity', 'createReadStreamInLib', 'readdirPromisesInInfra'] as const)
      expect(`${name}: ${errors[name].join('\n')}`).toMatch(/no-restricted-imports: '(readFileSync|createReadStream|readdir)' import from '(node:)?fs(\/promises)?' is restricted\. Read, create, write/);
    expect(errors.readdirPromisesInInfra.join('\n')).toMatch(/'readFile' import from 'node:fs\/promises' is restricted/);
    expect(errors.memberReadInWorker.join('\n')).toMatch(/no-restricted-properties: 'fs\.readFileSync' is restricted/);
    expect(errors.guardedReadInActivity).toEqual([]);
    expect(errors.readInClient).toEqual([]);
  });

  it('refuses an import that runs against the layers, and lets each layer import the ones below it', () => {
    const backEdges = ['infraImportsActivities', 'clientImportsActivities', 'commonImportsLib', 'libImportsAnalysis', 'analysisImportsInfra', 'activitiesImportWorkflows'] as const;
    for (const name of backEdges) expect(`${name}: ${errors[name].join('\n')}`).toMatch(/no-restricted-imports: .* (runs against the layers|the layers import only downwards)/);
    expect(errors.downwardImports).toEqual([]);
    expect(errors.clientUsesLowerLayers).toEqual([]);
    expect(errors.packageNamedLikeALayer).toEqual([]);
  });
});
