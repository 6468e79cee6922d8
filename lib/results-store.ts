/**
 * Where a run's results go: result.json, cluster results (saved before teardown) and report files.
 * A folder locally; S3 on AWS (see s3-results-store.ts). Keys are relative paths below the run's prefix.
 */
import { readFile, readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { RESERVED_RUN_FOLDERS, runFolderName, safeSegment, type ReservedRunFolder } from '../common/core/ids';
import { makeLabDir, registerLabRoot, writeLabFile } from './lab-fs';

export { runFolderName };

/** A run folder only the lab's own modules name (the history's index): no workflow id can reach it. */
export interface ReservedRun {
  readonly reserved: ReservedRunFolder;
}

/** A run's workflow id, or one of the lab's reserved runs. */
export type RunKey = string | ReservedRun;

export interface ResultsStore {
  /** Human-readable location of a run's results (a folder path or an s3:// URL). */
  location(run: RunKey): string;
  put(run: RunKey, key: string, body: string): Promise<void>;
  /** The stored text, or null when there is none. */
  get(run: RunKey, key: string): Promise<string | null>;
  /** Keys stored for a run below a prefix ("clusters/"). */
  list(run: RunKey, prefix: string): Promise<string[]>;
  /** Run ids with anything stored. */
  runs(): Promise<string[]>;
}

/** The folder (key prefix) of a run: its workflow id made safe (common/core/ids.ts), or a reserved folder. */
export function runFolderOf(run: RunKey): string {
  if (typeof run === 'string') return runFolderName(run);
  if (!(RESERVED_RUN_FOLDERS as readonly string[]).includes(run.reserved)) throw new Error(`unknown reserved run ${JSON.stringify(run.reserved)}`);
  return run.reserved;
}

/** A key below a run ("report.md", "clusters/<host>.json"), or a prefix of keys: each part one safe segment. */
export function safeKey(key: string, field = 'key'): string {
  for (const part of key.replace(/\/+$/, '').split('/')) safeSegment(part, field);
  return key;
}

export class DirResultsStore implements ResultsStore {
  constructor(readonly root: string) {
    // The store writes below its folder only: the file guard lets it.
    registerLabRoot(root);
  }

  location(run: RunKey): string {
    return path.join(this.root, runFolderOf(run));
  }

  async put(run: RunKey, key: string, body: string): Promise<void> {
    const file = path.join(this.location(run), safeKey(key));
    makeLabDir(path.dirname(file));
    // Written aside, then renamed, so a reader (or a crash) never sees half a file.
    writeLabFile(file, body, { atomic: true });
  }

  async get(run: RunKey, key: string): Promise<string | null> {
    const file = path.join(this.location(run), safeKey(key));
    return existsSync(file) ? readFile(file, 'utf8') : null;
  }

  async list(run: RunKey, prefix: string): Promise<string[]> {
    const dir = path.join(this.location(run), safeKey(prefix, 'prefix'));
    if (!existsSync(dir)) return [];
    return (await readdir(dir)).filter((f) => !f.includes('.tmp-')).map((f) => path.posix.join(prefix, f));
  }

  async runs(): Promise<string[]> {
    if (!existsSync(this.root)) return [];
    const entries = await readdir(this.root, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => e.name);
  }
}
