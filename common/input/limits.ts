/**
 * The bounds every spec field is held to, and the field builder that names them. Pure and workflow-safe; imported by
 * the spec, the storage classes and the providers' sections alike, so none of them imports another for a bound.
 */
import { z } from 'zod';

/**
 * Upper bounds of the sizes a spec sets, each what the thing can be, not what a run usually needs (every field has
 * one: test/unit/spec-bounds.test.ts fails on a number, string or list without a maximum). A provider's section has
 * its own (common/providers/).
 */
export const SPEC_LIMITS = {
  /** gp3's long-standing maximum volume size (16 TiB); a local volume is a file of that size on this machine. */
  volumeGiB: 16_384,
  /** A pgbench script: the reference's is 120 bytes; 64 KiB holds any hand-written benchmark. */
  scriptBytes: 64 * 1024,
  /** Storage classes of one run (predict-check has 5). */
  storageClasses: 8,
  /** Clusters of one run, all classes together (seed-full has 8). */
  clusters: 64,
  /** Server settings of one spec (PostgreSQL documents about 350), a name's length (NAMEDATALEN - 1), a value's. */
  settings: 200,
  settingNameChars: 63,
  settingValueChars: 1_024,
} as const;

/** A whole-number field whose errors name its bounds and unit. */
export const int = (min: number, max: number, what: string) =>
  z
    .number({ error: `must be a whole number (${what})` })
    .int({ error: `must be a whole number (${what})` })
    .min(min, { error: `must be at least ${min} (${what})` })
    .max(max, { error: `must be at most ${max} (${what})` });

