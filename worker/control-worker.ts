/**
 * The control worker: workflows and control-plane activities (provider, results, report) on task queue
 * "storage-lab". Hosts are started by its provider; their agents run host activities elsewhere (unversioned: a
 * pinned run's host activities reach whichever agent polls the host's queue).
 * It runs as one version of a worker deployment (worker/versioning.ts): new runs go to the current version, a
 * pinned run stays on the build it started on.
 */
import { Client } from '@temporalio/client';
import { toCanonicalString, type WorkerDeploymentVersion } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { readOperatorFile } from '../lib/lab-fs';
import path from 'node:path';
import { createControlActivities } from '../activities/control';
import { keepAlive } from '../activities/heartbeat';
import { DirResultsStore, type ResultsStore } from '../lib/results-store';
import { CONTROL_TASK_QUEUE } from '../common/core/names';
import { labPaths, PROJECT_ROOT, registerLabPaths, type LabPaths } from '../lib/lab-paths';
import type { HostProvider } from '../infra/providers/host-provider';
import { LocalProvider } from '../infra/providers/local/local-provider';
import { awsEnv } from './aws-env';
import { connectionOptions, controlTaskQueue, temporalEnv, type TemporalEnv } from './env';
import { installLogging, log } from './logging';
import { testSeamEnv, type TestSeams } from '../common/core/test-seams';
import {
  assertBehaviorsDeclared,
  deploymentOptions,
  deriveBuildId,
  makeCurrent,
  versioningSettings,
  versionStatus,
  type VersioningSettings,
} from './versioning';

export interface ControlWorkerOptions {
  connection: NativeConnection;
  temporal: TemporalEnv;
  paths: LabPaths;
  /** A pre-built workflow bundle (tests build it once); otherwise bundled from ../workflows. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  taskQueue?: string;
  /** The AWS provider and results store; by default from STORAGE_LAB_AWS and friends (worker/aws-setup.ts), null for none. */
  aws?: { provider: HostProvider; results: ResultsStore } | null;
  /** Worker interceptors (the fault tests inject crashes with them). */
  interceptors?: WorkerOptions['interceptors'];
  /** Deployment, build id and promotion; by default from the environment (versioningSettings) for the task queue. */
  versioning?: VersioningSettings;
  /** Tests only (common/core/test-seams.ts): switches the host agents this worker starts get; never set by main(). */
  testSeams?: TestSeams;
}

/** A started control worker: its deployment version, and its run (resolves when the worker has stopped). */
export interface ControlWorker {
  worker: Worker;
  version: WorkerDeploymentVersion;
  running: Promise<void>;
}

/** The workflow bundle, built once here unless given: its code is also what a derived build id hashes. */
async function workflowCode(given: ControlWorkerOptions['workflowBundle']): Promise<{ code: string }> {
  if (given && 'code' in given) return { code: given.code };
  if (given) return { code: readOperatorFile(given.codePath).toString('utf8') };
  // The same module, loaded here in Node, to check what the bundle will declare.
  assertBehaviorsDeclared({ ...(await import('../workflows')) });
  return bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: Runtime.instance().logger });
}

/**
 * Builds the control worker with real providers and the results folder, and starts it: unless the settings say the
 * operator promotes builds, it makes its version current once it polls (resolving after that, so a run started
 * next reaches it) and stops by itself when a newer build is current and no pinned run is left on its own.
 */
