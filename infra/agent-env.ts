/**
 * The environment a host agent starts with: what it reads, and nothing else of the control worker's (which may hold
 * AWS keys, PGPASSWORD, Temporal API keys and tokens). The Temporal connection settings, the STORAGE_LAB_* settings
 * an agent reads, the path and locale, and S3 keys only for a host whose backups go to S3.
 */
import { toolEnv } from '../lib/process-runner';

/** Temporal connection settings a worker reads (worker/env.ts): the address, namespace and the files of its keys. */
const TEMPORAL_SETTINGS = ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY', 'TEMPORAL_API_KEY_FILE'];
/** What an agent reads of this machine's lab settings: the tools cache, OS users, server binaries, cgroups, logging. */
const LAB_SETTINGS = ['STORAGE_LAB_CACHE', 'STORAGE_LAB_CLIENT_USER', 'STORAGE_LAB_PG_USER', 'STORAGE_LAB_PG_BIN', 'STORAGE_LAB_NO_CGROUPS', 'STORAGE_LAB_LOG_LEVEL'];
/** The keys the backup tools reach S3 with; the agent writes them into the tools' 0600 config files. */
const S3_KEYS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'PGBACKREST_REPO1_S3_KEY', 'PGBACKREST_REPO1_S3_KEY_SECRET', 'PGBACKREST_REPO1_S3_TOKEN'];

/**
 * A host agent's environment from the control worker's (`parent`) and the settings the provider gives it (`given`,
 * the Temporal address and namespace); S3 keys only when `s3Backups` (a host of a run whose backup store is S3).
 */
export function hostAgentEnv(parent: NodeJS.ProcessEnv, given: Record<string, string>, opts: { s3Backups: boolean }): Record<string, string> {
  const names = [...TEMPORAL_SETTINGS, ...LAB_SETTINGS, ...(opts.s3Backups ? S3_KEYS : [])];
  const picked = Object.fromEntries(names.filter((n) => parent[n] !== undefined).map((n) => [n, parent[n]!]));
  return { ...(toolEnv(parent) as Record<string, string>), ...picked, ...given };
}
