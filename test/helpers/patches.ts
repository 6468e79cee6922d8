/** The patches a workflow history took: patched() records a core_patch marker carrying the patch's id. */
import type { temporal } from '@temporalio/proto';

/** The ids of the patches a run took, in order. */
export function patchesOf(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? [])
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString()).id);
}
