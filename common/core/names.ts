/** Names shared by workflows, workers and the CLI: one constant each, never the string twice. */

/** Task queue of the control worker: workflows and control-plane activities. */
export const CONTROL_TASK_QUEUE = 'storage-lab';

/** Task queue of the host agent that lives next to one Postgres. */
export function hostTaskQueue(hostId: string): string {
  return `host:${hostId}`;
}

/** Search attributes the lab registers on the Temporal server (name → type, as `temporal` expects them). */
export const SEARCH_ATTRIBUTES = {
  experiment: { name: 'StorageLabExperiment', type: 'Keyword' },
  preset: { name: 'StorageLabPreset', type: 'Keyword' },
  storageClasses: { name: 'StorageLabClasses', type: 'KeywordList' },
  status: { name: 'StorageLabStatus', type: 'Keyword' },
} as const;

/** Tags (AWS) and host labels (local) that mark a resource as the lab's, so the sweeper can find it. */
export const RESOURCE_TAGS = {
  runId: 'storage-lab:run-id',
  hostId: 'storage-lab:host-id',
  experiment: 'storage-lab:experiment',
  expiresAt: 'storage-lab:expires-at',
  /** The lab (Temporal address/namespace) that made it: the sweeper only judges runs it can look up. */
  owner: 'storage-lab:owner',
  /** The workflow that made it and alone acts on it (common/core/claims.ts): its id and first execution's run id. */
  workflowId: 'storage-lab:workflow-id',
  execution: 'storage-lab:execution',
} as const;

/** Workflow type names as the UI and schedules see them. */
export const WORKFLOW_TYPES = {
  experiment: 'experimentWorkflow',
  cluster: 'clusterWorkflow',
  restoreDrill: 'restoreDrillWorkflow',
  restoreToolComparison: 'restoreToolComparisonWorkflow',
  failoverDrill: 'failoverDrillWorkflow',
  partitionDrill: 'partitionDrillWorkflow',
  powerCutDrill: 'powerCutDrillWorkflow',
  nightlyRegression: 'nightlyRegressionWorkflow',
  sweeper: 'sweeperWorkflow',
  diagnose: 'diagnoseWorkflow',
} as const;

/** Database and role the lab creates on every host. */
export const LAB_DATABASE = 'bench';
export const LAB_ROLE = 'lab';
/**
 * The role the spec's workload (pgbench with its script) connects as: no superuser, only reads and writes of the
 * pgbench tables, so no script can run a program (COPY ... PROGRAM), read or write server files, or change settings.
 */
export const WORKLOAD_ROLE = 'lab_workload';
