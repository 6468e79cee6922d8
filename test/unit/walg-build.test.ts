/**
 * WAL-G built beside the demo's run (lib/walg-build.ts): what the tools cache says of the build, the wait of the step
 * that first needs WAL-G, and the preflight's rules for runs that start while it builds.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { walgProblems } from '../../activities/control/preflight';
import { resolveSpec } from '../../common/input/resolve';
import { bootstrapAlive, waitForWalg, walgState, WalgUnavailable, WALG_BUILD_LOG, WALG_BUILD_MARKER, type WalgState } from '../../lib/walg-build';

describe("WAL-G's build beside the run", () => {
  let cache: string;
  let bin: string;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    cache = mkdtempSync(path.join(tmpdir(), 'walg-build-'));
    bin = path.join(cache, 'bin');
    mkdirSync(bin);
    // No PATH: a wal-g installed on this machine must not count.
    env = { STORAGE_LAB_CACHE: cache, PATH: '' };
  });
  afterEach(() => rmSync(cache, { recursive: true, force: true }));

  const install = () => {
    writeFileSync(path.join(bin, 'wal-g'), '#!/bin/sh\n');
    chmodSync(path.join(bin, 'wal-g'), 0o755);
  };
  const building = (pid: number) => writeFileSync(path.join(bin, WALG_BUILD_MARKER), `${pid}\n`);
  const logged = (text: string) => writeFileSync(path.join(bin, WALG_BUILD_LOG), text);
  const alive = (pids: Set<number>) => (pid: number) => pids.has(pid);

  it('reads the tools cache: present, building, failed with its log, absent', () => {
    expect(walgState(env, alive(new Set()))).toEqual({ state: 'absent' });
    building(4242);
    logged('');
    expect(walgState(env, alive(new Set([4242])))).toEqual({ state: 'building', pid: 4242, log: path.join(bin, WALG_BUILD_LOG) });
    // The builder is gone and left its log: a failed build, named by the log's last lines.
    logged(Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
    const failed = walgState(env, alive(new Set()));
    expect(failed.state).toBe('failed');
    expect((failed as { detail: string }).detail.split('\n')).toEqual(Array.from({ length: 12 }, (_, i) => `line ${i + 19}`));
    install();
    expect(walgState(env, alive(new Set([4242])))).toEqual({ state: 'present', binary: path.join(bin, 'wal-g') });
  });

  it('takes a pid for a build only while it is a bootstrap (a pid taken over by another program is not one)', () => {
    expect(bootstrapAlive(process.pid)).toBe(false);
    building(process.pid);
    expect(walgState(env)).toEqual({ state: 'absent' });
    // Not a number: no build.
    writeFileSync(path.join(bin, WALG_BUILD_MARKER), '1; rm -rf /\n');
    expect(walgState(env, () => true)).toEqual({ state: 'absent' });
  });

  it('waits for a running build and returns the binary it made', async () => {
    building(7);
    const waits: number[] = [];
    let polls = 0;
    const got = await waitForWalg({
      env,
      pollMs: 5,
      alive: () => true,
      onWait: (b) => {
        waits.push(b.pid);
        if (++polls === 3) install();
      },
    });
    expect(got).toBe(path.join(bin, 'wal-g'));
    expect(waits).toEqual([7, 7, 7]);
  });

  it("fails at once with the log's end when the build ends without a binary, and after its bound when it runs on", async () => {
    building(7);
    logged('go: cannot find module providing package x\n');
    const running = new Set([7]);
    const wait = waitForWalg({ env, pollMs: 5, alive: alive(running), onWait: () => running.delete(7) });
    await expect(wait).rejects.toThrow(WalgUnavailable);
    await expect(waitForWalg({ env, pollMs: 5, alive: alive(running) })).rejects.toThrow(/ended without a binary[\s\S]*cannot find module providing package x/);
    await expect(waitForWalg({ env, pollMs: 5, timeoutMs: 30, alive: () => true })).rejects.toThrow(/still ran after 0 s of waiting/);
    rmSync(path.join(bin, WALG_BUILD_LOG));
    await expect(waitForWalg({ env, alive: alive(new Set()) })).rejects.toThrow(/not installed: run infra\/bootstrap.sh/);
  });

  it('stops waiting when the step is cancelled', async () => {
    building(7);
    const abort = new AbortController();
    const wait = waitForWalg({ env, pollMs: 60_000, alive: () => true, signal: abort.signal });
    setTimeout(() => abort.abort(), 10);
    await expect(wait).rejects.toThrow(/cancelled while waiting/);
  });
});

describe("the preflight's WAL-G rules", () => {
  const present: WalgState = { state: 'present', binary: '/x/wal-g' };
  const buildingNow: WalgState = { state: 'building', pid: 9, log: '/x/wal-g.build.log' };
  const failed: WalgState = { state: 'failed', log: '/x/wal-g.build.log', detail: 'boom' };
  const absent: WalgState = { state: 'absent' };
  // local-quick uses data sets (published and restored with WAL-G before anything is measured); ci loads on every host.
  const quick = resolveSpec({ preset: 'local-quick' });
  const ci = resolveSpec({ preset: 'ci' });
  const ciArchiving = resolveSpec({ preset: 'ci', durability: { enabled: true, tool: 'wal-g' } });
  const seedS3 = resolveSpec({ preset: 'seed-full', durability: { backupStore: { kind: 's3', bucket: 'lab-backups' } } });

  it('lets a run that needs WAL-G before it measures wait for the build here', () => {
    expect(walgProblems(quick, buildingNow, { toolChecked: false })).toEqual([]);
    expect(walgProblems(ciArchiving, buildingNow, { toolChecked: true })).toEqual([]);
    expect(walgProblems(ci, present, { toolChecked: false })).toEqual([]);
  });

  it('refuses a run that would measure beside the build, naming the build', () => {
    expect(walgProblems(ci, buildingNow, { toolChecked: false })).toEqual([
      expect.stringMatching(/^provider: WAL-G is being built on this machine \(bootstrap pid 9, log \/x\/wal-g.build.log\).*start the run when the build has ended$/),
    ]);
  });

  it('refuses data sets without WAL-G, and names the fix', () => {
    expect(walgProblems(quick, absent, { toolChecked: false })).toEqual([expect.stringMatching(/^data.reuse: .*is not installed; run infra\/bootstrap.sh, or set data.reuse to "never"$/)]);
    expect(walgProblems(quick, failed, { toolChecked: false })).toEqual([expect.stringContaining('did not build (its log: /x/wal-g.build.log)')]);
    // A control worker that ships WAL-G to EC2 hosts needs it built before the run.
    expect(walgProblems(seedS3, buildingNow, { toolChecked: false })).toEqual([expect.stringContaining('still being built on this control worker (bootstrap pid 9')]);
    // The durability tool's own check said it already.
    expect(walgProblems(quick, absent, { toolChecked: true })).toEqual([]);
    expect(walgProblems(ci, absent, { toolChecked: false })).toEqual([]);
  });
});
