/**
 * Owner records: a resource the lab names from a run (a local host's folder, a backup store) is claimed by the first
 * activity that creates it, atomically (a file linked into place with O_EXCL, or an S3 object put with
 * If-None-Match: *), and every later activity checks the record before it acts. Another run's resource is refused
 * non-retryably, naming both runs (common/core/claims.ts); nothing of it is touched. S3 records: lib/s3-claims.ts.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../common/core/errors';
import { ownedBy, ownerRefusal, type Claimant, type OwnerRecord } from '../common/core/claims';
import { readLabFile, writeLabFile } from './lab-fs';

/** The failure of an activity on another run's resource: non-retryable (the resource stays that run's). */
export function ownedByAnotherRun(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FAILURE_TYPES.ownedByAnotherRun);
}

/** An owner record as read, or null when the text is not one. */
export function parseRecord(text: string): OwnerRecord | null {
  try {
    const r = JSON.parse(text) as Partial<OwnerRecord>;
    return typeof r.workflowId === 'string' && typeof r.execution === 'string' && typeof r.runId === 'string' && typeof r.resource === 'string' ? (r as OwnerRecord) : null;
  } catch {
    return null;
  }
}

/** The owner record in a file below the lab's roots (read through the file guard), or null when there is none. */
export function readClaimFile(file: string): OwnerRecord | null {
  const text = readLabFile(file, { maxBytes: 64 * 1024 });
  if (text === null) return null;
  const record = parseRecord(text);
  if (!record) throw ownedByAnotherRun(`${file} is not an owner record the lab wrote; the resource is refused`);
  return record;
}

/**
 * Claims a resource for `record`'s owner with a file written aside and linked into place (O_EXCL): of two claimants
 * at once exactly one wins. Returns the record in force: the new one, or the one already there (a retry of the same
 * owner finds its own). The caller compares it (checkClaim).
 */
export function claimFile(file: string, record: OwnerRecord): OwnerRecord {
  try {
    writeLabFile(file, `${JSON.stringify(record, null, 2)}\n`, { exclusive: true, mode: 0o644 });
    return record;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const existing = readClaimFile(file);
  if (!existing) throw new Error(`${file} vanished while it was claimed; try again`);
  return existing;
}

/** Refuses, non-retryably and naming both runs, a claimant that is not the record's owner. */
export function checkClaim(what: string, record: OwnerRecord, claimant: Claimant & { runId?: string }, action: string): void {
  if (!ownedBy(record, claimant)) throw ownedByAnotherRun(ownerRefusal(what, record, claimant, action));
}
