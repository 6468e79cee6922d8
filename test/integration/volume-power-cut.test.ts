/**
 * A power cut on a modelled volume, through the local provider as a drill uses it (cutPower): a host provisioned on
 * a modelled gp3, files written on its ext4 as a database would write them, the power cut, the volume back. What
 * was made durable (written, then fsync'd: the loop device turns ext4's flush into an fsync of the image, which the
 * server takes as its flush) survives; what was not is gone: a buffered write never flushed (lost with the host's
 * page cache), and a direct write that reached the device but was never flushed (dropped by the device, which says
 * how many bytes it dropped). ext4 replays its journal on the way back. Then teardown leaves nothing behind.
 */
import { chownSync, closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync, writeSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { resolveSpec } from '../../common/input/resolve';
import type { HostRequest } from '../../common/core/hosts';
import type { LocalProvider } from '../../infra/providers/local/local-provider';
import { appendLabFile, writeLabFile } from '../../lib/lab-fs';
import { labPaths, type LabPaths } from '../../lib/lab-paths';
import { postgresOsUser } from '../../lib/postgres-binaries';
import { VolumeControl } from '../../lib/volume';
import { runProcess } from '../../lib/process-runner';
import { hostRequests, localProviderFor } from '../helpers/aws-lab';
import { uniqueId } from '../helpers/temporal';
import { volumeSupport } from '../helpers/volume';
import { hostDirOf } from '../helpers/lab';
import { detectCgroups } from '../../lib/cgroups';

const describeIfVolumes = volumeSupport.ok && detectCgroups().kind ? describe : describe.skip;
const PAGE = 4096;

/** Writes one page of `byte` at `offset` with O_DIRECT (dd allocates the aligned buffer), without any fsync. */
async function directWrite(file: string, offset: number, byte: string): Promise<void> {
  await runProcess('dd', [`of=${file}`, `bs=${PAGE}`, `seek=${offset / PAGE}`, 'count=1', 'oflag=direct', 'conv=notrunc', 'iflag=fullblock', 'status=none'], {
    input: byte.repeat(PAGE),
  });
}

/** Writes a file and makes it durable: the file's data and its directory entry. */
function durableWrite(file: string, data: string): void {
  const fd = openSync(file, 'w');
  writeSync(fd, data);
  fsyncSync(fd);
  closeSync(fd);
  const dir = openSync(path.dirname(file), 'r');
  fsyncSync(dir);
  closeSync(dir);
}

describeIfVolumes('a power cut on a modelled volume (integration, root)', () => {
  let paths: LabPaths;
  let provider: LocalProvider;
  let req: HostRequest;

  beforeAll(async () => {
    const base = process.env.STORAGE_LAB_TEST_DIR ?? '/tmp';
    const home = mkdtempSync(path.join(base, 'power-cut-'));
    chmodSync(home, 0o755);
    paths = labPaths({ ...process.env, STORAGE_LAB_HOME: home, STORAGE_LAB_HOSTS_DIR: path.join(home, 'hosts') });
    provider = localProviderFor(paths);
    const spec = resolveSpec({ preset: 'ci', storageClasses: { 'local-disk': null }, compare: null });
    [req] = hostRequests(spec, uniqueId('power-cut')).map((r) => ({ ...r, powerCuts: true }));
    await provider.provision(req);
  });

  afterAll(async () => {
    if (provider && req) await provider.teardown(req.hostId);
  });

  it('keeps what was flushed and drops what was not, then comes back on what was durable', async () => {
    const config = JSON.parse(readFileSync(path.join(hostDirOf(paths, req.hostId), 'host.json'), 'utf8'));
    expect(config.volume.model).toBe('gp3');
    const root = path.join(hostDirOf(paths, req.hostId), 'volume');
    const control = new VolumeControl(config.volume.socket);
    const durable = path.join(root, 'durable');
    const lost = path.join(root, 'never-synced');

    // ext4 commits its journal every 5 s, and a commit flushes the device: a flush between the direct write and the
    // cut would make that write durable (as it should). So the direct write and the cut go together, and the round is
    // taken again if the device saw a flush between them.
    let dropped = 0;
    let report: Awaited<ReturnType<LocalProvider['cutPower']>> | null = null;
    for (let attempt = 0; attempt < 3 && dropped === 0; attempt++) {
      if (attempt > 0) await provider.provision(req); // the host back, as a drill's next round has it
      durableWrite(durable, 'D'.repeat(2 * PAGE));
      writeFileSync(lost, 'never flushed'); // buffered: only in the host's page cache
      const before = await control.stats();
      await directWrite(durable, PAGE, 'X'); // reaches the device, never flushed
      const beforeCut = await control.stats();
      expect(beforeCut.store.volatileBytes).toBeGreaterThanOrEqual(PAGE);
      if (beforeCut.flushes !== before.flushes) continue;
      report = await provider.cutPower(req.hostId);
      dropped = report.droppedBytes;
    }
    expect(report).not.toBeNull();
    expect(dropped).toBeGreaterThanOrEqual(PAGE);
    expect(report!.after.store.cutPages).toBeGreaterThan(report!.before.store.cutPages);
    expect(report!.after.on).toBe(true);
    expect(report!.after.dead).toBe(false);

    // The durable file is whole, with its durable content where the unflushed direct write went; the buffered file
    // never reached the device.
    expect(readFileSync(durable, 'utf8')).toBe('D'.repeat(2 * PAGE));
    expect(existsSync(lost) ? readFileSync(lost, 'utf8') : '').toBe('');
    // The file system works after its journal's replay.
    durableWrite(path.join(root, 'after'), 'ok');
    expect(readFileSync(path.join(root, 'after'), 'utf8')).toBe('ok');
  });

  it("keeps a line the lab appended durably to a server's configuration, and loses one appended without a flush", async () => {
    // PGDATA as the agent meets it: a folder of the postgres user's below the volume's root (the agent writes there as
    // that user), and the volume's root itself (the agent writes there as root). initdb leaves postgresql.conf
    // durable; the lab then appends its include line. ext4 commits an appended file's new size within 5 s but writes
    // its data back only within 30 s: a cut between the two leaves zeros where the line was, and PostgreSQL refuses
    // the file ("syntax error ... near token \"\"") or, cut before the commit, starts without the lab's settings
    // (port 5432, its sockets in /var/run/postgresql: the lab's clients are refused). The lab's writes there are durable.
    await provider.provision(req); // the host back after the first case's cut
    const hostDir = hostDirOf(paths, req.hostId);
    const root = path.join(hostDir, 'volume');
    const postgres = postgresOsUser();
    const pgdata = path.join(root, 'pgdata-like');
    mkdirSync(pgdata, { mode: 0o700 });
    if (postgres) chownSync(pgdata, postgres.uid, postgres.gid);
    const base = '# initdb\n'.repeat(300); // 2,700 bytes: the line goes into the file's last, already allocated block
    const line = "include_if_exists = 'storage-lab.conf'\n";
    const files = [pgdata, root].flatMap((dir) => ['flushed.conf', 'unflushed.conf'].map((name) => path.join(dir, name)));
    for (const f of files) writeLabFile(f, base, { mode: 0o600, owner: postgres, durable: true });
    for (const f of files) appendLabFile(f, line, { owner: postgres, durable: path.basename(f) === 'flushed.conf' });
    await provider.cutPower(req.hostId);

    for (const dir of [pgdata, root]) {
      expect(readFileSync(path.join(dir, 'flushed.conf'), 'utf8')).toBe(base + line);
      // Either the size was not committed (the line is gone) or it was and the data was not (zeros in its place).
      const unflushed = readFileSync(path.join(dir, 'unflushed.conf'), 'utf8');
      expect(unflushed.startsWith(base)).toBe(true);
      expect(unflushed).not.toContain('include_if_exists');
      expect(['', '\0'.repeat(line.length)]).toContain(unflushed.slice(base.length));
    }
  });

  it('a host made without power cuts (every host but a power-cut drill\'s) refuses a cut and keeps running', async () => {
    const spec = resolveSpec({ preset: 'ci', storageClasses: { 'local-disk': null }, compare: null });
    const [other] = hostRequests(spec, uniqueId('no-power-cut')).map((r) => ({ ...r, powerCuts: false }));
    await provider.provision(other);
    try {
      const config = JSON.parse(readFileSync(path.join(hostDirOf(paths, other.hostId), 'host.json'), 'utf8'));
      const control = new VolumeControl(config.volume.socket);
      expect((await control.stats()).store.powerCuts).toBe(false);
      const kept = path.join(hostDirOf(paths, other.hostId), 'volume', 'kept');
      writeFileSync(kept, 'written, never flushed');
      await expect(provider.cutPower(other.hostId)).rejects.toThrow(/keeps no undo log \(started with --power-cuts=false\)/);
      expect(readFileSync(kept, 'utf8')).toBe('written, never flushed');
      expect((await control.stats()).store.cutPages).toBe(0);
    } finally {
      await provider.teardown(other.hostId);
    }
  });

  it('teardown leaves no mount, loop device, server or folder', async () => {
    const hostDir = hostDirOf(paths, req.hostId);
    const socket = JSON.parse(readFileSync(path.join(hostDir, 'host.json'), 'utf8')).volume.socket as string;
    await provider.teardown(req.hostId);
    expect(existsSync(hostDir)).toBe(false);
    expect(readFileSync('/proc/self/mounts', 'utf8')).not.toContain(hostDir);
    await expect(new VolumeControl(socket).stats()).rejects.toThrow(/not reachable/);
  });
});
