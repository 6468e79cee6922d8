/**
 * A network cut on loopback for real: nftables rules (lib/network-cut.ts) between processes in host cgroups, as the
 * partition drill makes them. A TCP server in one host's cgroup, a client in a host on the other side of the cut and
 * one on the same side; the cut stops the far client's established connection (no reset: it stalls) and refuses its
 * new ones, while the near client goes on; removing the table lets the stalled connection resume, and says how many
 * packets the rules dropped. A table left behind by a host that is gone is the sweeper's: the local provider lists it
 * as a host without a run label, and its teardown removes it; another lab's table is not its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { planSweep } from '../../common/core/sweep';
import { LocalProvider } from '../../infra/providers/local/local-provider';
import { createHostCgroup, cgroupV2Mount, detectCgroups, joinScript, removeHostCgroup, type HostCgroup } from '../../lib/cgroups';
import { freePort } from '../../lib/net';
import { applyCut, cutRuleset, cutTableName, labCutTag, listCutTables, removeCut } from '../../lib/network-cut';

const support = detectCgroups();
const nft = ['/usr/sbin/nft', '/sbin/nft'].some((p) => existsSync(p));
const maybe = support.kind && cgroupV2Mount() && nft ? describe : describe.skip;

/** A process inside a host's cgroups, its stdout lines counted. */
function inCgroup(cg: HostCgroup, script: string): { proc: ChildProcess; lines: string[] } {
  const proc = spawn('sh', ['-c', `${joinScript(cg)} && exec "$0" -e "$1"`, process.execPath, script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let rest = '';
  proc.stdout!.on('data', (b: Buffer) => {
    const parts = (rest + b.toString()).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
  });
  return { proc, lines };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

maybe('a network cut between host cgroups on loopback (real nftables)', () => {
  const tag = `netcut-${process.pid}`;
  const ids = ['server', 'far', 'near'].map((n) => `${tag}-${n}`);
  const table = cutTableName(labCutTag(tag), ids[0]);
  let cgroups: HostCgroup[] = [];
  const procs: ChildProcess[] = [];
  let port: number;

  beforeAll(async () => {
    cgroups = ids.map((id) => createHostCgroup(support.kind!, id, 256));
    port = await freePort();
  });

  afterAll(async () => {
    await removeCut(table);
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : null)));
    for (const cg of cgroups) removeHostCgroup(cg);
  });

  const start = (cg: HostCgroup, script: string) => {
    const p = inCgroup(cg, script);
    procs.push(p.proc);
    return p;
  };
  /** A client that sends a byte every 20 ms over one connection and prints a line per reply. */
  const client = (cg: HostCgroup) =>
    start(cg, `const s = require('net').connect(${port}, '127.0.0.1'); s.setNoDelay(true); s.on('data', (b) => { for (const _ of b) console.log('r'); }); s.on('error', (e) => console.log('error ' + e.code)); setInterval(() => s.write('p'), 20);`);
  /** Whether a new connection from the cgroup gets through within a second. */
  const connects = async (cg: HostCgroup) => {
    const p = start(cg, `const s = require('net').connect(${port}, '127.0.0.1', () => { console.log('connected'); process.exit(0); }); s.on('error', (e) => { console.log('error ' + e.code); process.exit(0); }); setTimeout(() => { console.log('timeout'); process.exit(0); }, 1000);`);
    await new Promise((r) => p.proc.once('exit', r));
    return p.lines[0];
  };

  it('stalls the connections across the cut at once, both ways, keeps the others, and heals', async () => {
    const [serverCg, farCg, nearCg] = cgroups;
    const server = start(serverCg, `require('net').createServer((c) => c.on('data', (b) => c.write(b))).listen(${port}, '127.0.0.1', () => console.log('listening'));`);
    await until('server listening', () => server.lines.includes('listening'), 10_000);
    const far = client(farCg);
    const near = client(nearCg);
    await until('both clients answered', () => far.lines.length > 5 && near.lines.length > 5, 10_000);

    const cut = await applyCut(cutRuleset(table, [[{ hostId: ids[0], netDir: serverCg.netDir!, port }], [{ hostId: ids[1], netDir: farCg.netDir!, port: port + 1 }]]));
    expect(cut.seconds).toBeGreaterThan(0);
    expect(await listCutTables(table)).toEqual([table]);
    // What was already queued may still arrive; then nothing for the far client, while the near one goes on.
    await sleep(200);
    const [farAtCut, nearAtCut] = [far.lines.length, near.lines.length];
    await sleep(1000);
    expect(far.lines.length).toBe(farAtCut);
    expect(near.lines.length).toBeGreaterThan(nearAtCut + 10);
    // Stalled, not reset: the far client saw no error.
    expect(far.lines.filter((l) => l.startsWith('error'))).toEqual([]);
    expect(await connects(farCg)).toBe('timeout');
    expect(await connects(nearCg)).toBe('connected');

    const healed = await removeCut(table);
    expect(healed.removed).toBe(true);
    expect(healed.droppedPackets).toBeGreaterThan(0);
    expect(await listCutTables(table)).toEqual([]);
    // The stalled connection resumes when TCP retransmits (its timer backed off while the cut lasted).
    const farAtHeal = far.lines.length;
    await until('the far client answered again', () => far.lines.length > farAtHeal + 5, 10_000);
    expect(await connects(farCg)).toBe('connected');
    // Removing it again is fine.
    expect(await removeCut(table)).toEqual({ removed: false, droppedPackets: null, seconds: 0 });
  });
});

maybe('a network cut whose host is gone (real nftables)', () => {
  let dir: string;
  const tables: string[] = [];
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'netcut-sweep-'));
  });
  afterAll(async () => {
    for (const t of tables) await removeCut(t);
    rmSync(dir, { recursive: true, force: true });
  });

  it('is listed without a run label, so the sweeper removes it through the host\'s teardown; another lab\'s stays', async () => {
    const hostsDir = path.join(dir, 'hosts');
    const provider = new LocalProvider({ hostsDir, agentEnv: {}, supervisorScript: '/nonexistent' });
    const mine = cutTableName(labCutTag(hostsDir), 'gone-node-1');
    const theirs = cutTableName(labCutTag(path.join(dir, 'other-lab')), 'gone-node-1');
    tables.push(mine, theirs);
    const match = () => ({ path: 'unified', level: 1 });
    for (const table of [mine, theirs]) await applyCut(cutRuleset(table, [[{ hostId: 'gone-node-1', netDir: '/x', port: 1 }], [{ hostId: 'gone-node-2', netDir: '/y', port: 2 }]], match));
    const listed = (await provider.list()).filter((h) => h.hostId === 'gone-node-1');
    expect(listed).toEqual([{ hostId: 'gone-node-1', runId: '', expiresAt: null, resources: [`nftables:inet ${mine}`] }]);
    const plan = planSweep(listed.map((h) => ({ provider: 'local' as const, ...h })), {}, new Date().toISOString());
    expect(plan.remove.map((d) => d.reason)).toEqual(['no run label: left behind by a crashed teardown']);
    await provider.teardown('gone-node-1');
    expect(await listCutTables(mine)).toEqual([]);
    expect(await listCutTables(theirs)).toEqual([theirs]);
  });
});
