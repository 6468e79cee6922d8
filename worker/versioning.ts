/**
 * Worker Versioning for the control worker: its deployment name and build id, computed once at start; making a
 * build the deployment's current version (new runs go to it, pinned runs stay where they started); and reading a
 * version's status (a superseded build is drained once its pinned runs have closed). No worker runtime here: the
 * CLI (`dev up`) derives build ids too.
 */
import type { Client } from '@temporalio/client';
import { toCanonicalString, type WorkerDeploymentVersion } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { WorkerDeploymentOptions } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { readOperatorFile } from '../lib/lab-fs';
import os from 'node:os';
import path from 'node:path';
import { runProcess } from '../lib/process-runner';

/** How a build id may be spelled: semver build metadata characters, so it is safe in a shell, a file name and a URL. */
const BUILD_ID = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,254}$/;

/** Where the control worker's versioning settings come from (environment, or a test's explicit choice). */
export interface VersioningSettings {
  /** The worker deployment: STORAGE_LAB_DEPLOYMENT, by default the control task queue (one deployment per lab). */
  deploymentName: string;
  /** STORAGE_LAB_BUILD_ID: a build id of the operator's choosing (CI); otherwise derived from the code. */
  buildId?: string;
  /** STORAGE_LAB_VERSIONING_MANUAL=1: the operator promotes builds; the worker never makes itself current. */
  manual: boolean;
}

/** Reads STORAGE_LAB_DEPLOYMENT, STORAGE_LAB_BUILD_ID and STORAGE_LAB_VERSIONING_MANUAL, checked at start. */
export function versioningSettings(taskQueue: string, env: NodeJS.ProcessEnv = process.env): VersioningSettings {
  const manual = env.STORAGE_LAB_VERSIONING_MANUAL ?? '';
  if (!['', '0', '1'].includes(manual))
    throw new Error(`STORAGE_LAB_VERSIONING_MANUAL must be 1 (the operator promotes builds) or 0 / unset (got "${manual}")`);
  const deploymentName = env.STORAGE_LAB_DEPLOYMENT || taskQueue;
  checkDeploymentName(deploymentName, env.STORAGE_LAB_DEPLOYMENT ? 'STORAGE_LAB_DEPLOYMENT' : 'the control task queue');
  const buildId = env.STORAGE_LAB_BUILD_ID || undefined;
  if (buildId) checkBuildId(buildId, 'STORAGE_LAB_BUILD_ID');
  return { deploymentName, buildId, manual: manual === '1' };
}

/** Temporal splits a version's canonical name "deployment.build" at the first dot: a dot in the name breaks it. */
function checkDeploymentName(name: string, from: string): void {
  if (!name || name.includes('.') || /[\s\p{Cc}]/u.test(name) || name.length > 255)
    throw new Error(
      `worker deployment name "${name}" (from ${from}) must be 1-255 characters without a dot or white space ` +
        `(Temporal refuses a dot in it); set STORAGE_LAB_DEPLOYMENT to a name such as "storage-lab"`,
    );
}

function checkBuildId(buildId: string, from: string): void {
  if (!BUILD_ID.test(buildId))
    throw new Error(`build id "${buildId}" (from ${from}) must be 1-255 of A-Z a-z 0-9 . + _ - and start with a letter or digit, e.g. 0.1.0+50ae62b`);
}

/** The package's version, as package.json at the package root says. */
function packageVersion(packageRoot: string): string {
  return (JSON.parse(readOperatorFile(path.join(packageRoot, 'package.json')).toString('utf8')) as { version: string }).version;
}

/** The commit and whether tracked files differ from it, when packageRoot is itself a git checkout's top (else null). */
async function gitState(packageRoot: string): Promise<{ commit: string; dirty: boolean } | null> {
  const git = (args: string[]) => runProcess('git', ['-C', packageRoot, ...args], { timeoutMs: 10_000 }).then((r) => r.stdout.trim());
  let top: string;
  try {
    top = await git(['rev-parse', '--show-toplevel']);
  } catch {
    return null; // No git, or not inside a checkout.
  }
  // An installed package inside another project's checkout: that project's commit says nothing about this code.
  if (realpathSync(top) !== realpathSync(packageRoot)) return null;
  const commit = await git(['rev-parse', '--short=7', 'HEAD']);
  const dirty = (await git(['status', '--porcelain', '--untracked-files=no'])) !== '';
  return { commit, dirty };
}

/** sha256 of the workflow bundle, hex: the code a pinned run replays. */
function bundleHash(code: string, length: number): string {
  return createHash('sha256').update(code).digest('hex').slice(0, length);
}

