/**
 * The dev server's ports: a held port is named before the server starts, the ports the tests choose are free as a
 * block (the HTTP API and metrics sit at fixed offsets from the frontend), and a server that exits anyway says why.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEV_PORT_OFFSETS } from '../../client/local-services';
import { PortInUseError, freePortServerOptions, logTail, startDevServer } from '../../infra/temporal/dev-server';
import { registerLabRoot } from '../../lib/lab-fs';
import { freePort, freePortBlock, portFree } from '../../lib/net';

function hold(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}
const release = (srv: net.Server) => new Promise<void>((r) => srv.close(() => r()));

describe('dev server ports', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dev-ports-'));
    registerLabRoot(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('portFree is false for a held port and true once it is released', async () => {
    const port = await freePort();
    const srv = await hold(port);
    expect(await portFree(port)).toBe(false);
    await release(srv);
    expect(await portFree(port)).toBe(true);
  });

  it('freePortBlock passes over a base whose offset ports are held, and says so when every base is', async () => {
    const [first, second] = [await freePortBlock(DEV_PORT_OFFSETS), await freePortBlock(DEV_PORT_OFFSETS)];
    const held = await hold(first + 30);
    try {
      // The kernel offers `first` (its +30 held), then `second`: the block starts at `second`.
      const offers = [first, second];
      expect(await freePortBlock(DEV_PORT_OFFSETS, 5, async () => offers.shift() ?? second)).toBe(second);
      await expect(freePortBlock(DEV_PORT_OFFSETS, 3, async () => first)).rejects.toThrow('no port P on 127.0.0.1 with P+0, P+10, P+30 free in 3 tries');
    } finally {
      await release(held);
    }
    for (const o of DEV_PORT_OFFSETS) expect(await portFree(second + o)).toBe(true);
  });

  it('a held port is named, with its role, before any server is spawned', async () => {
    const options = await freePortServerOptions(dir);
    const srv = await hold(options.httpPort);
    try {
      // A binary that does not exist: reached only if the check let the start through.
      const started = startDevServer({ ...options, binary: path.join(dir, 'no-such-binary') }, 5_000);
      await expect(started).rejects.toThrow(PortInUseError);
      await expect(started).rejects.toThrow(`port ${options.httpPort} on 127.0.0.1, for the Temporal dev server's HTTP API, is in use`);
    } finally {
      await release(srv);
    }
  });

  it('a server that exits says so with the lines it logged in this start only', async () => {
    const options = await freePortServerOptions(dir);
    writeFileSync(options.logFile, 'an earlier start: all well\n');
    const fake = path.join(dir, 'fake-temporal');
    writeFileSync(fake, '#!/bin/sh\necho "listen tcp 127.0.0.1:1234: bind: address already in use" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    const started = startDevServer({ ...options, binary: fake }, 10_000);
    await expect(started).rejects.toThrow(/exited with code 1; its log \(.*\) ends: listen tcp 127\.0\.0\.1:1234: bind: address already in use$/);
  });

  it('logTail reads only what came after the offset, joined on one line and cut from the front', () => {
    const file = path.join(dir, 'tail.log');
    writeFileSync(file, 'old line\n');
    const from = 'old line\n'.length;
    writeFileSync(file, 'old line\nfirst\n\nsecond\n');
    expect(logTail(file, from)).toBe('first | second');
    expect(logTail(file, from, 8)).toBe('…| second');
    expect(logTail(path.join(dir, 'absent.log'), 0)).toBe('');
  });
});
