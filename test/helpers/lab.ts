/**
 * A real lab for integration tests: a lab home under a temporary folder, the real control worker (local provider,
 * results folder) on a task queue of its own, host agents as real processes, and a check that nothing is left.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { hostFolderName } from '../../common/core/ids';
import { WORKFLOW_TYPES } from '../../common/core/names';
import { labPaths, type LabPaths } from '../../lib/lab-paths';
import { detectCgroups, hostCgroupPaths } from '../../lib/cgroups';
import { CUT_TABLE_PREFIX, labCutTag } from '../../lib/network-cut';
import { startControlWorker, type ControlWorkerOptions } from '../../worker/control-worker';
import { connect, serverAddress, uniqueId, workflowBundle } from './temporal';

export interface TestLab {
  paths: LabPaths;
  connection: NativeConnection;
  client: Client;
  taskQueue: string;
  worker: Worker;
  /** Starts an experiment on this lab's control queue. */
  startExperiment(input: Record<string, unknown>, workflowId?: string): Promise<WorkflowHandle>;
  /** Stops the control worker (tests that crash it start another with restartWorker). */
  stopWorker(): Promise<void>;
  restartWorker(): Promise<void>;
  /** What a run left behind: host folders, mounts, loop devices, cgroups, network cuts, processes. Empty when clean. */
  leftovers(hostIds: string[]): string[];
  close(): Promise<void>;
}

/** A lab's control worker options beyond the defaults: an AWS side made from the lab's paths (moto tests). */
export interface TestLabOptions {
  aws?: (paths: LabPaths) => ControlWorkerOptions['aws'];
  /** Another Temporal server than the suite's (a test that restarts its own server). */
  address?: string;
  /** Another workflow bundle than the suite's (a test seam swapped in: test/helpers/bundle-swap.ts). */
  workflowBundle?: ControlWorkerOptions['workflowBundle'];
  /** Worker interceptors of the control worker (a fault test acting right after an activity). */
  interceptors?: ControlWorkerOptions['interceptors'];
  /** Switches of the host agents this lab starts (common/core/test-seams.ts). */
  testSeams?: ControlWorkerOptions['testSeams'];
}

export async function startTestLab(name: string, opts: TestLabOptions = {}): Promise<TestLab> {
  const base = process.env.STORAGE_LAB_TEST_DIR;
  if (!base) throw new Error('run through jest: global setup makes the suite folder');
  const home = mkdtempSync(path.join(base, `${name}-`));
  chmodSync(home, 0o755); // The postgres user must reach the host folders below it.
  const paths = labPaths({ ...process.env, STORAGE_LAB_HOME: home, STORAGE_LAB_HOSTS_DIR: path.join(home, 'hosts') });
  const address = opts.address ?? serverAddress();
  const { connection, client } = await connect(address);
  const taskQueue = uniqueId(`lab-${name}`);
  const temporal = { address, namespace: 'default' };

  let worker: Worker;
  let running: Promise<void>;
  const startWorker = async () => {
    // A deployment of its own (named after its queue), made current by the worker, as `dev up` does.
    const versioning = { deploymentName: taskQueue, manual: false };
    ({ worker, running } = await startControlWorker({
      connection,
      temporal,
      paths,
      taskQueue,
      workflowBundle: opts.workflowBundle ?? workflowBundle(),
      aws: opts.aws?.(paths),
      versioning,
      interceptors: opts.interceptors,
      testSeams: opts.testSeams,
    }));
  };
  await startWorker();

  const lab: TestLab = {
    paths,
    connection,
    client,
    taskQueue,
    get worker() {
      return worker;
    },
    startExperiment: (input, workflowId) =>
      client.workflow.start(WORKFLOW_TYPES.experiment, {
        taskQueue,
        workflowId: workflowId ?? uniqueId(`exp-${name}`),
        args: [input],
      }),
    async stopWorker() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
    restartWorker: startWorker,
    leftovers: (hostIds) => leftovers(paths, hostIds),
    async close() {
      await lab.stopWorker();
      await connection.close();
      if (!process.env.STORAGE_LAB_KEEP_TEST_DIR) rmSync(home, { recursive: true, force: true });
    },
  };
  return lab;
}

function leftovers(paths: LabPaths, hostIds: string[]): string[] {
  const found: string[] = [];
  if (existsSync(paths.hostsDir))
    for (const entry of readdirSync(paths.hostsDir)) found.push(`host folder ${path.join(paths.hostsDir, entry)}`);
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n'))
    if (line.split(' ')[1]?.startsWith(paths.hostsDir)) found.push(`mount ${line}`);
  const loops = execFileSync('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE']).toString();
  for (const line of loops.split('\n')) if (line.includes(paths.hostsDir)) found.push(`loop device ${line.trim()}`);
  const cg = detectCgroups();
  if (cg.kind)
    for (const hostId of hostIds)
      for (const dir of hostCgroupPaths(cg.kind, hostId).dirs) if (existsSync(dir)) found.push(`cgroup ${dir}`);
  // The lab's network cuts (nftables tables named after its hosts folder), where this machine has nftables.
  if (process.getuid?.() === 0 && ['/usr/sbin/nft', '/sbin/nft'].some((p) => existsSync(p))) {
    const prefix = `${CUT_TABLE_PREFIX}${labCutTag(paths.hostsDir)}_`;
    const listed = JSON.parse(execFileSync('nft', ['-j', 'list', 'tables', 'inet']).toString()) as { nftables: { table?: { name: string } }[] };
    for (const e of listed.nftables) if (e.table?.name.startsWith(prefix)) found.push(`nftables table inet ${e.table.name}`);
  }
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(paths.hostsDir)) found.push(`process ${pid}: ${cmd.trim()}`);
    } catch {
      // Exited while we looked.
    }
  }
  return found;
}

/** A local host's folder: named after a hash of its id (common/core/ids.ts hostFolderName). */
/**
 * Starts a lab of its own for one case of a file whose cases run at once, and the case's body in it. The lab joins
 * `labs` (the file's afterAll closes them). The returned run is awaited by its case, which reports a failure there;
 * until then a rejection is not unhandled.
 */
export function runInOwnLab<T>(labs: TestLab[], name: string, body: (lab: TestLab) => Promise<T>): Promise<T> {
  const run = startTestLab(name).then((lab) => {
    labs.push(lab);
    return body(lab);
  });
  run.catch(() => undefined);
  return run;
}

export function hostDirOf(paths: Pick<LabPaths, 'hostsDir'>, hostId: string): string {
  return path.join(paths.hostsDir, hostFolderName(hostId));
}

/** Pids of a host's agent processes (not the supervisor): what a "kill -9 the agent" test kills. */
export function agentPids(paths: LabPaths, hostId: string): number[] {
  const config = path.join(hostDirOf(paths, hostId), 'host.json');
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return cmd.some((a) => a.endsWith('host-agent.js')) && cmd.includes(config);
      } catch {
        return false;
      }
    })
    .map(Number);
}
