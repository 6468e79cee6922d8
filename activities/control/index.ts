/**
 * Control-plane activities: they run in the control worker (task queue "storage-lab"): provider calls, the results
 * store, backup stores, the preflight, the sweeper's lookups, the regression verdict and diagnose. Built by a
 * factory that receives their dependencies; each group lives in its own module.
 */
import { createBackupStoreActivities } from './backup-stores';
import { createDataSetActivities } from './data-sets';
import { createDiagnoseActivities } from './diagnose';
import { createPreflightActivities } from './preflight';
import { createProviderActivities, providerNamed } from './providers';
import { createRegressionActivities } from './regression';
import { createResultsActivities } from './results';
import { createSweepActivities } from './sweep';
import type { ControlDeps } from './types';

export type { ControlDeps, HostRef, ProvisionInput } from './types';

export function createControlActivities(deps: ControlDeps) {
  return {
    ...createRegressionActivities(deps),
    ...createPreflightActivities(deps, providerNamed(deps)),
    ...createProviderActivities(deps),
    ...createResultsActivities(deps),
    ...createSweepActivities(deps),
    ...createBackupStoreActivities(deps),
    ...createDataSetActivities(deps),
    ...createDiagnoseActivities(deps),
  };
}

export type ControlActivities = ReturnType<typeof createControlActivities>;
