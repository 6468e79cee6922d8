/** Every workflow the control worker runs. Deterministic code only: side effects live in activities. */
import type { VersioningBehavior } from '@temporalio/common';
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
// Loaded in the order they always were: several of them import each other.
import { experimentWorkflow } from './experiment-workflow';
import { clusterWorkflow } from './cluster-workflow';
import { sweeperWorkflow } from './sweeper-workflow';
import { nightlyRegressionWorkflow } from './nightly-regression-workflow';
import { restoreDrillWorkflow } from './restore-drill-workflow';
import { restoreToolComparisonWorkflow } from './restore-tool-comparison-workflow';
import { failoverDrillWorkflow } from './failover-drill-workflow';
import { partitionDrillWorkflow } from './partition-drill-workflow';
import { powerCutDrillWorkflow } from './power-cut-drill-workflow';
import { diagnoseWorkflow } from './diagnose-workflow';

const WORKFLOWS = {
  experimentWorkflow,
  clusterWorkflow,
  sweeperWorkflow,
  nightlyRegressionWorkflow,
  restoreDrillWorkflow,
  restoreToolComparisonWorkflow,
  failoverDrillWorkflow,
  partitionDrillWorkflow,
  powerCutDrillWorkflow,
  diagnoseWorkflow,
};

/**
 * How each workflow meets a new build of the control worker (worker versioning; the worker refuses to start with a
 * workflow missing here). PINNED: a run finishes on the build it started on, so a change never replays an older
 * history; the runs and drills last hours (seed-full most of a day), diagnose minutes (pinning it keeps a retiring
 * build minutes longer, and its changes need no patched()). AUTO_UPGRADE: a sweep in flight moves to the new build
 * at its next task (a fix reaches the next batch, a sweep never keeps a retiring build alive); its command changes
 * go behind patched(), as replay.test.ts checks.
 */
export const VERSIONING_BEHAVIORS: Record<keyof typeof WORKFLOWS, VersioningBehavior> = {
  experimentWorkflow: 'PINNED',
  clusterWorkflow: 'PINNED',
  nightlyRegressionWorkflow: 'PINNED',
  restoreDrillWorkflow: 'PINNED',
  restoreToolComparisonWorkflow: 'PINNED',
  failoverDrillWorkflow: 'PINNED',
  partitionDrillWorkflow: 'PINNED',
  powerCutDrillWorkflow: 'PINNED',
  diagnoseWorkflow: 'PINNED',
  sweeperWorkflow: 'AUTO_UPGRADE',
};

/**
 * Declared to a versioned worker only: an unversioned one (the workflow tests' workers) fails any task that names a
 * behavior. Its tasks carry a version without a deployment name.
 */
const whenVersioned = (versioningBehavior: VersioningBehavior) => () =>
  workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior } : {};

for (const [name, workflow] of Object.entries(WORKFLOWS))
  setWorkflowOptions(whenVersioned(VERSIONING_BEHAVIORS[name as keyof typeof WORKFLOWS]), workflow as (...args: never[]) => Promise<unknown>);

export {
  experimentWorkflow,
  clusterWorkflow,
  sweeperWorkflow,
  nightlyRegressionWorkflow,
  restoreDrillWorkflow,
  restoreToolComparisonWorkflow,
  failoverDrillWorkflow,
  partitionDrillWorkflow,
  powerCutDrillWorkflow,
  diagnoseWorkflow,
};
