/**
 * The control worker: workflows and control-plane activities (provider, results, report) on task queue
 * "storage-lab". Hosts are started by its provider; their agents run host activities elsewhere.
 */
import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import path from 'node:path';
import { createControlActivities } from '../activities/control';
import { keepAlive } from '../activities/lib/heartbeat';
import { DirResultsStore, type ResultsStore } from '../activities/control/results-store';
import { CONTROL_TASK_QUEUE } from '../common/names';
import { labPaths, registerLabPaths, type LabPaths } from '../infra/lab-paths';
import type { HostProvider } from '../infra/providers/host-provider';
import { LocalProvider } from '../infra/providers/local/local-provider';
import { awsControlSetup, awsEnv } from './aws-setup';
import { connectionOptions, controlTaskQueue, temporalEnv, type TemporalEnv } from './env';
import { installLogging, log } from './logging';

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
}

/** Builds the control worker with real providers and the results folder. */
export async function createControlWorker(opts: ControlWorkerOptions): Promise<Worker> {
  // The lab's folders: the only places its activities write or delete (infra/lab-fs.ts).
  registerLabPaths(opts.paths);
  const local = new LocalProvider({
    hostsDir: opts.paths.hostsDir,
    agentEnv: { TEMPORAL_ADDRESS: opts.temporal.address, TEMPORAL_NAMESPACE: opts.temporal.namespace },
    supervisorScript: path.join(__dirname, 'host-supervisor.js'),
  });
  const awsSettings = opts.aws === undefined ? awsEnv() : null;
  const aws = opts.aws === undefined ? awsSettings && awsControlSetup(awsSettings, opts.temporal) : opts.aws;
  const activities = createControlActivities({
    providers: { local, ...(aws ? { aws: aws.provider } : {}) },
    // On AWS results go to S3, where a control worker on another machine (or a person) finds them.
    results: aws?.results ?? new DirResultsStore(opts.paths.resultsDir),
    hostsDir: opts.paths.hostsDir,
    client: new Client({ connection: opts.connection, namespace: opts.temporal.namespace }),
  });
  return Worker.create({
    connection: opts.connection,
    namespace: opts.temporal.namespace,
    taskQueue: opts.taskQueue ?? CONTROL_TASK_QUEUE,
    // Heartbeats from every control activity: a crashed worker's activities are retried within a heartbeat timeout.
    activities: keepAlive(activities),
    interceptors: opts.interceptors,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: require.resolve('../workflows') }),
  });
}

async function main(): Promise<void> {
  const taskQueue = controlTaskQueue();
  installLogging({ role: 'control-worker', taskQueue });
  const temporal = temporalEnv();
  const connection = await NativeConnection.connect(connectionOptions(temporal));
  const worker = await createControlWorker({ connection, temporal, paths: labPaths(), taskQueue });
  const aws = awsEnv();
  log('INFO', `control worker polling "${taskQueue}" on ${temporal.address} (namespace ${temporal.namespace})`, {
    aws: aws ? `${aws.region}, results in s3://${aws.bucket}/${aws.resultsPrefix}` : 'off (STORAGE_LAB_AWS=1 turns it on)',
  });
  try {
    await worker.run();
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
