/**
 * The host agent: an activities-only worker on task queue `host:<hostId>`, next to the host's Postgres.
 * Started inside the host's cgroups (locally by the provider, on EC2 by systemd), so what it starts inherits them.
 */
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createHostActivities } from '../activities/host';
import { postgresOsUser } from '../infra/postgres-binaries';
import { readConfig } from '../infra/providers/local/local-provider';
import { connectionOptions, temporalEnv } from './env';

async function main(): Promise<void> {
  const configFile = process.argv[2];
  if (!configFile) throw new Error('usage: host-agent <host.json>');
  const config = readConfig(configFile);
  const temporal = temporalEnv();
  const connection = await NativeConnection.connect(connectionOptions(temporal));
  const client = new Client({ connection, namespace: temporal.namespace });
  const worker = await Worker.create({
    connection,
    namespace: temporal.namespace,
    taskQueue: config.taskQueue,
    activities: createHostActivities({ config, osUser: postgresOsUser(), client }),
  });
  console.log(`host agent ${config.hostId} (pid ${process.pid}) polling "${config.taskQueue}" on ${temporal.address}`);
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
