/**
 * The one compensation skeleton of every workflow that makes or measures things (cluster, both drills, the
 * experiment, the tool comparison): run the plan; whatever happens to it (a failure, a cancellation), save what was
 * measured first, so nothing measured is lost, then undo what the run made, in a non-cancellable scope.
 * The plan registers an undo step on its UndoStack before each call that creates something (a host, a backup store):
 * a creation that fails half-way may still have made it, and every undo is idempotent (nothing there is fine). The
 * steps run in reverse, each one even when another failed, through one retry policy (teardownCalls). Child runs are
 * not on the stack: each undoes its own, and a cancelled parent waits for that (workflows/children.ts).
 * Compensation errors are recorded on the board and returned, never swallowed. A continue-as-new passes through
 * untouched: the run goes on in the next execution, which registers what it carries and compensates in its turn.
 */
import { CancellationScope, ContinueAsNew, isCancellation, patched } from '@temporalio/workflow';
import type { ProviderName } from '../common/core/hosts';
import type { BackupStoreSpec } from '../common/input/spec';
import { failureMessage } from './failures';
import type { ProgressBoard } from './progress';
import { currentClaimant } from './owner';
import { teardownCalls } from './proxies';

export type PlanStatus = 'ok' | 'failed' | 'cancelled';

/**
 * The stack's order (last made, first undone) is behind patched(): a run whose undo began on earlier code tore every
 * host down at once, then the backup store, and replays that. patched() is called only where the two orders differ
 * (the restore drill, whose restore host is made after its source), so no other history gains a marker.
 */
export const UNDO_IN_REVERSE_PATCH = 'undo-in-reverse';

interface HostRef {
  provider: ProviderName;
  hostId: string;
}

/**
 * One undo step: the hosts provisioned together (torn down together), one backup store, a network cut around a host,
 * or a data set this run claimed to build.
 */
type UndoStep =
  | { hosts: HostRef[] }
  | { store: { runId: string; store: BackupStoreSpec } }
  | { cut: HostRef }
  | { dataSet: { key: string; store: BackupStoreSpec } };

/** What a run made, as undo steps registered before each creation; undone in reverse after the results are saved. */
export class UndoStack {
  private readonly steps: UndoStep[] = [];

  /**
   * Hosts about to be provisioned together: one step. A host already on the stack is not added again (a killed
   * host provisioned again, a continued run's hosts).
   */
  hosts(provider: ProviderName, hostIds: string[]): void {
    const known = new Set(this.steps.flatMap((s) => ('hosts' in s ? s.hosts.map((h) => h.hostId) : [])));
    const hosts = hostIds.filter((hostId) => !known.has(hostId)).map((hostId) => ({ provider, hostId }));
    if (hosts.length) this.steps.push({ hosts });
  }

  /** A run's backup store (its own prefix of the spec's store), about to be prepared. */
  backupStore(runId: string, store: BackupStoreSpec): void {
    this.steps.push({ store: { runId, store } });
  }

  /**
   * A network cut about to be made around a host (the partition drill): healed before the hosts are torn down (their
   * teardown removes it too). Registered once per host however many times it is cut.
   */
  networkCut(provider: ProviderName, hostId: string): void {
    if (!this.steps.some((s) => 'cut' in s && s.cut.hostId === hostId)) this.steps.push({ cut: { provider, hostId } });
  }

  /**
   * A data set this run claimed to build (issue 31): released when the run ends before its manifest is written, so no
   * half-published set stays for a later run to take; a published one stays.
   */
  dataSet(key: string, store: BackupStoreSpec): void {
    this.steps.push({ dataSet: { key, store } });
  }

  /** Runs every step, last registered first, each one even when another failed; returns what failed. */
  async undo(): Promise<string[]> {
    const errors: string[] = [];
    for (const step of this.order()) errors.push(...(await undoStep(step)));
    return errors;
  }

