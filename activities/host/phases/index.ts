/**
 * Every phase's host activity (the host halves of the phase modules, common/phases/), named as its module declares.
 * Typed against the registry: a phase registered without its activity here, or one whose input or result differs
 * from what its module declares, does not compile.
 */
import type { PhaseActivities } from '../../../common/phases/registry';
import type { HostDeps } from '../deps';
import { runBacklogPhase } from './backlog';
import { runCheckpointPhase } from './checkpoint';
import { runVacuumPhase } from './vacuum';

export function createPhaseActivities(deps: HostDeps): PhaseActivities {
  return {
    runCheckpointPhase: (input) => runCheckpointPhase(deps, input),
    runVacuumPhase: (input) => runVacuumPhase(deps, input),
    runBacklogPhase: (input) => runBacklogPhase(deps, input),
  };
}
