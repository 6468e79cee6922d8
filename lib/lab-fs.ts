/**
 * The one way the lab (as root, or as its own user) reads, creates, writes, chowns and deletes files: activities/,
 * infra/, lib/ and worker/ go through here (eslint.config.js refuses the fs calls elsewhere). Reads open every
 * component below the lab's root without following a link (O_NOFOLLOW through the folder already open, an openat),
 * refuse anything but a regular file of one link, and read at most a bounded number of bytes: root never reads
 * through a link another user (the postgres OS user, in its own folders) planted. Kernel files (/proc, /sys) and
 * files the operator names outside the lab's folders have readers of their own. Every write operation:
 * - resolves its path below a registered root (the lab's home, hosts, results, backups, logs and run folders, and
 *   scratch folders it made) and refuses any other, and any symbolic link between the root and the path's folder;
 * - walks the folders from / down: a folder anyone but root (or the lab's user) may change is "foreign". With none,
 *   or only the last folder foreign (say PGDATA's parent, owned by postgres), it acts itself, never following a
 *   link in the last component (O_NOFOLLOW) and checking what it opened (a regular file with one link, or a folder);
 *   deeper in another user's tree it acts as that user, in a child process with that uid, with that user's rights;
 * - deletes a folder recursively only when the lab made it, proven by a marker file the lab wrote beside it (in a
 *   folder only the lab can write), with GNU `rm -rf --one-file-system`, which walks with openat and never follows a
 *   link: Node's fs.rm reads each folder by path (internal/fs/rimraf.js), so a folder swapped for a link between
 *   its lstat and its readdir is followed.
 * Refusals are LabPathError (non-retryable: common/core/errors.ts), naming the path and the reason.
 */
import { execFile, spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  createReadStream,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/** An OS user a file or folder is made for (OsUser fits). */
export interface Owner {
  uid: number;
  gid: number;
}

/** A path the lab refused to touch: outside its folders, a planted link, a folder it did not make. */
export class LabPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabPathError';
  }
}

/** The suffix of the marker file the lab writes beside each folder it may later delete recursively. */
export const MARKER_SUFFIX = '.storage-lab';

interface Root {
  /** As registered (resolved), and with the symbolic links of its existing part resolved. */
  given: string;
  real: string;
}

const roots: Root[] = [];
/** Scratch folders (mkdtemp): roots of their own until removed. */
const scratch = new Set<string>();
const execFileAsync = promisify(execFile);
const PATH_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' };

/** Folders (or single files) the lab owns: every path it writes or deletes lies below one of them. */
export function registerLabRoot(...dirs: string[]): void {
  for (const dir of dirs) {
    const root = { given: path.resolve(dir), real: realExisting(dir) };
    if (!roots.some((r) => r.real === root.real && r.given === root.given)) roots.push(root);
  }
}

/** The registered roots (real paths), for messages and tests. */
export function labRoots(): string[] {
  return [...new Set([...roots.map((r) => r.real), ...scratch])];
}

