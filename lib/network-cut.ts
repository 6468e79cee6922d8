/**
 * Network cuts between hosts on this machine (the partition drill): nftables rules in a table of the lab's own,
 * `inet storage_lab_<lab>_<host>`, that drop the TCP traffic between the hosts on either side of the cut and nothing
 * else. Every host listens on 127.0.0.1, so addresses cannot tell hosts apart; each host's processes live in a v2
 * cgroup of their own (lib/cgroups.ts, netDir), and `socket cgroupv2` names the host a socket belongs to. A rule
 * drops a packet to (output hook) or from (input hook) a server's port when the client socket at its end belongs to
 * a host on the other side: both directions of every connection across the cut, established or new, and no
 * connection within a side, nor any host's connection to Temporal (the agents keep answering).
 * Why cgroups and not the socket's owner (`meta skuid`): on loopback the owner is unknown in the input hook (measured:
 * a standby kept receiving its primary's WAL through an input rule on uid), and every Postgres runs as one OS user;
 * docs/drills.md has the measurements.
 * A table is one transaction to make (`nft -f`, replacing any table of that name) and one to remove; removing a
 * table that is gone is fine. The provider removes it when the drill heals the cut, when it tears the host down, and
 * the sweeper finds a table whose host is gone.
 */
import { runProcess, toolEnv } from './process-runner';
import { socketCgroupMatch } from './cgroups';
import { runTag } from '../common/core/ids';

/** What every table of the lab is named with; the lab's tag and the host id follow. */
export const CUT_TABLE_PREFIX = 'storage_lab_';

/** A host at one end of a cut: the v2 cgroup its processes live in, and the port its Postgres listens on. */
export interface CutHost {
  hostId: string;
  netDir: string;
  port: number;
}

/** A host id as it may appear in a table name and a rule (what hostIdFor makes); anything else is refused. */
const TABLE_HOST_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,180}$/;
/** A cgroup path as it goes between double quotes in a rule. */
const RULE_PATH = /^[A-Za-z0-9_.@:/\\-]{1,4000}$/;

/**
 * A lab's tag in its cut tables' names: 80 bits of its hosts folder's run tag (nftables names stay short). The one
 * place the tag is made: the provider names and finds its tables with it, and tests look for a lab's tables with it.
 */
export function labCutTag(hostsDir: string): string {
  return runTag(hostsDir).slice(0, 16);
}

/** The table of a cut made around `hostId` by the lab whose tag is `labTag` (one per lab on a shared machine). */
export function cutTableName(labTag: string, hostId: string): string {
  if (!/^[a-z0-9]{1,16}$/.test(labTag)) throw new Error(`lab tag ${JSON.stringify(labTag)} is not a plain tag`);
  if (!TABLE_HOST_ID.test(hostId)) throw new Error(`host id ${JSON.stringify(hostId)} cannot name a table (letters, digits, ".", "_" and "-")`);
  return `${CUT_TABLE_PREFIX}${labTag}_${hostId}`;
}

/** The host id a table of this lab was made around, or null for another lab's (or anyone else's) table. */
export function hostOfCutTable(labTag: string, table: string): string | null {
  const prefix = `${CUT_TABLE_PREFIX}${labTag}_`;
  if (!table.startsWith(prefix)) return null;
  const hostId = table.slice(prefix.length);
  return TABLE_HOST_ID.test(hostId) ? hostId : null;
}

/** How many rules a cut between these sides holds: both directions of each host's connections to each server across. */
export function cutRuleCount(sides: [CutHost[], CutHost[]]): number {
  return 4 * sides[0].length * sides[1].length;
}

/**
 * The nft script of a cut: the table made fresh (an existing one of that name is replaced, in the same transaction),
 * one output and one input chain, a counted drop rule per direction of each pair of hosts across the cut. Pure apart
 * from `match`, which names a host's cgroup as nftables takes it (tests pass their own).
 */
