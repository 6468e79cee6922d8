/** Worker environment, validated at start so a typo fails loudly before any task is taken. */
import type { NativeConnectionOptions } from '@temporalio/worker';
import { readOperatorFile } from '../lib/lab-fs';
import { CONTROL_TASK_QUEUE } from '../common/core/names';

export interface TemporalEnv {
  address: string;
  namespace: string;
  /** TLS and API key for Temporal Cloud or a secured cluster; unset for the local dev server. */
  tls?: NativeConnectionOptions['tls'];
  apiKey?: string;
}

/** Reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the optional TLS / API key settings. */
export function temporalEnv(env: NodeJS.ProcessEnv = process.env): TemporalEnv {
  const address = env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  if (!/^[\w.-]+:\d+$/.test(address))
    throw new Error(`TEMPORAL_ADDRESS must be host:port (got "${address}"), for example 127.0.0.1:7233`);
  const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
  const certFile = env.TEMPORAL_TLS_CERT;
  const keyFile = env.TEMPORAL_TLS_KEY;
  if (Boolean(certFile) !== Boolean(keyFile))
    throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both (mTLS) or neither');
  const apiKey = env.TEMPORAL_API_KEY_FILE ? readOperatorFile(env.TEMPORAL_API_KEY_FILE).toString('utf8').trim() : undefined;
  const tls: NativeConnectionOptions['tls'] =
    certFile && keyFile
      ? { clientCertPair: { crt: readOperatorFile(certFile), key: readOperatorFile(keyFile) } }
      : apiKey
        ? true
        : undefined;
  return { address, namespace, tls, apiKey };
}

/** Connection options for a worker or client from the validated environment. */
export function connectionOptions(t: TemporalEnv): NativeConnectionOptions {
  return { address: t.address, tls: t.tls, apiKey: t.apiKey };
}

/** The control worker's task queue: "storage-lab", or STORAGE_LAB_CONTROL_QUEUE for a second lab on one server. */
export function controlTaskQueue(env: NodeJS.ProcessEnv = process.env): string {
  return env.STORAGE_LAB_CONTROL_QUEUE || CONTROL_TASK_QUEUE;
}
