/** The CLI's Temporal client, from the same environment variables the workers read. */
import { Client, Connection } from '@temporalio/client';
import { localEndpoints } from './local-services';
import { temporalEnv } from '../worker/env';
import { UserError } from './errors';

export interface LabClient {
  client: Client;
  namespace: string;
  address: string;
  close(): Promise<void>;
}

export async function connectClient(): Promise<LabClient> {
  const t = temporalEnv();
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: t.address, tls: t.tls, apiKey: t.apiKey, connectTimeout: 5_000 });
  } catch (err) {
    throw new UserError(
      `cannot reach Temporal at ${t.address} (${(err as Error).message}); start it with "storage-lab dev up" or set TEMPORAL_ADDRESS`,
    );
  }
  return {
    client: new Client({ connection, namespace: t.namespace }),
    namespace: t.namespace,
    address: t.address,
    close: () => connection.close(),
  };
}

/** Where the Temporal UI shows a workflow. */
export function workflowUrl(namespace: string, workflowId: string): string {
  const ui = process.env.STORAGE_LAB_UI_URL ?? localEndpoints().uiUrl;
  return `${ui}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
