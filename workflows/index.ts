/** Every workflow the control worker runs. Deterministic code only: side effects live in activities. */
export { experimentWorkflow } from './experiment-workflow';
export { clusterWorkflow } from './cluster-workflow';
export { sweeperWorkflow } from './sweeper-workflow';
export { nightlyRegressionWorkflow } from './nightly-regression-workflow';
export { restoreDrillWorkflow } from './restore-drill-workflow';
export { restoreToolComparisonWorkflow } from './restore-tool-comparison-workflow';
export { failoverDrillWorkflow } from './failover-drill-workflow';
export { diagnoseWorkflow } from './diagnose-workflow';
