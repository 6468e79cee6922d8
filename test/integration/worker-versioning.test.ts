/**
 * The control worker's versioning settings: deployment names Temporal would refuse, build ids from a clean checkout,
 * an edited one and an installed package (real git in a temporary folder), and the check that every workflow
 * declares a versioning behavior, fed a module where one does not.
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WORKFLOW_TYPES } from '../../common/core/names';
import * as workflows from '../../workflows';
import { assertBehaviorsDeclared, deriveBuildId, versioningSettings, workflowsWithoutBehavior } from '../../worker/versioning';

describe('versioningSettings', () => {
  it('names the deployment after the control queue unless STORAGE_LAB_DEPLOYMENT says otherwise', () => {
    expect(versioningSettings('storage-lab', {})).toEqual({ deploymentName: 'storage-lab', buildId: undefined, manual: false });
    expect(versioningSettings('q', { STORAGE_LAB_DEPLOYMENT: 'lab-a', STORAGE_LAB_BUILD_ID: '1.0.0+ci.42', STORAGE_LAB_VERSIONING_MANUAL: '1' })).toEqual({
      deploymentName: 'lab-a',
      buildId: '1.0.0+ci.42',
      manual: true,
    });
  });

  it('refuses a deployment name with a dot (the server refuses it, the worker would poll for nothing)', () => {
    expect(() => versioningSettings('lab.one', {})).toThrow(/"lab\.one" \(from the control task queue\).*without a dot.*STORAGE_LAB_DEPLOYMENT/);
    expect(() => versioningSettings('q', { STORAGE_LAB_DEPLOYMENT: 'a.b' })).toThrow(/from STORAGE_LAB_DEPLOYMENT/);
    expect(() => versioningSettings('q', { STORAGE_LAB_DEPLOYMENT: 'a b' })).toThrow(/white space/);
  });

  it('refuses a build id that is not a plain token and a manual flag that is not 1', () => {
    expect(() => versioningSettings('q', { STORAGE_LAB_BUILD_ID: 'v1; rm -rf /' })).toThrow(/STORAGE_LAB_BUILD_ID/);
    expect(() => versioningSettings('q', { STORAGE_LAB_BUILD_ID: '+leading' })).toThrow(/start with a letter or digit/);
    expect(() => versioningSettings('q', { STORAGE_LAB_VERSIONING_MANUAL: 'yes' })).toThrow(/STORAGE_LAB_VERSIONING_MANUAL must be 1/);
  });
});

describe('deriveBuildId', () => {
  let dir: string;
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd }).toString().trim();
  const sha = (code: string) => createHash('sha256').update(code).digest('hex');
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'build-id-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function makePackage(root: string): void {
    mkdirSync(path.join(root, 'workflows'), { recursive: true });
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'storage-lab', version: '1.2.3' }));
    writeFileSync(path.join(root, 'workflows', 'index.ts'), 'export {};\n');
  }

  it('is <version>+<commit> on a clean checkout, without bundling', async () => {
    makePackage(dir);
    git(dir, 'init', '-q');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'one');
    const commit = git(dir, 'rev-parse', '--short=7', 'HEAD');
    const bundle = jest.fn(() => 'code');
    expect(await deriveBuildId(dir, bundle)).toBe(`1.2.3+${commit}`);
    expect(bundle).not.toHaveBeenCalled();
    // Untracked files (logs, a lab folder) change no code that was built.
    writeFileSync(path.join(dir, 'notes.txt'), 'x');
    expect(await deriveBuildId(dir, bundle)).toBe(`1.2.3+${commit}`);
  });

  it('adds the bundle hash when tracked files were edited: two edits of one commit are two builds', async () => {
    makePackage(dir);
    git(dir, 'init', '-q');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'one');
    const commit = git(dir, 'rev-parse', '--short=7', 'HEAD');
    writeFileSync(path.join(dir, 'workflows', 'index.ts'), 'export const changed = 1;\n');
    const a = await deriveBuildId(dir, () => 'bundle A');
    const b = await deriveBuildId(dir, () => 'bundle B');
    expect(a).toBe(`1.2.3+${commit}.dirty.${sha('bundle A').slice(0, 8)}`);
    expect(b).not.toBe(a);
  });

  it('hashes the bundle without a checkout, and inside another project checkout (an installed package)', async () => {
    const pkg = path.join(dir, 'node_modules', 'storage-lab');
    makePackage(pkg);
    expect(await deriveBuildId(pkg, () => 'code')).toBe(`1.2.3+bundle.${sha('code').slice(0, 12)}`);
    writeFileSync(path.join(dir, 'package.json'), '{}');
    git(dir, 'init', '-q');
    git(dir, 'add', 'package.json');
    git(dir, 'commit', '-q', '-m', 'the host project');
    expect(await deriveBuildId(pkg, () => 'code')).toBe(`1.2.3+bundle.${sha('code').slice(0, 12)}`);
  });

  it('takes an explicit build id as it is, and refuses a malformed one', async () => {
    makePackage(dir);
    expect(await deriveBuildId(dir, () => 'code', '2.0.0+ci.17')).toBe('2.0.0+ci.17');
    await expect(deriveBuildId(dir, () => 'code', 'a b')).rejects.toThrow(/build id "a b"/);
  });
});

describe('versioning behaviors of the workflows', () => {
  it('declares one for every workflow the control worker runs: runs and drills pinned, the sweeper auto-upgrade', () => {
    expect(workflowsWithoutBehavior({ ...workflows })).toEqual([]);
    expect(workflows.VERSIONING_BEHAVIORS).toEqual({
      [WORKFLOW_TYPES.experiment]: 'PINNED',
      [WORKFLOW_TYPES.cluster]: 'PINNED',
      [WORKFLOW_TYPES.nightlyRegression]: 'PINNED',
      [WORKFLOW_TYPES.restoreDrill]: 'PINNED',
      [WORKFLOW_TYPES.restoreToolComparison]: 'PINNED',
      [WORKFLOW_TYPES.failoverDrill]: 'PINNED',
      [WORKFLOW_TYPES.partitionDrill]: 'PINNED',
      [WORKFLOW_TYPES.powerCutDrill]: 'PINNED',
      [WORKFLOW_TYPES.diagnose]: 'PINNED',
      [WORKFLOW_TYPES.sweeper]: 'AUTO_UPGRADE',
    });
  });

  it('finds a workflow missing from the table, one with a behavior that does not exist, one never declared; the worker refuses them', () => {
    const newWorkflow = async () => undefined;
    const misspelt = async () => undefined;
    setWorkflowOptions({ versioningBehavior: 'PINNED' }, misspelt);
    const notApplied = async () => undefined;
    const module = {
      ...workflows,
      VERSIONING_BEHAVIORS: { ...workflows.VERSIONING_BEHAVIORS, misspelt: 'PINNED_FOREVER', notApplied: 'PINNED' },
      newWorkflow,
      misspelt,
      notApplied,
      SOME_CONSTANT: 3,
    };
    expect(workflowsWithoutBehavior(module)).toEqual(['newWorkflow', 'misspelt', 'notApplied']);
    expect(() => assertBehaviorsDeclared(module)).toThrow(/newWorkflow, misspelt, notApplied; declare PINNED or AUTO_UPGRADE/);
  });
});