  /** The steps in the order they are undone. */
  private order(): UndoStep[] {
    // A data set's release depends on nothing the run made and nothing depends on it: first, outside the order below
    // (so a run that claims one compares, and marks, the rest exactly as one that does not).
    const dataSets = this.steps.filter((s) => 'dataSet' in s);
    const steps = this.steps.filter((s) => !('dataSet' in s));
    const reversed = [...steps].reverse();
    // The order before the stack: every host at once, then the store (no run of that code cut a network).
    const hosts = steps.flatMap((s) => ('hosts' in s ? s.hosts : []));
    const before = [...steps.filter((s) => 'cut' in s).reverse(), ...(hosts.length ? [{ hosts }] : []), ...steps.filter((s) => 'store' in s)];
    if (JSON.stringify(before) === JSON.stringify(reversed)) return [...dataSets, ...reversed];
    return [...dataSets, ...(patched(UNDO_IN_REVERSE_PATCH) ? reversed : before)];
  }
}

/** Undoes one step through teardownCalls; returns what failed. */
async function undoStep(step: UndoStep): Promise<string[]> {
  const errors: string[] = [];
  if ('dataSet' in step) {
    const { key, store } = step.dataSet;
    await teardownCalls.releaseDataSet
      .executeWithOptions({ summary: `release data set ${key} unless published` }, [{ key, store, owner: currentClaimant() }])
      .catch((err) => errors.push(`releasing data set ${key} failed: ${failureMessage(err)}`));
    return errors;
  }
  if ('cut' in step) {
    const { provider, hostId } = step.cut;
    await teardownCalls.healNetwork
      .executeWithOptions({ summary: `remove the network cut around ${hostId}` }, [{ provider, hostId }])
      .catch((err) => errors.push(`removing the network cut around ${hostId} failed: ${failureMessage(err)}`));
    return errors;
  }
  if ('store' in step) {
    const { runId, store } = step.store;
    await teardownCalls.removeBackupStore
      .executeWithOptions({ summary: `remove the backup store of ${runId}` }, [{ runId, store, owner: currentClaimant() }])
      .catch((err) => errors.push(`removing the backup store of ${runId} failed: ${failureMessage(err)}`));
    return errors;
  }
  await Promise.all(
    step.hosts.map(({ provider, hostId }) =>
      teardownCalls.teardownHost
        .executeWithOptions({ summary: `tear down ${hostId}` }, [{ provider, hostId, owner: currentClaimant() }])
        .catch((err) => errors.push(`teardown of ${hostId} failed: ${failureMessage(err)}`)),
    ),
  );
  return errors;
}

export interface Compensation {
  /** Records the plan's failure in the result before it is saved (status, error). */
  failed?(err: unknown, status: Exclude<PlanStatus, 'ok'>): void;
  /** Saves what the run measured; returns where it is. */
  save(): Promise<string>;
  /** What the plan made (none: a run whose children undo their own). */
  undo?: UndoStack;
  /** Shows the undo on the board, before it runs. */
  undoing?(): void;
}

export interface PlanOutcome<T> {
  value: T | undefined;
  status: PlanStatus;
  /** The plan's failure, else the save's: what the workflow raises after compensating. */
  failure: unknown;
  /** Where the results were saved ('' when saving failed). */
  location: string;
  /** What failed while compensating (also on the board). */
  errors: string[];
}

/** Runs the plan, then saves and undoes whatever happened to it (see the top of this file). */
export async function runCompensated<T>(board: ProgressBoard, plan: () => Promise<T>, compensation: Compensation): Promise<PlanOutcome<T>> {
  let value: T | undefined;
  let failure: unknown;
  let status: PlanStatus = 'ok';
  try {
    value = await plan();
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    failure = err;
    status = isCancellation(err) ? 'cancelled' : 'failed';
    board.fail(failureMessage(err).split('\n')[0]);
    compensation.failed?.(err, status);
  }
  return CancellationScope.nonCancellable(async () => {
    const errors: string[] = [];
    let location = '';
    try {
      location = await compensation.save();
    } catch (err) {
      failure ??= err;
      errors.push(`saving results failed: ${failureMessage(err)}`);
    }
    if (compensation.undo) {
      compensation.undoing?.();
      errors.push(...(await compensation.undo.undo()));
    }
    for (const e of errors) board.fail(e);
    return { value, status, failure, location, errors };
  });
}
