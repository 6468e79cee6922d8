/** postgresql.conf as the lab writes it: on the hosts (activities/host/postgres.ts) and for the server's own check of a spec (spec-checks.ts). */
import { quoteLiteral } from './pg';

/** The lab's settings file as the host writes it: sorted, numbers bare, everything else quoted. */
export function renderConf(settings: Record<string, string>): string {
  const lines = Object.entries(settings)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} = ${/^-?\d+(\.\d+)?$/.test(v) ? v : quoteLiteral(v)}`);
  return `# Written by Storage Lab on every configure; edit the spec, not this file.\n${lines.join('\n')}\n`;
}
