/**
 * Where a run's results go: result.json, cluster results (saved before teardown) and report files.
 * A folder locally; S3 on AWS (see s3-results-store.ts). Keys are relative paths below the run's prefix.
 */
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';

export interface ResultsStore {
  /** Human-readable location of a run's results (a folder path or an s3:// URL). */
  location(runId: string): string;
  put(runId: string, key: string, body: string): Promise<void>;
  /** The stored text, or null when there is none. */
  get(runId: string, key: string): Promise<string | null>;
  /** Keys stored for a run below a prefix ("clusters/"). */
  list(runId: string, prefix: string): Promise<string[]>;
  /** Run ids with anything stored. */
  runs(): Promise<string[]>;
}

/** Run ids come from workflow ids, which may hold characters a file name cannot. */
export function runFolderName(runId: string): string {
  return runId.replace(/[^A-Za-z0-9._-]/g, '_');
}

export class DirResultsStore implements ResultsStore {
  constructor(readonly root: string) {}

  location(runId: string): string {
    return path.join(this.root, runFolderName(runId));
  }

  async put(runId: string, key: string, body: string): Promise<void> {
    const file = path.join(this.location(runId), key);
    await mkdir(path.dirname(file), { recursive: true });
    // Write then rename, so a reader (or a crash) never sees half a file.
    const tmp = `${file}.tmp-${process.pid}`;
    await writeFile(tmp, body);
    await rename(tmp, file);
  }

  async get(runId: string, key: string): Promise<string | null> {
    const file = path.join(this.location(runId), key);
    return existsSync(file) ? readFile(file, 'utf8') : null;
  }

  async list(runId: string, prefix: string): Promise<string[]> {
    const dir = path.join(this.location(runId), prefix);
    if (!existsSync(dir)) return [];
    return (await readdir(dir)).filter((f) => !f.includes('.tmp-')).map((f) => path.posix.join(prefix, f));
  }

  async runs(): Promise<string[]> {
    if (!existsSync(this.root)) return [];
    const entries = await readdir(this.root, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => e.name);
  }
}
