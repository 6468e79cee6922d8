/**
 * The hash behind the tag of a run (common/core/ids.ts runTag): SHA-256. A module of its own so that a fault test can
 * build a workflow bundle with a deliberately weak one in its place (test/helpers/weak-tag-hash.ts, swapped in by the
 * bundler) and force two runs onto one tag; nothing a run's input holds can reach it.
 */
import { sha256 } from './sha256';

/** The digest a run's tag is cut from. */
export function tagHash(text: string): Uint8Array {
  return sha256(text);
}
