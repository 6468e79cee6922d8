/**
 * The host agent: an activities-only worker on task queue `host:<hostId>`, next to the host's Postgres.
 * Started inside the host's cgroups (locally by its supervisor, on EC2 by systemd), so what it starts inherits them.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import path from 'node:path';
import { createHostActivities } from '../activities/host';
import { clientOsUser, postgresOsUser } from '../lib/postgres-binaries';
import { registerLabRoot } from '../lib/lab-fs';
import { hostAgentRoots } from '../lib/lab-paths';
import { readConfig } from '../infra/providers/local/host-config-file';
import { IoCap } from '../lib/io-cap';
import { MemoryLimit } from '../lib/memory-limit';
import { connectionOptions, temporalEnv } from './env';
import { installLogging, log } from './logging';
import { testSeamsFromEnv } from '../common/core/test-seams';

async function main(): Promise<void> {
  const configFile = process.argv[2];
  if (!configFile) throw new Error('usage: host-agent <host.json>');
  // The host's folder first: its host.json is read through the file guard.
  registerLabRoot(path.dirname(path.resolve(configFile)));
  const config = readConfig(configFile);
  // All the agent reads, writes or deletes (lib/lab-fs.ts refuses anything else).
  registerLabRoot(...hostAgentRoots(config));
  installLogging({ role: 'host-agent', hostId: config.hostId, runId: config.runId });
  // An agent that died while preparation ran with the cap lifted left its host's volume unmodelled: the model goes
  // back on before this agent takes any task (it fails to start rather than measure uncapped).
  const ioCap = new IoCap(config);
  await ioCap.apply();
  log('INFO', ioCap.liftable ? `the ${config.volume?.model} device model is on; preparation lifts it` : `I/O cap: ${ioCap.note}`);
  // Likewise the memory limit, which a data set's preparation lifts (lib/memory-limit.ts).
  const memoryLimit = new MemoryLimit(config);
  await memoryLimit.apply();
  if (memoryLimit.liftable) log('INFO', `memory limit ${config.limits.memoryLimitMiB} MiB set; a data set's preparation lifts it`);
  const testSeams = testSeamsFromEnv(process.env);
  if (testSeams.asyncQuorum) log('WARN', "test seam on: this host writes synchronous_standby_names = '' whatever a drill asks");
  if (testSeams.durabilityOff) log('WARN', `test seam on: this host writes ${testSeams.durabilityOff} = off whatever the lab and the spec ask`);
  const temporal = temporalEnv();
  const connection = await NativeConnection.connect(connectionOptions(temporal));
  const worker = await Worker.create({
    connection,
    namespace: temporal.namespace,
    taskQueue: config.taskQueue,
    activities: createHostActivities({ config, osUser: postgresOsUser(), clientUser: clientOsUser(), ioCap, memoryLimit, testSeams }),
    // The SDK sends heartbeats at most every 0.8 x the heartbeat timeout (48 s for a TPS run): progress (second,
    // TPS, rows, ETA) would reach the UI and `storage-lab watch` once a minute. Heartbeats are RPCs, not history
    // events, so sending the latest every 2 s costs the history nothing.
    maxHeartbeatThrottleInterval: '2 seconds',
  });
  log('INFO', `host agent ${config.hostId} (pid ${process.pid}) polling "${config.taskQueue}" on ${temporal.address}`);
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  log('ERROR', `host agent stopped: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
