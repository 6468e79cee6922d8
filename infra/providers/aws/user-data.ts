/**
 * Renders the host bootstrap (user-data.sh) for one host: every {{NAME}} becomes a single-quoted shell word.
 * Pure; the provider reads the template once. Values are names and addresses, never secrets.
 */
import { readOperatorFile } from '../../../lib/lab-fs';
import path from 'node:path';
import { CONTROL_CHARACTER } from '../../../common/input/fields';
import { PROJECT_ROOT } from '../../../lib/lab-paths';

/** What the bootstrap of one host needs to know. Empty strings mean "not set". */
export interface UserDataValues {
  HOST_ID: string;
  STORAGE_KIND: 'instance-store' | 'ebs';
  POSTGRES_VERSION: string;
  NODE_VERSION: string;
  AGENT_S3_URI: string;
  AGENT_SHA256: string;
  /** The control worker's WAL-G in S3, its sha256 and the CPU it was built for (Node's name: x64, arm64); empty: none. */
  WALG_S3_URI: string;
  WALG_SHA256: string;
  WALG_ARCH: string;
  AWS_REGION: string;
  AWS_ENDPOINT_URL: string;
  TEMPORAL_ADDRESS: string;
  TEMPORAL_NAMESPACE: string;
  TEMPORAL_API_KEY_PARAMETER: string;
  TEMPORAL_TLS_CERT_PARAMETER: string;
  TEMPORAL_TLS_KEY_PARAMETER: string;
  DATABASE_PASSWORD_PARAMETER: string;
  /** The agent's host.json without what only the instance knows (its address, device, binaries). */
  HOST_BASE_JSON: string;
}

/** EC2 takes at most 16 KiB of user-data (before base64). */
export const USER_DATA_LIMIT_BYTES = 16 * 1024;

/** The template as shipped next to this module's source. */
export function readUserDataTemplate(): string {
  return readOperatorFile(path.join(PROJECT_ROOT, 'infra', 'providers', 'aws', 'user-data.sh')).toString('utf8');
}

/** One shell word, whatever the value holds. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Fills the template; fails on a placeholder without a value, a value without a placeholder, a value with a control
 * character, or the size limit.
 */
export function renderUserData(template: string, values: UserDataValues): string {
  const given = values as unknown as Record<string, string>;
  const used = new Set<string>();
  const text = template.replace(/\{\{([A-Z0-9_]+)\}\}/g, (_, name: string) => {
    if (!(name in given)) throw new Error(`user-data template: no value for {{${name}}}`);
    // The bootstrap writes values into agent.env a line each: a line break would add a variable of its own.
    if (CONTROL_CHARACTER.test(String(given[name]))) throw new Error(`user-data: {{${name}}} holds a control character; the spec's patterns refuse them`);
    used.add(name);
    return shellQuote(String(given[name]));
  });
  const unused = Object.keys(given).filter((k) => !used.has(k));
  if (unused.length) throw new Error(`user-data template: values without a placeholder: ${unused.join(', ')}`);
  const bytes = Buffer.byteLength(text);
  if (bytes > USER_DATA_LIMIT_BYTES)
    throw new Error(`user-data is ${bytes} bytes; EC2 takes at most ${USER_DATA_LIMIT_BYTES}`);
  return text;
}
