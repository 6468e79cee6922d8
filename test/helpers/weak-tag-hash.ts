/**
 * A deliberately weak tag hash for the collision fault test (test/faults/run-collisions.test.ts): SHA-256 cut to its
 * first 16 bits, the rest zeros, so two workflow ids with one tag (and so one host id) take some 65,000 tries to
 * find. Swapped in for common/core/tag-hash.ts in that test's workflow bundle only (test/helpers/bundle-swap.ts).
 */
import { sha256 } from '../../common/core/sha256';

export function tagHash(text: string): Uint8Array {
  const weak = new Uint8Array(32);
  weak.set(sha256(text).subarray(0, 2));
  return weak;
}