/** A path with the symbolic links of its existing part resolved (the rest appended as it is). */
function realExisting(p: string): string {
  const rest: string[] = [];
  for (let d = path.resolve(p); ; d = path.dirname(d)) {
    try {
      return path.join(realpathSync(d), ...rest.reverse());
    } catch (err) {
      if (!['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    }
    if (d === path.dirname(d)) return path.resolve(p);
    rest.push(path.basename(d));
  }
}

function inside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
}

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (err) {
    if (['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return null;
    throw err;
  }
}

function kindOf(st: Stats): string {
  return st.isSymbolicLink() ? 'a symbolic link' : st.isDirectory() ? 'a folder' : st.isFile() ? 'a file' : 'a special file';
}

const euid = () => process.geteuid?.() ?? 0;
const egid = () => process.getegid?.() ?? 0;

/**
 * Where an operation on `p` acts: the path below its root with the root's own links resolved, and no link allowed
 * between the root and the path's folder (a link there could lead into another host's folder).
 */
function locate(p: string, op: string): { target: string; parent: string } {
  const abs = path.resolve(p);
  if (abs === path.dirname(abs)) throw new LabPathError(`refused to ${op} ${abs}: the file system root`);
  for (const dir of scratch) if (inside(abs, dir)) return { target: abs, parent: path.dirname(abs) };
  const root = roots.find((r) => inside(abs, r.given)) ?? roots.find((r) => inside(abs, r.real));
  if (!root) throw new LabPathError(`refused to ${op} ${abs}: outside the lab's folders (${labRoots().join(', ') || 'none registered'})`);
  const base = inside(abs, root.given) ? root.given : root.real;
  const rel = path.relative(base, abs);
  const target = rel ? path.join(root.real, rel) : root.real;
  const parent = path.dirname(target);
  let d = root.real;
  for (const part of rel ? path.dirname(rel).split(path.sep).filter((s) => s && s !== '.') : []) {
    d = path.join(d, part);
    const st = lstatOrNull(d);
    if (!st) break;
    if (!st.isDirectory()) throw new LabPathError(`refused to ${op} ${abs}: ${d} is ${kindOf(st)}, not a folder (a link planted in the lab's folders?)`);
  }
  return { target, parent };
}

/** Whether only root (or the lab's own user) can change a folder's entries. */
function trustedDir(st: Stats): boolean {
  const sticky = (st.mode & 0o1000) !== 0;
  const ownerOk = st.uid === 0 || st.uid === euid();
  const othersWrite = (st.mode & 0o002) !== 0;
  const groupWrite = (st.mode & 0o020) !== 0 && st.gid !== 0 && st.gid !== egid();
  return st.isDirectory() && ownerOk && (sticky || (!othersWrite && !groupWrite));
}

/** How to act in `parent`: ourselves (its own owner may be foreign), or as the one user who controls the folders. */
interface Control {
  parentTrusted: boolean;
  as: Owner | null;
}

function controlOf(parent: string, op: string, target: string): Control {
  const foreign: { dir: string; st: Stats }[] = [];
  for (let d = parent; ; d = path.dirname(d)) {
    const st = lstatSync(d);
    if (!trustedDir(st)) foreign.push({ dir: d, st });
    if (d === path.dirname(d)) break;
  }
  if (foreign.length === 0) return { parentTrusted: true, as: null };
  if (foreign.length === 1 && foreign[0].dir === parent && foreign[0].st.isDirectory()) return { parentTrusted: false, as: null };
  const { uid, gid } = foreign[0].st;
  if (uid !== 0 && uid !== euid() && foreign.every((f) => f.st.isDirectory() && f.st.uid === uid && (f.st.mode & 0o002) === 0))
    return { parentTrusted: false, as: { uid, gid } };
  throw new LabPathError(
    `refused to ${op} ${target}: ${foreign.map((f) => `${f.dir} (owner uid ${f.st.uid}, mode ${(f.st.mode & 0o7777).toString(8)})`).join(', ')} can be changed by other users; keep the lab's folders where only root can change them`,
  );
}

/** Runs a command as another user (the kernel then grants only that user's rights); throws on failure. */
function runAs(user: Owner, cmd: string, args: string[], input?: string | Buffer): void {
  const r = spawnSync(cmd, args, { uid: user.uid, gid: user.gid, cwd: '/', env: PATH_ENV, input, stdio: ['pipe', 'ignore', 'pipe'] });
  // A command that fails before reading its input closes the pipe first: its exit status is the reason, not EPIPE.
  if (r.error && !((r.error as NodeJS.ErrnoException).code === 'EPIPE' && r.status !== null)) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} as uid ${user.uid} failed (exit ${r.status}): ${r.stderr.toString().trim()}`);
}

/**
 * Opens the last component without following a link, refusing anything but a regular file with one link (a hard
 * link to a file elsewhere, a FIFO or a device planted under the name). Not truncated: the caller decides.
 */
function openChecked(target: string, flags: number, mode: number | undefined, op: string): number {
  let fd: number;
  try {
    fd = openSync(target, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY, mode ?? 0o666);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new LabPathError(`refused to ${op} ${target}: it is a symbolic link`);
    throw err;
  }
  const st = fstatSync(fd);
  if (!st.isFile() || st.nlink !== 1) {
    closeSync(fd);
    throw new LabPathError(`refused to ${op} ${target}: it is ${st.isFile() ? `a file with ${st.nlink} hard links` : kindOf(st)}, not a file of its own`);
  }
  return fd;
}

function writeAll(fd: number, data: string | Buffer): void {
  const buf = typeof data === 'string' ? Buffer.from(data) : data;
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
}

/** Sets mode and owner through the open file (no path is looked up again). */
function finish(fd: number, mode: number | undefined, owner: Owner | null | undefined): void {
  if (mode !== undefined) fchmodSync(fd, mode);
  if (owner) fchownSync(fd, owner.uid, owner.gid);
}

export interface WriteOptions {
  /** Permission bits (applied to an existing file too); default 0666 less the umask for a new file. */
  mode?: number;
  /** The file's owner afterwards; null or unset: whoever wrote it. */
  owner?: Owner | null;
  /** Append instead of replacing the content. */
  append?: boolean;
  /** Write a temporary file beside it, then rename it into place (in folders only the lab can change). */
  atomic?: boolean;
  /** Fail with EEXIST when the file exists; a reader never sees it half written (written aside, then linked). */
  exclusive?: boolean;
  /**
   * Make it durable before returning: the file's data flushed (fsync), and its folder's entry when the file was made
   * or renamed into place. A file a server reads when it starts after a power cut (its configuration in PGDATA) must
   * be: ext4 commits the new size of an appended file within 5 s but writes its data back only within 30 s, so a cut
   * between the two leaves zeros where the text was (docs/drills.md, the power-cut drill).
   */
  durable?: boolean;
}

/** Flushes a folder's entries (a file made or renamed in it) to its device; the folder is opened without following a link. */
function fsyncFolder(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes a file below the lab's roots (see the module comment for what is refused). */
export function writeLabFile(file: string, data: string | Buffer, opts: WriteOptions = {}): void {
  const { target, parent } = locate(file, 'write');
  const control = controlOf(parent, 'write', target);
  if (control.as) {
    // Deep in another user's folders: that user writes it, so a link there leads only where that user may write.
    if (!opts.owner || opts.owner.uid !== control.as.uid || opts.exclusive)
      throw new LabPathError(`refused to write ${target}: only uid ${control.as.uid} controls its folders, and the file is not to be that user's own`);
    // coreutils' sync with operands fsyncs each one (a folder too: its entries).
    const flush = opts.durable ? ' && sync -- "$1" "$3"' : '';
    const script = opts.append
      ? `umask 077; cat >> "$1"${flush}`
      : `umask 077; t="$1.tmp-$$"; cat > "$t" && chmod "$2" "$t"${opts.durable ? ' && sync -- "$t"' : ''} && mv -fT -- "$t" "$1"${flush}`;
    runAs(control.as, '/bin/sh', ['-c', script, 'sh', target, (opts.mode ?? 0o600).toString(8), parent], data);
    return;
  }
  if (opts.exclusive || (opts.atomic && control.parentTrusted)) {
    const tmp = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    const fd = openChecked(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, opts.mode, 'write');
    try {
      writeAll(fd, data);
      finish(fd, opts.mode, opts.owner);
      if (opts.durable) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      if (opts.exclusive) linkSync(tmp, target);
      else renameSync(tmp, target);
    } finally {
      if (opts.exclusive) unlinkSync(tmp);
    }
    if (opts.durable) fsyncFolder(parent);
    return;
  }
  const fd = openChecked(target, constants.O_WRONLY | constants.O_CREAT | (opts.append ? constants.O_APPEND : 0), opts.mode, 'write');
  try {
    if (!opts.append) ftruncateSync(fd, 0);
    writeAll(fd, data);
    finish(fd, opts.mode, opts.owner);
    if (opts.durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (opts.durable) fsyncFolder(parent);
}

/** Appends to a file below the lab's roots (writeLabFile with append). */
export function appendLabFile(file: string, data: string, opts: Omit<WriteOptions, 'append' | 'atomic' | 'exclusive'> = {}): void {
  writeLabFile(file, data, { ...opts, append: true });
}

/** Opens a file below the lab's roots for writing (a log, a ledger), checked as writeLabFile checks; the caller closes it. */
export function openLabFile(file: string, opts: { append?: boolean; mode?: number } = {}): number {
  const { target, parent } = locate(file, 'open');
  if (controlOf(parent, 'open', target).as) throw new LabPathError(`refused to open ${target} for writing: its folders belong to another user`);
  const fd = openChecked(target, constants.O_WRONLY | constants.O_CREAT | (opts.append ? constants.O_APPEND : 0), opts.mode, 'open');
  if (!opts.append) ftruncateSync(fd, 0);
  return fd;
}

/** Copies a regular file into the lab's folders, with its permission bits; `owner` owns the copy. */
export function copyLabFile(src: string, dest: string, opts: { owner?: Owner | null } = {}): void {
  const { target, parent } = locate(dest, 'copy to');
  if (controlOf(parent, 'copy to', target).as) throw new LabPathError(`refused to copy to ${target}: its folders belong to another user`);
  const from = openSync(src, constants.O_RDONLY);
  try {
    const mode = fstatSync(from).mode & 0o7777;
    const to = openChecked(target, constants.O_WRONLY | constants.O_CREAT, mode, 'copy to');
    try {
      ftruncateSync(to, 0);
      const buf = Buffer.alloc(1 << 20);
      for (let n = readSync(from, buf); n > 0; n = readSync(from, buf)) writeAll(to, buf.subarray(0, n));
      finish(to, mode, opts.owner);
    } finally {
      closeSync(to);
    }
  } finally {
    closeSync(from);
  }
}

/** Gives a file or folder to `owner` (and `mode`, when given) without following a link; a no-op when it is so already. */
export function chownLab(p: string, owner: Owner, mode?: number): void {
  const { target, parent } = locate(p, 'chown');
  const st = lstatSync(target);
  if (st.isSymbolicLink()) throw new LabPathError(`refused to chown ${target}: it is a symbolic link`);
  if (st.uid === owner.uid && st.gid === owner.gid && (mode === undefined || (st.mode & 0o7777) === mode)) return;
  if (controlOf(parent, 'chown', target).as) throw new LabPathError(`refused to chown ${target}: its folders belong to another user`);
  let fd: number;
  try {
    fd = openSync(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new LabPathError(`refused to chown ${target}: it is a symbolic link`);
    throw err;
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isDirectory() && !(opened.isFile() && opened.nlink === 1))
      throw new LabPathError(`refused to chown ${target}: it is ${opened.isFile() ? `a file with ${opened.nlink} hard links` : kindOf(opened)}`);
    fchownSync(fd, owner.uid, owner.gid);
    if (mode !== undefined) fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

function markerOf(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}${MARKER_SUFFIX}`);
}

/** Whether the lab's marker for `target` is there: a file of ours, one link, in a folder only the lab changes, naming it. */
function hasMarker(target: string): boolean {
  const marker = markerOf(target);
  const st = lstatOrNull(marker);
  if (!st || !st.isFile() || st.uid !== euid() || st.nlink !== 1 || !trustedDir(lstatSync(path.dirname(marker)))) return false;
  const fd = openSync(marker, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const buf = Buffer.alloc(Buffer.byteLength(target) + 2);
    return buf.subarray(0, readSync(fd, buf)).toString() === `${target}\n`;
  } finally {
    closeSync(fd);
  }
}

function writeMarker(target: string): void {
  const marker = markerOf(target);
  if (!controlOf(path.dirname(marker), 'mark', target).parentTrusted)
    throw new LabPathError(`refused to make ${target} removable: its folder ${path.dirname(target)} can be changed by other users`);
  const fd = openChecked(marker, constants.O_WRONLY | constants.O_CREAT, 0o644, 'mark');
  try {
    ftruncateSync(fd, 0);
    writeAll(fd, `${target}\n`);
  } finally {
    closeSync(fd);
  }
}

export interface DirOptions {
  /** Permission bits of folders it creates (less the umask), as mkdir's; default 0755. */
  mode?: number;
  /** Owner of the folder afterwards (chowned without following a link). */
  owner?: Owner | null;
  /** Mark it as the lab's, so removeLabTree may delete it later; refuses a folder that is there without a marker. */
  marker?: boolean;
}

/** Creates a folder (and its missing parents) below the lab's roots; returns its real path. */
export function makeLabDir(dir: string, opts: DirOptions = {}): string {
  const mode = opts.mode ?? 0o755;
  const { target, parent } = locate(dir, 'create folder');
  if (!lstatOrNull(parent)) {
    // A missing root is created with its parents, as the operator configured it; below a root, each folder is checked.
    if (labRoots().some((r) => inside(parent, r))) makeLabDir(parent, { mode });
    else mkdirSync(parent, { recursive: true, mode });
  }
  const control = controlOf(parent, 'create folder', target);
  if (opts.marker && !hasMarker(target)) {
    const there = lstatOrNull(target);
    if (there) throw new LabPathError(`refused to take over ${target}: it is ${kindOf(there)} the lab did not make (no marker ${markerOf(target)})`);
    writeMarker(target);
  }
  if (control.as) runAs(control.as, 'mkdir', ['-p', '-m', mode.toString(8), '--', target]);
  else
    try {
      mkdirSync(target, { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  const st = lstatSync(target);
  if (!st.isDirectory()) throw new LabPathError(`refused to use ${target} as a folder: it is ${kindOf(st)}`);
  if (opts.owner) chownLab(target, opts.owner);
  return target;
}

/** A new empty folder in the system's temporary folder, the lab's until removeLabTree removes it. */
export function makeScratchDir(prefix: string, owner?: Owner | null): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  scratch.add(dir);
  writeMarker(dir);
  if (owner) chownLab(dir, owner);
  return dir;
}

/** Refuses to delete a root itself or a folder that holds one. */
function refuseRoots(target: string, op: string): void {
  const root = roots.find((r) => inside(r.real, target));
  if (root) throw new LabPathError(`refused to ${op} ${target}: it is or holds the lab's folder ${root.real}`);
}

/**
 * Deletes a folder the lab made (its marker beside it), with everything in it, never following a link inside: GNU
 * rm on one file system. Nothing there is fine; a link, or a folder without the marker, is refused.
 */
export async function removeLabTree(dir: string): Promise<void> {
  const { target, parent } = locate(dir, 'remove folder');
  refuseRoots(target, 'remove folder');
  const st = lstatOrNull(target);
  if (st) {
    if (!st.isDirectory()) throw new LabPathError(`refused to remove ${target}: it is ${kindOf(st)}, not a folder the lab made`);
    if (!hasMarker(target)) throw new LabPathError(`refused to remove ${target}: the lab did not make it (no marker ${markerOf(target)})`);
    controlOf(parent, 'remove folder', target);
    await execFileAsync('rm', ['-rf', '--one-file-system', '--', target], { env: PATH_ENV });
  }
  removeMarker(target);
  scratch.delete(target);
}

/** Deletes the marker of a folder that is gone (a file of ours; anything else there is left alone). */
function removeMarker(target: string): void {
  const marker = markerOf(target);
  const st = lstatOrNull(marker);
  if (st?.isFile() && st.uid === euid()) unlinkSync(marker);
}

/**
 * Deletes a folder the lab did not make but one OS user owns (a data folder initdb or pg_basebackup made), as that
 * user: the kernel then lets it delete only what that user could. `owner` null: the lab runs as that user itself.
 */
export async function removeTreeAs(owner: Owner | null, dir: string): Promise<void> {
  const { target } = locate(dir, 'remove folder');
  refuseRoots(target, 'remove folder');
  if (!owner && euid() === 0) throw new LabPathError(`refused to remove ${target} as root: name the user who owns it`);
  await execFileAsync('rm', ['-rf', '--one-file-system', '--', target], { env: PATH_ENV, cwd: '/', ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) });
}

/** Deletes one file (a link itself, never what it points to); nothing there is fine. */
export function removeLabFile(file: string): void {
  const { target, parent } = locate(file, 'remove');
  if (!lstatOrNull(parent)) return;
  const control = controlOf(parent, 'remove', target);
  if (control.as) return runAs(control.as, 'rm', ['-f', '--', target]);
  try {
    unlinkSync(target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'EISDIR' || code === 'EPERM') throw new LabPathError(`refused to remove ${target}: it is a folder, not a file`);
    throw err;
  }
}

/** Bytes a read returns at most unless it asks for fewer: results, reports and configs are far smaller. */
const MAX_READ_BYTES = 64 * 1024 * 1024;

/** The root a path lies below and the names from there down (the path's folders, then its last component). */
function rootOf(p: string, op: string): { root: string; names: string[] } {
  const abs = path.resolve(p);
  for (const dir of scratch) if (inside(abs, dir)) return { root: dir, names: path.relative(dir, abs).split(path.sep).filter(Boolean) };
  const root = roots.find((r) => inside(abs, r.given)) ?? roots.find((r) => inside(abs, r.real));
  if (!root) throw new LabPathError(`refused to ${op} ${abs}: outside the lab's folders (${labRoots().join(', ') || 'none registered'})`);
  const base = inside(abs, root.given) ? root.given : root.real;
  return { root: root.real, names: path.relative(base, abs).split(path.sep).filter(Boolean) };
}

const isMissing = (err: unknown) => ['ENOENT'].includes((err as NodeJS.ErrnoException).code ?? '');
const isLink = (err: unknown) => ['ELOOP', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');

/**
 * Opens a path below the lab's roots for reading, following no link in any component below the root: the root by
 * its real path, then each name through the folder already open (/proc/self/fd/<fd>/<name>: an openat) with
 * O_NOFOLLOW, so a folder or file swapped for a link at any moment is refused, never followed. A file must be a
 * regular file with one link; a folder a folder. Null when something on the way does not exist.
 */
function openNoFollow(p: string, op: string, want: 'file' | 'folder'): number | null {
  const { root, names } = rootOf(p, op);
  let fd: number;
  try {
    // A root registered as a single file (the hosts' key) is the file itself.
    fd = openSync(root, constants.O_RDONLY | (names.length === 0 && want === 'file' ? constants.O_NOFOLLOW | constants.O_NONBLOCK : constants.O_DIRECTORY));
  } catch (err) {
    if (isMissing(err)) return null;
    if (isLink(err)) throw new LabPathError(`refused to ${op} ${path.resolve(p)}: the lab's root ${root} is not a ${want}`);
    throw err;
  }
  let at = root;
  try {
    for (const [i, name] of names.entries()) {
      const last = i === names.length - 1;
      const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY | (last && want === 'file' ? 0 : constants.O_DIRECTORY);
      at = path.join(at, name);
      let next: number;
      try {
        next = openSync(`/proc/self/fd/${fd}/${name}`, flags);
      } catch (err) {
        if (isMissing(err)) return null;
        if (isLink(err)) {
          const st = lstatOrNull(at);
          throw new LabPathError(`refused to ${op} ${path.resolve(p)}: ${at} is ${st ? kindOf(st) : 'not a folder'}${last && want === 'file' ? '' : ', not a folder'} (a link planted in the lab's folders?)`);
        }
        throw err;
      }
      closeSync(fd);
      fd = next;
    }
    const st = fstatSync(fd);
    if (want === 'file' && !(st.isFile() && st.nlink === 1))
      throw new LabPathError(`refused to ${op} ${path.resolve(p)}: it is ${st.isFile() ? `a file with ${st.nlink} hard links` : kindOf(st)}, not a file of its own`);
    const opened = fd;
    fd = -1;
    return opened;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

export interface ReadOptions {
  /** Bytes to read at most (default 64 MiB); the rest is left unread. */
  maxBytes?: number;
  /** Read the last maxBytes bytes instead of the first (a log's tail), from the start of a line. */
  tail?: boolean;
  /** Read nothing before this byte (what a log gained since its size was taken: labFileSize). */
  from?: number;
}

/** A file's size below the lab's roots (opened without following a link); null when it is not there. */
export function labFileSize(file: string): number | null {
  const fd = openNoFollow(file, 'read', 'file');
  if (fd === null) return null;
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

/** A file's bytes below the lab's roots, read without following a link (see openNoFollow); null when it is not there. */
export function readLabBytes(file: string, opts: ReadOptions = {}): Buffer | null {
  const fd = openNoFollow(file, 'read', 'file');
  if (fd === null) return null;
  try {
    const size = fstatSync(fd).size;
    // Cut short only where the caller asks for a bound; a file over the default bound is refused, never cut silently.
    if (opts.maxBytes === undefined && !opts.tail && size > MAX_READ_BYTES)
      throw new LabPathError(`refused to read ${path.resolve(file)}: ${size} bytes, more than the ${MAX_READ_BYTES} a read takes`);
    const max = Math.min(opts.maxBytes ?? MAX_READ_BYTES, MAX_READ_BYTES);
    // A file cut shorter than `from` since (rotated, truncated) is read from its start.
    const floor = opts.from !== undefined && opts.from <= size ? opts.from : 0;
    const start = opts.tail ? Math.max(floor, size - max) : floor;
    const buf = Buffer.alloc(Math.min(max, size - start));
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, start + n);
      if (got === 0) break;
      n += got;
    }
    const bytes = buf.subarray(0, n);
    if (!opts.tail || start === floor) return bytes;
    const newline = bytes.indexOf(0x0a);
    return newline >= 0 ? bytes.subarray(newline + 1) : bytes;
  } finally {
    closeSync(fd);
  }
}

/** A log's last `lines` lines for a failure message, each cut at `lineChars` characters; trailing blank lines dropped. */
export function lastLogLines(text: string, lines: number, lineChars = 300): string {
  return text
    .trimEnd()
    .split('\n')
    .slice(-lines)
    .map((l) => (l.length > lineChars ? `${l.slice(0, lineChars)}…` : l))
    .join('\n');
}

/** A text file below the lab's roots (readLabBytes as UTF-8); null when it is not there. */
export function readLabFile(file: string, opts: ReadOptions = {}): string | null {
  return readLabBytes(file, opts)?.toString('utf8') ?? null;
}

/** A stream of a file below the lab's roots, opened without following a link; null when it is not there. */
export function labReadStream(file: string): Readable | null {
  const fd = openNoFollow(file, 'read', 'file');
  return fd === null ? null : createReadStream('', { fd, autoClose: true });
}

/** The names in a folder below the lab's roots, opened without following a link; null when it is not there. */
export function listLabDir(dir: string): string[] | null {
  const fd = openNoFollow(dir, 'list', 'folder');
  if (fd === null) return null;
  try {
    return readdirSync(`/proc/self/fd/${fd}`);
  } finally {
    closeSync(fd);
  }
}

/** Where the kernel's own files live: only root and the kernel make entries there. */
const KERNEL_ROOTS = ['/proc/', '/sys/'];

function kernelPath(p: string, op: string): string {
  const abs = path.resolve(p);
  if (!KERNEL_ROOTS.some((r) => abs.startsWith(r) || abs === r.slice(0, -1))) throw new LabPathError(`refused to ${op} ${abs} as a kernel file: not below ${KERNEL_ROOTS.join(' or ')}`);
  return abs;
}

/** A kernel file (/proc, /sys, the cgroup file system): counters, limits, a process's command line. */
export function readKernelFile(file: string): string {
  return readFileSync(kernelPath(file, 'read'), 'utf8');
}

/** PostgreSQL's POSIX dynamic shared memory segments (dsm_impl.c): the one kind of file the lab removes in /dev/shm. */
export const SERVER_SEGMENT = /^\/dev\/shm\/PostgreSQL\.\d+$/;

/**
 * Removes a segment a lab server's processes mapped before they were killed (lib/pg-dsm.ts), only while it is still
 * the file that was read then: a regular file of that name with the same inode and owner. (/dev/shm is sticky: only
 * its owner or root renames or removes an entry; unlink removes a link planted by that owner, never its target.)
 * Returns whether it removed it; any other path is refused.
 */
export function removeServerSegment(file: string, read: { ino: number; uid: number }): boolean {
  if (!SERVER_SEGMENT.test(file)) throw new LabPathError(`refused to remove ${file}: not a PostgreSQL segment in /dev/shm (PostgreSQL.<digits>)`);
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch {
    return false;
  }
  if (!st.isFile() || st.ino !== read.ino || st.uid !== read.uid) return false;
  try {
    unlinkSync(file);
    return true;
  } catch {
    return false;
  }
}

/** The names in a kernel folder (/proc's processes, a cgroup's children). */
export function listKernelDir(dir: string): string[] {
  return readdirSync(kernelPath(dir, 'list'));
}

/**
 * A file the operator names or installs, outside the lab's folders: a certificate, the accounts file, the project's
 * own files (package.json, the agent's package). Refused below the lab's roots, where readLabFile must read.
 */
export function readOperatorFile(file: string): Buffer {
  const abs = path.resolve(file);
  const root = roots.find((r) => inside(abs, r.given) || inside(abs, r.real));
  if (root) throw new LabPathError(`refused to read ${abs} as the operator's file: it lies in the lab's folder ${root.real} (read it with readLabFile)`);
  return readFileSync(abs);
}

/** The names in a folder the operator installs (a tools cache, PostgreSQL's installations), outside the lab's folders. */
export function listOperatorDir(dir: string): string[] {
  const abs = path.resolve(dir);
  const root = roots.find((r) => inside(abs, r.given) || inside(abs, r.real));
  if (root) throw new LabPathError(`refused to list ${abs} as the operator's folder: it lies in the lab's folder ${root.real} (list it with listLabDir)`);
  return readdirSync(abs);
}

/**
 * A small file outside the lab's folders in a folder another OS user owns (a server's postmaster.pid the lab did not
 * make), read as that user: the kernel then grants only that user's rights, so a link there leads nowhere that user
 * could not read already. In a folder of root's (or the lab's user) it is opened without following a link. Bounded.
 */
export function readAsFolderOwner(file: string, maxBytes = 64 * 1024): string {
  const abs = path.resolve(file);
  const dir = lstatSync(path.dirname(abs));
  if (!dir.isDirectory()) throw new LabPathError(`refused to read ${abs}: ${path.dirname(abs)} is ${kindOf(dir)}, not a folder`);
  if (dir.uid !== 0 && dir.uid !== euid()) {
    const r = spawnSync('head', ['-c', String(maxBytes), '--', abs], { uid: dir.uid, gid: dir.gid, cwd: '/', env: PATH_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.error) throw r.error;
    if (r.status !== 0) throw Object.assign(new Error(`reading ${abs} as uid ${dir.uid} failed: ${r.stderr.toString().trim()}`), { code: /No such file/.test(r.stderr.toString()) ? 'ENOENT' : 'EACCES' });
    return r.stdout.toString('utf8');
  }
  const fd = openChecked(abs, constants.O_RDONLY, undefined, 'read');
  try {
    const buf = Buffer.alloc(maxBytes);
    return buf.subarray(0, readSync(fd, buf, 0, maxBytes, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
