/** Network helpers for servers the lab starts: everything binds to 127.0.0.1. */
import net from 'node:net';

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether a listener could bind `ip:port` now (false when anything holds it, a listener or a connection's end). */
export function portFree(port: number, ip = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: ip, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * A base port P on 127.0.0.1 with P + each offset free, for a server that derives its other ports from one
 * (the local dev server takes its HTTP API and metrics ports at +10 and +30 of its frontend's). A free port
 * alone is not enough: its neighbours lie in the kernel's ephemeral range, where any outgoing connection may
 * hold them.
 */
export async function freePortBlock(offsets: readonly number[], attempts = 50, candidate: () => Promise<number> = freePort): Promise<number> {
  const top = Math.max(0, ...offsets);
  for (let i = 0; i < attempts; i++) {
    const base = await candidate();
    if (base + top > 65535) continue;
    const free = await Promise.all(offsets.map((o) => portFree(base + o)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no port P on 127.0.0.1 with P+${offsets.join(', P+')} free in ${attempts} tries`);
}