export async function startControlWorker(opts: ControlWorkerOptions): Promise<ControlWorker> {
  // The lab's folders: the only places its activities write or delete (lib/lab-fs.ts).
  registerLabPaths(opts.paths);
  const taskQueue = opts.taskQueue ?? CONTROL_TASK_QUEUE;
  const settings = opts.versioning ?? versioningSettings(taskQueue);
  const bundle = await workflowCode(opts.workflowBundle);
  const version = { deploymentName: settings.deploymentName, buildId: await deriveBuildId(PROJECT_ROOT, () => bundle.code, settings.buildId) };
  const client = new Client({ connection: opts.connection, namespace: opts.temporal.namespace });
  const local = new LocalProvider({
    hostsDir: opts.paths.hostsDir,
    agentEnv: { TEMPORAL_ADDRESS: opts.temporal.address, TEMPORAL_NAMESPACE: opts.temporal.namespace, ...testSeamEnv(opts.testSeams) },
    supervisorScript: path.join(__dirname, 'host-supervisor.js'),
  });
  const awsSettings = opts.aws === undefined ? awsEnv() : null;
  // Loaded only when AWS is on: the SDK costs every local control worker ~0.4 s of CPU otherwise.
  const aws = opts.aws === undefined ? awsSettings && (await import('./aws-setup')).awsControlSetup(awsSettings, opts.temporal) : opts.aws;
  const activities = createControlActivities({
    providers: { local, ...(aws ? { aws: aws.provider } : {}) },
    // On AWS results go to S3, where a control worker on another machine (or a person) finds them.
    results: aws?.results ?? new DirResultsStore(opts.paths.resultsDir),
    hostsDir: opts.paths.hostsDir,
    client,
  });
  const worker = await Worker.create({
    connection: opts.connection,
    namespace: opts.temporal.namespace,
    taskQueue,
    // Heartbeats from every control activity: a crashed worker's activities are retried within a heartbeat timeout.
    activities: keepAlive(activities),
    interceptors: opts.interceptors,
    workflowBundle: bundle,
    workerDeploymentOptions: deploymentOptions(version),
  });
  const running = worker.run();
  if (!settings.manual) {
    try {
      await makeCurrent(client, version);
    } catch (err) {
      worker.shutdown();
      await running;
      throw err;
    }
    void retireWhenDrained(worker, client, version);
  }
  log('INFO', `control worker is ${toCanonicalString(version)}${settings.manual ? ' (the operator makes builds current)' : ', current'}`);
  return { worker, version, running };
}

/**
 * Shuts the worker down once another build has become current and the server reports this version drained (no
 * open pinned run left on it): a superseded build serves its runs to the end, then goes away by itself. Checks every
 * intervalMs until the worker stops.
 */
export async function retireWhenDrained(worker: Worker, client: Client, version: WorkerDeploymentVersion, intervalMs = 15_000): Promise<void> {
  const DRAINED = temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED;
  while (worker.getState() === 'RUNNING') {
    // Unreferenced: a stopped worker's process (or a test) need not wait for the next check.
    await new Promise((r) => setTimeout(r, intervalMs).unref());
    if (worker.getState() !== 'RUNNING') return;
    try {
      if ((await versionStatus(client, version)) !== DRAINED) continue;
    } catch (err) {
      log('WARN', `could not read the status of ${toCanonicalString(version)}: ${(err as Error).message}`);
      continue;
    }
    log('INFO', `${toCanonicalString(version)} is drained (another build is current, no pinned run left on this one): stopping`);
    worker.shutdown();
  }
}

async function main(): Promise<void> {
  const taskQueue = controlTaskQueue();
  installLogging({ role: 'control-worker', taskQueue });
  const temporal = temporalEnv();
  const connection = await NativeConnection.connect(connectionOptions(temporal));
  const { running } = await startControlWorker({ connection, temporal, paths: labPaths(), taskQueue });
  const aws = awsEnv();
  log('INFO', `control worker polling "${taskQueue}" on ${temporal.address} (namespace ${temporal.namespace})`, {
    aws: aws ? `${aws.region}, results in s3://${aws.bucket}/${aws.resultsPrefix}` : 'off (STORAGE_LAB_AWS=1 turns it on)',
  });
  try {
    await running;
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  main().catch((err) => {
    log('ERROR', `control worker stopped: ${(err as Error).stack ?? err}`);
    process.exit(1);
  });
}
