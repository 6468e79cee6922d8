/** Every workflow the control worker runs. Deterministic code only: side effects live in activities. */
import { setWorkflowOptions } from '@temporalio/workflow';
// Loaded in the order they always were: several of them import each other.
import { experimentWorkflow } from './experiment-workflow';
import { clusterWorkflow } from './cluster-workflow';
import { sweeperWorkflow } from './sweeper-workflow';
import { nightlyRegressionWorkflow } from './nightly-regression-workflow';
import { restoreDrillWorkflow } from './restore-drill-workflow';
import { restoreToolComparisonWorkflow } from './restore-tool-comparison-workflow';
import { failoverDrillWorkflow } from './failover-drill-workflow';
import { diagnoseWorkflow } from './diagnose-workflow';

/*
 * How each workflow meets a new build (worker versioning; the control worker refuses a workflow without one).
 * Pinned: a run finishes on the build it started on, so a change to it never replays an older history. The runs
 * and drills last hours (seed-full most of a day); diagnose lasts minutes, so pinning it costs a retiring build
 * minutes, and its changes need no patched().
 */
const PINNED: ((...args: never[]) => Promise<unknown>)[] = [
  experimentWorkflow,
  clusterWorkflow,
  nightlyRegressionWorkflow,
  restoreDrillWorkflow,
  restoreToolComparisonWorkflow,
  failoverDrillWorkflow,
  diagnoseWorkflow,
];
for (const workflow of PINNED) setWorkflowOptions({ versioningBehavior: 'PINNED' }, workflow);
// Auto-upgrade: a sweep in flight moves to the new build at its next task (a fix reaches the next batch, and a
// sweep never keeps a retiring build alive); its command changes go behind patched(), as replay.test.ts checks.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, sweeperWorkflow);

export {
  experimentWorkflow,
  clusterWorkflow,
  sweeperWorkflow,
  nightlyRegressionWorkflow,
  restoreDrillWorkflow,
  restoreToolComparisonWorkflow,
  failoverDrillWorkflow,
  diagnoseWorkflow,
};
