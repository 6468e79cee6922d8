/**
 * The sweeper's judgement, pure: which lab resources to remove. A host goes when its expiry has passed, or when
 * the run that made it is closed or unknown here; a host whose run is running and not expired is never removed. A
 * folder with no owner record goes only when no run still open could have made it: it is older than OWNERLESS_GRACE
 * and than every open run of the namespace.
 */
import type { ProviderName } from '../providers/registry';

/** A run as the sweeper sees it on this Temporal namespace. */
export type RunState = 'running' | 'closed' | 'unknown';

/** A host some provider manages (see HostProvider.list), or a run's local backup store. */
export interface SweepCandidate {
  /** What removing it means: a host's teardown, or deleting a backup store's folder. Default: host. */
  kind?: 'host' | 'backup-store';
  /** Kept on purpose by its run (a drill's backup.keep): never swept. */
  keep?: boolean;
  provider: ProviderName;
  hostId: string;
  runId: string;
  expiresAt: string | null;
  resources: string[];
  foreign?: boolean;
  /**
   * A host or store folder without an owner record (runId ''): when it was made, and when the oldest run still open
   * in the namespace started (null: none open), looked up after the folder was listed.
   */
  ownerless?: { madeAt: string; oldestOpenRunStartedAt: string | null };
}

/** How old a folder without an owner record must be before it is removed: a provisioning claims its folder at once. */
export const OWNERLESS_GRACE_MS = 10 * 60 * 1000;

export interface SweepDecision extends SweepCandidate {
  reason: string;
}

/** What a sweep did: removed (or, in a dry run, would remove), kept, and failed to remove. */
export interface SweepReport {
  dryRun: boolean;
  checkedAt: string;
  /** Removed (or, in a dry run, to be removed), with the reason. */
  removed: SweepDecision[];
  kept: SweepDecision[];
  /** Hosts whose removal failed; the next sweep tries them again. */
  failed: (SweepDecision & { error: string })[];
  /** Published data sets past their expiry, removed from the lab's folder store (issue 31); or why that failed. */
  dataSetsRemoved?: string[];
  dataSetsFailed?: string;
}

export interface SweepPlan {
  remove: SweepDecision[];
  keep: SweepDecision[];
}

function expired(c: SweepCandidate, now: string): boolean {
  if (!c.expiresAt) return false;
  const at = Date.parse(c.expiresAt);
  return Number.isFinite(at) && at <= Date.parse(now);
}

/** Runs whose state decides a host's fate (the others are decided by expiry or ownership alone). */
export function runsToCheck(candidates: SweepCandidate[], now: string): string[] {
  const ids = candidates.filter((c) => !c.keep && !expired(c, now) && !c.foreign && c.runId).map((c) => c.runId);
  return [...new Set(ids)].sort();
}

/** Decides every candidate. A run missing from `runs` keeps its hosts: the sweeper only removes what it checked. */
export function planSweep(candidates: SweepCandidate[], runs: Record<string, RunState>, now: string): SweepPlan {
  const plan: SweepPlan = { remove: [], keep: [] };
  for (const c of candidates) {
    if (c.keep) plan.keep.push({ ...c, reason: 'kept on purpose by its run' });
    else if (expired(c, now)) plan.remove.push({ ...c, reason: `expired at ${c.expiresAt}` });
    else if (c.foreign)
      plan.keep.push({ ...c, reason: `made by another lab; removed once it expires${c.expiresAt ? ` (${c.expiresAt})` : ''}` });
    else if (!c.runId && c.ownerless) {
      const made = Date.parse(c.ownerless.madeAt);
      const oldest = c.ownerless.oldestOpenRunStartedAt;
      const what = `${c.resources[0] ?? c.hostId} has no owner record (made ${c.ownerless.madeAt})`;
      if (Date.parse(now) - made < OWNERLESS_GRACE_MS) plan.keep.push({ ...c, reason: `${what}: younger than ${OWNERLESS_GRACE_MS / 60000} minutes, a run may still be claiming it` });
      else if (oldest !== null && Date.parse(oldest) <= made)
        plan.keep.push({ ...c, reason: `${what}: a run open since ${oldest} could have made it; removed once no open run is older than it` });
      else plan.remove.push({ ...c, reason: `${what}: older than every open run (${oldest ? `the oldest started ${oldest}` : 'none open'}), so no live run made it` });
    } else if (!c.runId) plan.remove.push({ ...c, reason: 'no run label: left behind by a crashed teardown' });
    else {
      const state = runs[c.runId];
      if (state === 'closed') plan.remove.push({ ...c, reason: `run ${c.runId} has closed` });
      else if (state === 'unknown') plan.remove.push({ ...c, reason: `run ${c.runId} is unknown to this Temporal namespace` });
      else if (state === 'running') plan.keep.push({ ...c, reason: `run ${c.runId} is running` });
      else plan.keep.push({ ...c, reason: `run ${c.runId} was not checked` });
    }
  }
  return plan;
}
