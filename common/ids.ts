/** Identifiers derived deterministically from a run, usable in workflow code. */

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
