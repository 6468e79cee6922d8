/**
 * The control worker as a process of its own, so a test can kill -9 it: the production worker
 * (startControlWorker, same environment variables as worker/control-worker.ts) plus one fault hook.
 * STORAGE_LAB_FAULT_HOLDS="provisionHost:after,teardownHost:before" makes those activities stop before or after
 * doing their work (after: the work is done, its completion never reported) and write
 * $STORAGE_LAB_FAULT_DIR/<activity>-<when> so the test knows when to kill. Short activities cannot be hit by a
 * kill otherwise.
 */
import { Context } from '@temporalio/activity';
import { NativeConnection } from '@temporalio/worker';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { labPaths } from '../../lib/lab-paths';
import { startControlWorker } from '../../worker/control-worker';
import { connectionOptions, controlTaskQueue, temporalEnv } from '../../worker/env';

type When = 'before' | 'after';

function holds(): Map<string, When> {
  const spec = process.env.STORAGE_LAB_FAULT_HOLDS ?? '';
  return new Map(
    spec
      .split(',')
      .filter(Boolean)
      .map((h) => h.split(':') as [string, When]),
  );
}

/** Writes the marker, then never returns: the test kills this process now. */
async function hold(activity: string, when: When): Promise<never> {
  writeFileSync(path.join(process.env.STORAGE_LAB_FAULT_DIR ?? '.', `${activity}-${when}`), String(process.pid));
  for (;;) await new Promise((r) => setTimeout(r, 60_000));
}

async function main(): Promise<void> {
  const temporal = temporalEnv();
  const connection = await NativeConnection.connect(connectionOptions(temporal));
  const taskQueue = controlTaskQueue();
  const planned = holds();
  const { running } = await startControlWorker({
    connection,
    temporal,
    paths: labPaths(),
    taskQueue,
    workflowBundle: process.env.STORAGE_LAB_TEST_BUNDLE ? { codePath: process.env.STORAGE_LAB_TEST_BUNDLE } : undefined,
    aws: null,
    interceptors: {
      activity: [
        () => ({
          inbound: {
            async execute(input, next) {
              const type = Context.current().info.activityType;
              const when = planned.get(type);
              if (when === 'before') await hold(type, when);
              const result = await next(input);
              if (when === 'after') await hold(type, when);
              return result;
            },
          },
        }),
      ],
    },
  });
  console.log(`control worker ${process.pid} polling "${taskQueue}"; holds: ${[...planned].map((h) => h.join(':')).join(', ') || 'none'}`);
  await running;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
