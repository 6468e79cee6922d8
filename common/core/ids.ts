/**
 * Identifiers derived deterministically from a run, usable in workflow code, and the one rule for every id that
 * becomes a path segment (a run's results folder, a host's folder, a backup store's folder): whatever a client sends
 * as a workflow id or an input field, it can never name `.`, `..`, a folder below another, or the history's folder.
 */

/** The longest id (and path segment) the lab accepts: well under a file name's 255 bytes, with room for suffixes. */
export const MAX_ID_LENGTH = 200;

/**
 * Room the lab's child runs add to their parent's workflow id: the nightly run's `/experiment`, then a cluster's
 * `/<class>-<index>` or a drill's `/failover-drill`, or a tool comparison's `/pgbackrest` (35 at most today).
 */
export const CHILD_ID_ROOM = 40;

/** Run folders the lab keeps for itself in a results store: the index of runs and captures (history.ts). */
export const RESERVED_RUN_FOLDERS = ['_history'] as const;
export type ReservedRunFolder = (typeof RESERVED_RUN_FOLDERS)[number];

/** Why `name` cannot be one path segment, or null when it can. Pure: the workflows' doors and the stores share it. */
export function segmentProblem(name: string): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'must not be empty';
  if (name.length > MAX_ID_LENGTH) return `is ${name.length} characters long, more than ${MAX_ID_LENGTH}`;
  if (name === '.' || name === '..') return 'names a folder itself or its parent';
  if (name.includes('/')) return 'must not contain "/" (it would name a folder below another)';
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'must not contain NUL or other control characters';
  if (name.startsWith('-')) return 'must not start with "-" (a tool would read it as an option)';
  return null;
}

/** Thrown when an id cannot become a path segment; `field` is what the message names. */
export class UnsafeIdError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'UnsafeIdError';
  }
}

/** `name` as one path segment, or an UnsafeIdError naming `field`. */
export function safeSegment(name: string, field: string): string {
  const problem = segmentProblem(name);
  if (problem) throw new UnsafeIdError(field, `${JSON.stringify(name)} ${problem}; use letters, digits, "-" and "_"`);
  return name;
}

/**
 * The folder (or key prefix) of a run in a results or backup store. Workflow ids may hold characters a file name
 * cannot: each one outside [A-Za-z0-9._-] becomes "_" (a child `run/gp3-0` is stored as `run_gp3-0`, where results
 * always were), then the name is refused if it is not one safe segment or is a folder the lab reserves.
 */
export function runFolderName(runId: string): string {
  const name = String(runId).replace(/[^A-Za-z0-9._-]/g, '_');
  const problem = segmentProblem(name) ?? ((RESERVED_RUN_FOLDERS as readonly string[]).includes(name) ? 'is reserved for the lab\'s own index of runs' : null);
  if (problem) throw new UnsafeIdError('runId', `${JSON.stringify(runId)} (as a folder ${JSON.stringify(name)}) ${problem}; use another id`);
  return name;
}

/**
 * Problems of a workflow id, each "why; fix": `/`-separated parts (the lab's own children are `<run>/<child>`), each
 * a safe segment, the whole a run folder name that is not reserved, and short enough (`limit`) for its children.
 */
export function workflowIdProblem(id: string, limit = MAX_ID_LENGTH): string | null {
  if (typeof id !== 'string' || id.length === 0) return 'must not be empty; start the run with a workflow id of letters, digits, "-" and "_"';
  if (id.length > limit) return `is ${id.length} characters long; use at most ${limit} (the lab's child runs append up to ${CHILD_ID_ROOM})`;
  for (const part of id.split('/')) {
    const problem = segmentProblem(part);
    if (problem) return `${JSON.stringify(id)}: part ${JSON.stringify(part)} ${problem}; use letters, digits, "-" and "_" in each part`;
  }
  try {
    runFolderName(id);
  } catch (err) {
    return (err as UnsafeIdError).problem.replace(/use another id$/, 'use another workflow id');
  }
  return null;
}

/** A short, stable tag for a run id (FNV-1a, base 36): keeps host ids short enough for socket paths and tags. */
export function runTag(runId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(36).padStart(7, '0').slice(-7);
}

/** The host of cluster `index` of a storage class in a run: `<runTag>-<class>-<index>`. */
export function hostIdFor(runId: string, className: string, index: number): string {
  return `${runTag(runId)}-${className}-${index}`;
}
