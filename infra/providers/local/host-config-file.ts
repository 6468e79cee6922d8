/**
 * A local host's host.json, read through the file guard. Apart from local-provider.ts so that the host supervisor,
 * started for every host, loads two small modules instead of the provider (~0.3 s of CPU a start).
 */
import type { HostConfig } from '../../../common/core/hosts';
import { readLabFile } from '../../../lib/lab-fs';

/** A host's host.json (in its folder, root's own), read through the file guard: the folder must be a lab root. */
export function readConfig(file: string): HostConfig {
  const text = readLabFile(file);
  if (text === null) throw new Error(`no host config at ${file}`);
  return JSON.parse(text) as HostConfig;
}
