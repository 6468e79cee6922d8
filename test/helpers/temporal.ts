/** The suite's Temporal server, as tests reach it. */
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';

let runtimeInstalled = false;
/** Workers in tests log errors only: expected activity failures would drown the test output otherwise. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger(process.env.STORAGE_LAB_TEST_LOG_LEVEL === 'debug' ? 'DEBUG' : 'ERROR') });
}

export function serverAddress(): string {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set: run tests through jest (global setup starts the server)');
  return address;
}

export function workflowBundle(): { codePath: string } {
  const codePath = process.env.STORAGE_LAB_TEST_BUNDLE;
  if (!codePath) throw new Error('STORAGE_LAB_TEST_BUNDLE is not set: run tests through jest');
  return { codePath };
}

export async function connect(address = serverAddress()): Promise<{ connection: NativeConnection; client: Client }> {
  quietRuntime();
  const connection = await NativeConnection.connect({ address });
  return { connection, client: new Client({ connection }) };
}

let counter = 0;
/** A workflow id or task queue name no other test uses. */
export function uniqueId(prefix: string): string {
  counter++;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}