/**
 * The build id of the code at packageRoot: `<version>+<commit>` on a clean checkout (0.1.0+50ae62b);
 * `<version>+<commit>.dirty.<bundle hash>` when tracked files were changed (two edits of one commit are two builds);
 * `<version>+bundle.<bundle hash>` without a checkout of its own (an installed package: the same code at the same
 * path gives the same id). An explicit buildId wins. bundleCode is read only when the hash is needed.
 */
export async function deriveBuildId(packageRoot: string, bundleCode: () => string | Promise<string>, explicit?: string): Promise<string> {
  if (explicit) {
    checkBuildId(explicit, 'the explicit build id');
    return explicit;
  }
  const version = packageVersion(packageRoot);
  const git = await gitState(packageRoot);
  if (!git) return `${version}+bundle.${bundleHash(await bundleCode(), 12)}`;
  return git.dirty ? `${version}+${git.commit}.dirty.${bundleHash(await bundleCode(), 8)}` : `${version}+${git.commit}`;
}

/**
 * Worker options that put a worker in its deployment version. The default behavior only applies to a workflow that
 * declares none, which assertBehaviorsDeclared refuses: pinned is the safe side (it never replays on other code).
 */
export function deploymentOptions(version: WorkerDeploymentVersion): WorkerDeploymentOptions {
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

/** The behaviors a workflow may declare (workflows/index.ts). */
const BEHAVIORS: readonly string[] = ['PINNED', 'AUTO_UPGRADE'];

/**
 * Exported workflow functions of a workflows module without a versioning behavior: none (or no valid one) in its
 * VERSIONING_BEHAVIORS table, or the declaration never applied to the function (setWorkflowOptions).
 */
export function workflowsWithoutBehavior(workflows: Record<string, unknown>): string[] {
  const table = (workflows.VERSIONING_BEHAVIORS ?? {}) as Record<string, unknown>;
  return Object.entries(workflows)
    .filter(([, fn]) => typeof fn === 'function')
    .filter(([name, fn]) => !BEHAVIORS.includes(table[name] as string) || !(fn as { workflowDefinitionOptions?: unknown }).workflowDefinitionOptions)
    .map(([name]) => name);
}

/** Refuses a workflows module where a workflow has no versioning behavior: it would silently get the default. */
export function assertBehaviorsDeclared(workflows: Record<string, unknown>): void {
  const missing = workflowsWithoutBehavior(workflows);
  if (missing.length)
    throw new Error(
      `workflows without a versioning behavior: ${missing.join(', ')}; declare PINNED or AUTO_UPGRADE for each in VERSIONING_BEHAVIORS (workflows/index.ts)`,
    );
}

/**
 * gRPC codes worth asking again until makeCurrent's deadline: the server answers NOT_FOUND or FAILED_PRECONDITION
 * while it has not yet seen the new version's pollers, and on a loaded machine the call itself can run out of time
 * (DEADLINE_EXCEEDED: "Timeout expired", seen with three test files at once on 2 cores) or find the server briefly
 * unavailable. A second call is harmless: setting the version that is already current changes nothing. Anything else
 * (a bad argument, no permission) fails at once.
 */
const ASK_AGAIN = new Set([4 /* DEADLINE_EXCEEDED */, 5 /* NOT_FOUND */, 9 /* FAILED_PRECONDITION */, 14 /* UNAVAILABLE */]);

/** Whether makeCurrent asks again after an error with this gRPC code (undefined: not a gRPC error). */
export function askAgainAfter(code: number | undefined): boolean {
  return code !== undefined && ASK_AGAIN.has(code);
}

/**
 * Makes a version its deployment's current version: new workflow executions (and auto-upgrade runs' next tasks) go
 * to it. The server refuses a version it has seen no poller of, so call it once the worker runs; it retries until
 * the first poll has reached the server. Setting the version that is already current changes nothing.
 */
export async function makeCurrent(client: Client, version: WorkerDeploymentVersion, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.workflowService.setWorkerDeploymentCurrentVersion({
        namespace: client.options.namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: `storage-lab control worker ${process.pid}@${os.hostname()}`,
      });
      return;
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (!askAgainAfter(code) || Date.now() > deadline)
        throw new Error(`could not make ${toCanonicalString(version)} current: ${(err as Error).message}${code === undefined ? '' : ` (gRPC code ${code})`}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** The version's status as the server reports it (current, ramping, draining, drained, inactive). */
export async function versionStatus(client: Client, version: WorkerDeploymentVersion): Promise<temporal.api.enums.v1.WorkerDeploymentVersionStatus> {
  const res = await client.workflowService.describeWorkerDeploymentVersion({
    namespace: client.options.namespace,
    deploymentVersion: version,
  });
  return res.workerDeploymentVersionInfo?.status ?? temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_UNSPECIFIED;
}