export function cutRuleset(
  table: string,
  sides: [CutHost[], CutHost[]],
  match: (netDir: string) => { path: string; level: number } = socketCgroupMatch,
): string {
  if (!table.startsWith(CUT_TABLE_PREFIX) || !TABLE_HOST_ID.test(table)) throw new Error(`${JSON.stringify(table)} is not a lab table name`);
  const [a, b] = sides;
  if (a.length === 0 || b.length === 0) throw new Error('a cut needs a host on each side');
  const ids = [...a, ...b].map((h) => h.hostId);
  if (new Set(ids).size !== ids.length) throw new Error(`a host is on both sides of the cut or twice on one: ${ids.join(', ')}`);
  const out: string[] = [];
  const into: string[] = [];
  const socketOf = (client: CutHost) => {
    const m = match(client.netDir);
    if (!RULE_PATH.test(m.path) || !Number.isInteger(m.level) || m.level < 1) throw new Error(`cgroup ${JSON.stringify(client.netDir)} cannot go into a rule`);
    return `socket cgroupv2 level ${m.level} "${m.path}"`;
  };
  for (const [client, server] of [...a.flatMap((x) => b.map((y) => [x, y])), ...b.flatMap((y) => a.map((x) => [y, x]))]) {
    if (!Number.isInteger(server.port) || server.port < 1 || server.port > 65_535) throw new Error(`host ${server.hostId}: ${server.port} is not a TCP port`);
    if (!TABLE_HOST_ID.test(client.hostId)) throw new Error(`host id ${JSON.stringify(client.hostId)} cannot go into a rule`);
    // The client's packets to the server's port leave through output; the server's replies arrive through input,
    // where the socket expression finds the client's socket by its own lookup.
    const comment = (from: CutHost, to: CutHost) => (from.hostId.length + to.hostId.length < 120 ? ` comment "${from.hostId} to ${to.hostId}"` : '');
    out.push(`    tcp dport ${server.port} ${socketOf(client)} counter drop${comment(client, server)}`);
    into.push(`    tcp sport ${server.port} ${socketOf(client)} counter drop${comment(server, client)}`);
  }
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    '  chain out {',
    '    type filter hook output priority filter; policy accept;',
    ...out,
    '  }',
    '  chain in {',
    '    type filter hook input priority filter; policy accept;',
    ...into,
    '  }',
    '}',
    '',
  ].join('\n');
}

async function nft(args: string[], input?: string): Promise<string> {
  try {
    return (await runProcess('nft', args, { input, timeoutMs: 30_000, env: toolEnv() })).stdout;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('nft is not installed: run infra/bootstrap.sh (installs Debian\'s nftables)');
    throw err;
  }
}

/** Loads a cut's rules (one transaction); returns how long nft took. */
export async function applyCut(ruleset: string): Promise<{ seconds: number }> {
  const started = process.hrtime.bigint();
  await nft(['-f', '-'], ruleset);
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/** Tables whose names start with `prefix` (default: any of the lab's). */
export async function listCutTables(prefix = CUT_TABLE_PREFIX): Promise<string[]> {
  const listed = JSON.parse(await nft(['-j', 'list', 'tables', 'inet'])) as { nftables: { table?: { name: string } }[] };
  return listed.nftables.flatMap((e) => (e.table && e.table.name.startsWith(prefix) ? [e.table.name] : []));
}

/** Packets the table's rules dropped so far, or null when there is no such table. */
export async function droppedPackets(table: string): Promise<number | null> {
  if (!(await listCutTables(table)).includes(table)) return null;
  const listed = JSON.parse(await nft(['-j', 'list', 'table', 'inet', table])) as { nftables: { rule?: { expr: { counter?: { packets: number } }[] } }[] };
  return listed.nftables.reduce((sum, e) => sum + (e.rule?.expr.reduce((s, x) => s + (x.counter?.packets ?? 0), 0) ?? 0), 0);
}

/** Removes a cut's table (none there is fine): what it dropped, and how long nft took. */
export async function removeCut(table: string): Promise<{ removed: boolean; droppedPackets: number | null; seconds: number }> {
  const dropped = await droppedPackets(table);
  if (dropped === null) return { removed: false, droppedPackets: null, seconds: 0 };
  const started = process.hrtime.bigint();
  try {
    await nft(['delete', 'table', 'inet', table]);
  } catch (err) {
    // Removed meanwhile (a retried call, the sweeper): gone is what was asked for.
    if ((await listCutTables(table)).includes(table)) throw err;
  }
  return { removed: true, droppedPackets: dropped, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
