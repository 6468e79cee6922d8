/**
 * The file guard (lib/lab-fs.ts) on real files, as root (the suite runs as root): a path outside the lab's roots,
 * a `..` escape, a link planted as the last component of a write into a folder another user owns, a linked parent,
 * a hard link, a folder without the lab's marker, and a tree where another user's subfolder holds a link to a
 * victim folder. Every victim keeps its owner and its files.
 */
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  LabPathError,
  appendLabFile,
  chownLab,
  copyLabFile,
  labFileSize,
  labReadStream,
  listLabDir,
  listOperatorDir,
  makeLabDir,
  makeScratchDir,
  openLabFile,
  readAsFolderOwner,
  readKernelFile,
  readLabFile,
  readOperatorFile,
  registerLabRoot,
  removeLabFile,
  removeLabTree,
  removeTreeAs,
  writeLabFile,
} from '../../lib/lab-fs';
import { lookupUser } from '../../lib/postgres-binaries';
import { closeSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const other = lookupUser('storage-lab') ?? lookupUser('nobody');
if (!other || process.getuid?.() !== 0) throw new Error('the file guard tests run as root with the storage-lab (or nobody) OS user');
const user = other;

let base: string;
let root: string;
let outside: string;
/** A folder of another user, with a file, that nothing the lab does may touch. */
let victim: string;

beforeEach(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'lab-fs-test-'));
  chmodSync(base, 0o755);
  root = path.join(base, 'lab');
  mkdirSync(root, { mode: 0o755 });
  outside = path.join(base, 'outside');
  mkdirSync(outside, { mode: 0o755 });
  victim = path.join(base, 'victim');
  mkdirSync(victim, { mode: 0o755 });
  writeFileSync(path.join(victim, 'precious'), 'keep me');
  chownSync(victim, user.uid, user.gid);
  chownSync(path.join(victim, 'precious'), user.uid, user.gid);
  registerLabRoot(root);
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

/** The victim as it was: its owner, its file and the file's content and owner. */
function expectVictimIntact(): void {
  expect(lstatSync(victim).isDirectory()).toBe(true);
  expect(statSync(victim).uid).toBe(user.uid);
  expect(readFileSync(path.join(victim, 'precious'), 'utf8')).toBe('keep me');
  expect(statSync(path.join(victim, 'precious')).uid).toBe(user.uid);
}

/** A folder below the root that the other user owns (as PGDATA's parent is the postgres user's). */
function userDir(name: string): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { mode: 0o755 });
  chownSync(dir, user.uid, user.gid);
  return dir;
}

