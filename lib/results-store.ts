/**
 * Where a run's results go: result.json, cluster results (saved before teardown) and report files.
 * A folder locally; S3 on AWS (see s3-results-store.ts). Keys are relative paths below the run's prefix.
 * A run's folder is its id escaped injectively (common/core/ids.ts) and claimed by its first write (`.run-id`, made
 * atomically); results of runs made before the escaping stay found under their old folder, where its claim names them.
 */
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { legacyRunFolderName, RESERVED_RUN_FOLDERS, runFolderName, runIdOfFolder, safeSegment, UnsafeIdError, type ReservedRunFolder } from '../common/core/ids';
import { listLabDir, makeLabDir, readLabFile, registerLabRoot, writeLabFile } from './lab-fs';

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
  /**
   * Writes `value` under `key` unless something is there, atomically (of two writers at once exactly one wins);
   * returns what is stored now: a run's claims.
   */
  claim(run: RunKey, key: string, value: string): Promise<string>;
}

/** The folder (key prefix) of a run: its workflow id made safe (common/core/ids.ts), or a reserved folder. */
export function runFolderOf(run: RunKey): string {
  if (typeof run === 'string') return runFolderName(run);
  if (!(RESERVED_RUN_FOLDERS as readonly string[]).includes(run.reserved)) throw new Error(`unknown reserved run ${JSON.stringify(run.reserved)}`);
  return run.reserved;
}

/** The file in a run's folder that names the run it belongs to (written by the first put). */
export const RUN_CLAIM_KEY = '.run-id';

/** The text of a run's claim: its workflow id, or the reserved folder's name. */
export function runClaim(run: RunKey): string {
  return typeof run === 'string' ? run : `reserved:${run.reserved}`;
}

/**
 * Refuses a run whose folder another run's results already hold: two workflow ids that differ only in characters
 * outside [A-Za-z0-9._-] (`a/b`, `a_b`) name one folder, and a run must never overwrite another's results.
 */
export function checkRunClaim(run: RunKey, folder: string, claimed: string | null): void {
  if (claimed === null || claimed === runClaim(run)) return;
  throw new UnsafeIdError('runId', `the results folder ${folder} belongs to run ${JSON.stringify(claimed)}, and ${JSON.stringify(runClaim(run))} would write into it (ids that differ only in characters outside [A-Za-z0-9._-] share a folder); start the run with another workflow id`);
}

/** The file in a run's folder that names the workflow execution whose results it holds (claimRunExecution). */
export const RUN_EXECUTION_KEY = '.run-execution';

/**
 * Claims a run's folder for one workflow execution (its Temporal run id), or refuses: a new run started under the
 * workflow id of a run that has finished (Temporal lets a closed workflow's id be used again) would otherwise write
 * into that run's results. Called where a run first writes its own results (an experiment's spec, a drill's or a
 * diagnose's results); writes of its children and later steps go through put, under the run's id claim. A folder made
 * before claims existed is claimed by its next writer.
 */
export async function claimRunExecution(store: ResultsStore, run: string, execution: string): Promise<void> {
  const claimed = await store.claim(run, RUN_EXECUTION_KEY, execution);
  if (claimed !== execution)
    throw new UnsafeIdError(
      'workflowId',
      `run ${JSON.stringify(run)} finished before (execution ${claimed}) and its results are in ${store.location(run)}; a new run under its workflow id (execution ${execution}) would replace them: start the run with another workflow id`,
    );
}

/** A key below a run ("report.md", "clusters/<host>.json"), or a prefix of keys: each part one safe segment. */
export function safeKey(key: string, field = 'key'): string {
  for (const part of key.replace(/\/+$/, '').split('/')) safeSegment(part, field);
  return key;
}

/**
 * The folder name a run had before names were escaped injectively, when it differs: used only where the folder's own
 * claim names that run exactly (a run finished or in flight before the change), so `a_b` never reads `a/b`'s results.
 */
export function legacyFolderOf(run: RunKey): string | null {
  if (typeof run !== 'string') return null;
  const name = legacyRunFolderName(run);
  return name && name !== runFolderOf(run) ? name : null;
}

export class DirResultsStore implements ResultsStore {
  constructor(readonly root: string) {
    // The store writes below its folder only: the file guard lets it.
    registerLabRoot(root);
  }

  location(run: RunKey): string {
    const folder = path.join(this.root, runFolderOf(run));
    const legacy = legacyFolderOf(run);
    if (!legacy || isFolder(folder)) return folder;
    const old = path.join(this.root, legacy);
    return readLabFile(path.join(old, RUN_CLAIM_KEY), { maxBytes: 4096 }) === runClaim(run) ? old : folder;
  }

  async put(run: RunKey, key: string, body: string): Promise<void> {
    const folder = this.location(run);
    const file = path.join(folder, safeKey(key));
    makeLabDir(path.dirname(file));
    await this.claimFolder(run, folder);
    // Written aside, then renamed, so a reader (or a crash) never sees half a file.
    writeLabFile(file, body, { atomic: true });
  }

  /** The run's claim of its folder, made by the first write (O_EXCL), checked by every write. */
  private async claimFolder(run: RunKey, folder: string): Promise<void> {
    makeLabDir(folder);
    checkRunClaim(run, folder, this.createOnce(path.join(folder, RUN_CLAIM_KEY), runClaim(run)));
  }

  /** Writes a file unless it exists (linked into place: of two writers exactly one wins); returns its content. */
  private createOnce(file: string, value: string): string {
    try {
      writeLabFile(file, value, { exclusive: true });
      return value;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // Another writer was first: read theirs.
    }
    return readLabFile(file, { maxBytes: 64 * 1024 }) ?? '';
  }

  async claim(run: RunKey, key: string, value: string): Promise<string> {
    const folder = this.location(run);
    await this.claimFolder(run, folder);
    return this.createOnce(path.join(folder, safeKey(key)), value);
  }

  async get(run: RunKey, key: string): Promise<string | null> {
    return readLabFile(path.join(this.location(run), safeKey(key)));
  }

  async list(run: RunKey, prefix: string): Promise<string[]> {
    const dir = path.join(this.location(run), safeKey(prefix, 'prefix'));
    return (listLabDir(dir) ?? []).filter((f) => !f.includes('.tmp-') && f !== RUN_CLAIM_KEY).map((f) => path.posix.join(prefix, f));
  }

  async runs(): Promise<string[]> {
    return (listLabDir(this.root) ?? []).filter((name) => isFolder(path.join(this.root, name))).map((name) => runOfFolder(name));
  }
}

function isFolder(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The run id a folder holds: the id it escapes, or (a folder from before the escaping, or the lab's own) its name. */
export function runOfFolder(name: string): string {
  return (RESERVED_RUN_FOLDERS as readonly string[]).includes(name) ? name : (runIdOfFolder(name) ?? name);
}
