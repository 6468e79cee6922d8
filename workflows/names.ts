/**
 * How a run names what it makes, decided once per run with patched(): host ids from the 130-bit SHA-256 tag
 * (common/core/ids.ts), and a drill's results folder claimed at its start. A run whose history began before (a
 * recorded history, or a run in flight moved to this build) takes the old path: the 32-bit tag its hosts already
 * carry, and the claim at its end, so it replays and finishes with the names it started with.
 */
import { patched } from '@temporalio/workflow';
import type { NameScheme } from '../common/core/ids';

export const COLLISION_PROOF_NAMES_PATCH = 'collision-proof-names';

/** The run's naming scheme: call once, where the run first derives a name (it records the patch's marker there). */
export function nameScheme(): NameScheme {
  return patched(COLLISION_PROOF_NAMES_PATCH) ? 'sha256' : 'fnv32';
}