describe('paths', () => {
  it('refuses a path outside the roots, and a .. escape from one', () => {
    expect(() => writeLabFile(path.join(outside, 'f'), 'x')).toThrow(/refused to write .*outside the lab's folders/);
    expect(() => writeLabFile(`${root}/../outside/f`, 'x')).toThrow(LabPathError);
    expect(() => makeLabDir(`${root}/a/../../outside/d`)).toThrow(/outside the lab's folders/);
    expect(existsSync(path.join(outside, 'f'))).toBe(false);
    expect(existsSync(path.join(outside, 'd'))).toBe(false);
  });

  it('refuses a linked parent, whether it leads out of the lab or into another of its folders', () => {
    symlinkSync(victim, path.join(root, 'out'));
    mkdirSync(path.join(root, 'other-host'));
    symlinkSync(path.join(root, 'other-host'), path.join(root, 'in'));
    expect(() => writeLabFile(path.join(root, 'out', 'precious'), 'owned')).toThrow(/is a symbolic link, not a folder/);
    expect(() => writeLabFile(path.join(root, 'in', 'f'), 'x')).toThrow(/is a symbolic link, not a folder/);
    expect(() => makeLabDir(path.join(root, 'out', 'sub'))).toThrow(LabPathError);
    expect(() => chownLab(path.join(root, 'out', 'precious'), { uid: 0, gid: 0 })).toThrow(LabPathError);
    expect(existsSync(path.join(root, 'other-host', 'f'))).toBe(false);
    expectVictimIntact();
  });
});

describe('writes', () => {
  it('writes, appends, replaces atomically and publishes once', () => {
    const file = path.join(root, 'a.txt');
    writeLabFile(file, 'one', { mode: 0o600 });
    appendLabFile(file, ' two');
    expect(readFileSync(file, 'utf8')).toBe('one two');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    writeLabFile(file, 'three', { atomic: true });
    expect(readFileSync(file, 'utf8')).toBe('three');
    writeLabFile(path.join(root, 'key'), 'first', { exclusive: true });
    expect(() => writeLabFile(path.join(root, 'key'), 'second', { exclusive: true })).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(readFileSync(path.join(root, 'key'), 'utf8')).toBe('first');
  });

  it('refuses a link planted as the file it writes, as root into a folder another user owns', () => {
    const dir = userDir('pgdata');
    symlinkSync(path.join(victim, 'precious'), path.join(dir, 'postgresql.conf'));
    expect(() => writeLabFile(path.join(dir, 'postgresql.conf'), 'archive_command = x', { mode: 0o600, owner: user })).toThrow(/refused to write .*: it is a symbolic link/);
    expect(() => appendLabFile(path.join(dir, 'postgresql.conf'), 'x')).toThrow(/symbolic link/);
    expect(() => openLabFile(path.join(dir, 'postgresql.conf'), { append: true })).toThrow(/symbolic link/);
    expect(() => copyLabFile('/bin/true', path.join(dir, 'postgresql.conf'))).toThrow(/symbolic link/);
    expectVictimIntact();
  });

  it('refuses a hard link to another file, before it truncates anything', () => {
    const dir = userDir('run');
    const victimFile = path.join(root, 'secret');
    writeFileSync(victimFile, 'secret');
    linkSync(victimFile, path.join(dir, 'pgpass'));
    expect(() => writeLabFile(path.join(dir, 'pgpass'), 'x', { owner: user })).toThrow(/a file with 2 hard links/);
    expect(() => chownLab(path.join(dir, 'pgpass'), user)).toThrow(/a file with 2 hard links/);
    expect(readFileSync(victimFile, 'utf8')).toBe('secret');
    expect(statSync(victimFile).uid).toBe(0);
  });

  it("writes a file of its own in a folder another user owns, and gives it to that user", () => {
    const dir = userDir('pgdata');
    writeLabFile(path.join(dir, 'lab.conf'), 'a = 1', { mode: 0o600, owner: user });
    expect(statSync(path.join(dir, 'lab.conf')).uid).toBe(user.uid);
    const fd = openLabFile(path.join(dir, 'ledger'));
    closeSync(fd);
    expect(statSync(path.join(dir, 'ledger')).uid).toBe(0);
  });

  it("acts as the user deep in that user's own tree: a link there leads only where that user may write", () => {
    const top = userDir('disk');
    const deep = path.join(top, 'pgdata');
    mkdirSync(deep);
    chownSync(deep, user.uid, user.gid);
    writeLabFile(path.join(deep, 'postgresql.auto.conf'), 'x = 1\n', { mode: 0o600, owner: user });
    appendLabFile(path.join(deep, 'postgresql.auto.conf'), 'y = 2\n', { owner: user });
    expect(readFileSync(path.join(deep, 'postgresql.auto.conf'), 'utf8')).toBe('x = 1\ny = 2\n');
    expect(statSync(path.join(deep, 'postgresql.auto.conf')).uid).toBe(user.uid);
    // A root-owned file planted behind a link: the user's write fails, the file stays as it was.
    const rootFile = path.join(root, 'root-only');
    writeFileSync(rootFile, 'root', { mode: 0o600 });
    symlinkSync(rootFile, path.join(deep, 'recovery.signal'));
    expect(() => appendLabFile(path.join(deep, 'recovery.signal'), 'x', { owner: user })).toThrow(/as uid \d+ failed/);
    expect(readFileSync(rootFile, 'utf8')).toBe('root');
    // Root's own file there cannot be had: that user controls the folders.
    expect(() => writeLabFile(path.join(deep, 'mine'), 'x')).toThrow(/only uid \d+ controls its folders/);
    expect(() => chownLab(path.join(deep, 'postgresql.auto.conf'), { uid: 0, gid: 0 })).toThrow(/its folders belong to another user/);
  });

  it('writes and appends durably, itself and as the user deep in that user\'s tree, with the same content and owner', () => {
    // Durability itself shows only on a device that drops what was not flushed (integration/volume-power-cut).
    const top = userDir('volume');
    const deep = path.join(top, 'pgdata');
    mkdirSync(deep);
    chownSync(deep, user.uid, user.gid);
    for (const dir of [top, deep]) {
      writeLabFile(path.join(dir, 'storage-lab.conf'), 'a = 1\n', { mode: 0o600, owner: user, durable: true });
      appendLabFile(path.join(dir, 'storage-lab.conf'), 'b = 2\n', { owner: user, durable: true });
      expect(readFileSync(path.join(dir, 'storage-lab.conf'), 'utf8')).toBe('a = 1\nb = 2\n');
      expect(statSync(path.join(dir, 'storage-lab.conf')).uid).toBe(user.uid);
      expect(statSync(path.join(dir, 'storage-lab.conf')).mode & 0o777).toBe(0o600);
    }
    writeLabFile(path.join(root, 'host.json'), '{}', { atomic: true, durable: true });
    expect(readFileSync(path.join(root, 'host.json'), 'utf8')).toBe('{}');
    expect(readdirSync(root).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('chowns without following a link', () => {
    symlinkSync(victim, path.join(root, 'run-dir'));
    expect(() => chownLab(path.join(root, 'run-dir'), { uid: 0, gid: 0 })).toThrow(/is a symbolic link/);
    mkdirSync(path.join(root, 'logs'));
    chownLab(path.join(root, 'logs'), user);
    expect(statSync(path.join(root, 'logs')).uid).toBe(user.uid);
    expectVictimIntact();
  });
});

describe('reads', () => {
  /** A root-only file with a secret in it: what a link planted by another user would lead root to. */
  function secretFile(): string {
    const file = path.join(base, 'root-only');
    writeFileSync(file, 'SECRET-0600-CONTENT', { mode: 0o600 });
    return file;
  }

  it('reads a file, its first bytes, or its tail from the start of a line; null when it is not there', () => {
    const dir = userDir('logs');
    writeFileSync(path.join(dir, 'postgres.log'), 'one\ntwo\nthree\nfour\n');
    expect(readLabFile(path.join(dir, 'postgres.log'))).toBe('one\ntwo\nthree\nfour\n');
    expect(readLabFile(path.join(dir, 'postgres.log'), { maxBytes: 6 })).toBe('one\ntw');
    expect(readLabFile(path.join(dir, 'postgres.log'), { maxBytes: 8, tail: true })).toBe('four\n');
    // What the log gained since its size was taken, and no more than its tail of that.
    expect(labFileSize(path.join(dir, 'postgres.log'))).toBe(19);
    expect(readLabFile(path.join(dir, 'postgres.log'), { tail: true, maxBytes: 1024, from: 8 })).toBe('three\nfour\n');
    expect(readLabFile(path.join(dir, 'postgres.log'), { tail: true, maxBytes: 8, from: 4 })).toBe('four\n');
    expect(readLabFile(path.join(dir, 'postgres.log'), { from: 19 })).toBe('');
    // A log cut shorter since (rotated): read from its start.
    expect(readLabFile(path.join(dir, 'postgres.log'), { from: 100 })).toBe('one\ntwo\nthree\nfour\n');
    expect(labFileSize(path.join(dir, 'missing.log'))).toBeNull();
    expect(readLabFile(path.join(dir, 'missing.log'))).toBeNull();
    expect(readLabFile(path.join(root, 'no-folder', 'f'))).toBeNull();
    expect(listLabDir(dir)).toEqual(['postgres.log']);
    expect(() => readLabFile(path.join(outside, 'f'))).toThrow(/refused to read .*outside the lab's folders/);
  });

  it('refuses a link planted as the file, by the user who owns the folder: the secret is never read', () => {
    const secret = secretFile();
    const dir = userDir('logs');
    // Planted as that user (the postgres user owns the server's log folder).
    execFileSync('ln', ['-s', secret, path.join(dir, 'postgres.log')], { uid: user.uid, gid: user.gid });
    let message = '';
    try {
      readLabFile(path.join(dir, 'postgres.log'));
    } catch (err) {
      message = String(err);
    }
    expect(message).toMatch(/refused to read .*postgres\.log: .*is a symbolic link/);
    expect(message).not.toContain('SECRET');
    expect(() => labReadStream(path.join(dir, 'postgres.log'))).toThrow(/symbolic link/);
  });

  it('refuses a link as any folder on the way, deep in the other user\'s tree, and a hard link, a FIFO or a folder as the file', () => {
    const secret = secretFile();
    const top = userDir('disk');
    execFileSync('mkdir', [path.join(top, 'pgdata')], { uid: user.uid, gid: user.gid });
    execFileSync('ln', ['-s', base, path.join(top, 'pgdata', 'pg_wal')], { uid: user.uid, gid: user.gid });
    expect(() => readLabFile(path.join(top, 'pgdata', 'pg_wal', 'root-only'))).toThrow(/pg_wal is a symbolic link, not a folder/);
    expect(() => listLabDir(path.join(top, 'pgdata', 'pg_wal'))).toThrow(/symbolic link/);
    // The folder itself swapped for a link (top is the user's: it may rename pgdata away and link it).
    execFileSync('mv', [path.join(top, 'pgdata'), path.join(top, 'old')], { uid: user.uid, gid: user.gid });
    execFileSync('ln', ['-s', base, path.join(top, 'pgdata')], { uid: user.uid, gid: user.gid });
    expect(() => readLabFile(path.join(top, 'pgdata', 'root-only'))).toThrow(/pgdata is a symbolic link, not a folder/);
    const dir = userDir('run');
    linkSync(secret, path.join(dir, 'hard'));
    expect(() => readLabFile(path.join(dir, 'hard'))).toThrow(/a file with 2 hard links/);
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    expect(() => readLabFile(path.join(dir, 'fifo'))).toThrow(/it is a special file, not a file of its own/);
    expect(() => readLabFile(dir)).toThrow(/it is a folder, not a file of its own/);
  });

  it("reads a file outside the lab in another user's folder as that user: a link there to a root-only file is not read", () => {
    const secret = secretFile();
    const data = path.join(outside, 'pgdata');
    mkdirSync(data);
    chownSync(data, user.uid, user.gid);
    execFileSync('sh', ['-c', `echo 4242 > ${path.join(data, 'postmaster.pid')}`], { uid: user.uid, gid: user.gid });
    expect(readAsFolderOwner(path.join(data, 'postmaster.pid'), 16)).toBe('4242\n');
    execFileSync('ln', ['-s', secret, path.join(data, 'linked.pid')], { uid: user.uid, gid: user.gid });
    expect(() => readAsFolderOwner(path.join(data, 'linked.pid'))).toThrow(/as uid \d+ failed: .*Permission denied/);
    // In a folder of root's, a link is refused without reading.
    symlinkSync(secret, path.join(outside, 'root-link.pid'));
    expect(() => readAsFolderOwner(path.join(outside, 'root-link.pid'))).toThrow(/it is a symbolic link/);
  });

  it('reads kernel files only below /proc and /sys, and operator files only outside the lab', () => {
    expect(readKernelFile('/proc/self/stat')).toMatch(/^\d+ /);
    expect(() => readKernelFile(path.join(root, 'f'))).toThrow(/not below \/proc\/ or \/sys\//);
    expect(() => readKernelFile('/proc/../etc/shadow')).toThrow(/not below/);
    writeFileSync(path.join(outside, 'ca.pem'), 'cert');
    expect(readOperatorFile(path.join(outside, 'ca.pem')).toString()).toBe('cert');
    writeFileSync(path.join(root, 'host.json'), '{}');
    expect(() => readOperatorFile(path.join(root, 'host.json'))).toThrow(/lies in the lab's folder .*read it with readLabFile/);
    expect(() => listOperatorDir(root)).toThrow(/list it with listLabDir/);
  });
});

describe('removal', () => {
  it('removes a folder the lab made, with its marker, and leaves nothing', async () => {
    const dir = makeLabDir(path.join(root, 'hosts', 'h1'), { marker: true });
    writeLabFile(path.join(dir, 'host.json'), '{}');
    await removeLabTree(dir);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(path.join(root, 'hosts', '.h1.storage-lab'))).toBe(false);
    await removeLabTree(dir); // Nothing there is fine.
  });

  it('refuses a folder without the marker, and a link where a marked folder was', async () => {
    const plain = path.join(root, 'not-ours');
    mkdirSync(plain);
    writeFileSync(path.join(plain, 'f'), 'x');
    await expect(removeLabTree(plain)).rejects.toThrow(/the lab did not make it \(no marker/);
    expect(existsSync(path.join(plain, 'f'))).toBe(true);
    const marked = makeLabDir(path.join(root, 'store'), { marker: true });
    rmSync(marked, { recursive: true });
    symlinkSync(victim, marked);
    await expect(removeLabTree(marked)).rejects.toThrow(/is a symbolic link, not a folder the lab made/);
    expect(() => makeLabDir(path.join(root, 'taken'), { marker: true, owner: user })).not.toThrow();
    symlinkSync(victim, path.join(root, 'planted'));
    expect(() => makeLabDir(path.join(root, 'planted'), { marker: true, owner: user })).toThrow(/refused to take over .*a symbolic link the lab did not make/);
    expectVictimIntact();
    await expect(removeLabTree(root)).rejects.toThrow(/is or holds the lab's folder/);
  });

  it("removes a tree whose subfolder another user owns and filled with a link to a victim folder: the victim stays whole", async () => {
    const host = makeLabDir(path.join(root, 'h2'), { marker: true });
    const sub = path.join(host, 'pgbench');
    mkdirSync(sub);
    chownSync(sub, user.uid, user.gid);
    symlinkSync(victim, path.join(sub, 'escape'));
    symlinkSync(path.join(victim, 'precious'), path.join(sub, 'file-link'));
    await removeLabTree(host);
    expect(existsSync(host)).toBe(false);
    expectVictimIntact();
  });

  it('removes as its owner a folder the lab did not make: only what that user could remove', async () => {
    const data = path.join(userDir('disk'), 'pgdata');
    mkdirSync(data);
    chownSync(data, user.uid, user.gid);
    writeFileSync(path.join(data, 'PG_VERSION'), '15');
    chownSync(path.join(data, 'PG_VERSION'), user.uid, user.gid);
    await removeTreeAs(user, data);
    expect(existsSync(data)).toBe(false);
    const mixed = userDir('mixed');
    const rootOwned = path.join(mixed, 'root-owned');
    mkdirSync(rootOwned);
    writeFileSync(path.join(rootOwned, 'f'), 'x');
    await expect(removeTreeAs(user, mixed)).rejects.toThrow(/Permission denied/);
    expect(readFileSync(path.join(rootOwned, 'f'), 'utf8')).toBe('x');
    await expect(removeTreeAs(null, mixed)).rejects.toThrow(/refused to remove .* as root/);
  });

  it('removes a file or the link itself, never what a link points to', () => {
    symlinkSync(path.join(victim, 'precious'), path.join(root, 'label.json'));
    removeLabFile(path.join(root, 'label.json'));
    expect(existsSync(path.join(root, 'label.json'))).toBe(false);
    removeLabFile(path.join(root, 'label.json'));
    expect(() => removeLabFile(path.join(outside, 'x'))).toThrow(/outside the lab's folders/);
    expectVictimIntact();
  });

  it('makes and removes a scratch folder of its own in the temporary folder', async () => {
    const dir = makeScratchDir('lab-fs-scratch-', user);
    expect(statSync(dir).uid).toBe(user.uid);
    writeLabFile(path.join(dir, 'postgresql.conf'), 'x', { mode: 0o600, owner: user });
    await removeLabTree(dir);
    expect(existsSync(dir)).toBe(false);
    expect(() => writeLabFile(path.join(dir, 'again'), 'x')).toThrow(/outside the lab's folders/);
  });
});
