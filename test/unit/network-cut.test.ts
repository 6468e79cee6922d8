/**
 * The partition drill's nftables rules, as text: every connection across the cut is dropped in both directions (the
 * client's packets to the server's port on output, the server's replies to the client on input, both matched by the
 * client socket's cgroup), no connection within a side is touched, and names that cannot be quoted safely are refused.
 */
import { CUT_TABLE_PREFIX, cutRuleCount, cutRuleset, cutTableName, hostOfCutTable, type CutHost } from '../../lib/network-cut';

const host = (hostId: string, port: number): CutHost => ({ hostId, netDir: `/sys/fs/cgroup/unified/storage-lab/${hostId}`, port });
const match = (netDir: string) => ({ path: netDir.replace('/sys/fs/cgroup/', ''), level: 2 });
const n1 = host('abc1234-node-1', 5001);
const n2 = host('abc1234-node-2', 5002);
const n3 = host('abc1234-node-3', 5003);
const client = host('abc1234-client-0', 5000);
const table = cutTableName('lab0001', n1.hostId);

/** The drop rules of a chain, as [port kind, port, client cgroup path]. */
function drops(ruleset: string, chain: 'out' | 'in'): [string, number, string][] {
  const body = ruleset.split(`chain ${chain} {`)[1].split('}')[0];
  return [...body.matchAll(/tcp (dport|sport) (\d+) socket cgroupv2 level 2 "([^"]+)" counter drop/g)].map((m) => [m[1], Number(m[2]), m[3]]);
}

describe('a network cut as nftables rules', () => {
  it('names its table after the lab and the host it is made around, and reads the host back', () => {
    expect(table).toBe(`${CUT_TABLE_PREFIX}lab0001_abc1234-node-1`);
    expect(hostOfCutTable('lab0001', table)).toBe('abc1234-node-1');
    // Another lab's table, or anyone else's, is not this lab's.
    expect(hostOfCutTable('lab0002', table)).toBeNull();
    expect(hostOfCutTable('lab0001', 'filter')).toBeNull();
  });

  it('drops both directions of every connection across the cut and nothing within a side', () => {
    const rules = cutRuleset(table, [[n1], [n2, n3]], match);
    expect(cutRuleCount([[n1], [n2, n3]])).toBe(8);
    const out = drops(rules, 'out');
    const into = drops(rules, 'in');
    expect(out).toHaveLength(4);
    expect(into).toHaveLength(4);
    const path = (h: CutHost) => match(h.netDir).path;
    // n2 and n3 as clients of n1 (their walreceivers), n1 as a client of n2 and n3 (pg_rewind, a probe).
    expect(out).toEqual(
      expect.arrayContaining([
        ['dport', 5001, path(n2)],
        ['dport', 5001, path(n3)],
        ['dport', 5002, path(n1)],
        ['dport', 5003, path(n1)],
      ]),
    );
    expect(into).toEqual(
      expect.arrayContaining([
        ['sport', 5001, path(n2)],
        ['sport', 5001, path(n3)],
        ['sport', 5002, path(n1)],
        ['sport', 5003, path(n1)],
      ]),
    );
    // n3 streaming from n2 after the promotion stays connected.
    expect([...out, ...into].some(([, port, p]) => (port === 5002 && p === path(n3)) || (port === 5003 && p === path(n2)))).toBe(false);
    // One transaction that replaces a table of the same name.
    expect(rules.split('\n').slice(0, 3)).toEqual([`table inet ${table}`, `delete table inet ${table}`, `table inet ${table} {`]);
    expect(rules).toContain('type filter hook output priority filter; policy accept;');
    expect(rules).toContain('type filter hook input priority filter; policy accept;');
  });

  it('cuts the writer off the old primary only when it is on the other side', () => {
    const withPrimary = cutRuleset(table, [[n1], [n2, n3]], match);
    const cutOff = cutRuleset(table, [[n1], [n2, n3, client]], match);
    expect(withPrimary).not.toContain(match(client.netDir).path);
    expect(drops(cutOff, 'out')).toEqual(expect.arrayContaining([['dport', 5001, match(client.netDir).path]]));
    expect(drops(cutOff, 'in')).toEqual(expect.arrayContaining([['sport', 5001, match(client.netDir).path]]));
    expect(drops(cutOff, 'out')).toHaveLength(6);
  });

  it('refuses what cannot be a cut or cannot be quoted into a rule', () => {
    expect(() => cutRuleset(table, [[n1], []], match)).toThrow(/a host on each side/);
    expect(() => cutRuleset(table, [[n1], [n1, n2]], match)).toThrow(/both sides/);
    expect(() => cutRuleset(table, [[n1], [{ ...n2, port: 70_000 }]], match)).toThrow(/not a TCP port/);
    expect(() => cutRuleset(table, [[n1], [n2]], () => ({ path: 'unified/x" accept; #', level: 2 }))).toThrow(/cannot go into a rule/);
    expect(() => cutRuleset('filter', [[n1], [n2]], match)).toThrow(/not a lab table name/);
    expect(() => cutTableName('lab0001', 'a"b')).toThrow(/cannot name a table/);
    expect(() => cutTableName('Lab!', 'x')).toThrow(/not a plain tag/);
  });
});
