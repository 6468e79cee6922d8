/**
 * Activity proxies, grouped by what their timeouts and retries protect. Workflows import activity types only.
 */
import { ActivityCancellationType, proxyActivities, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import type { HostActivities } from '../activities/host';
import type { PhaseStep } from '../common/phases/kit';
import { FAILURE_TYPES, NON_RETRYABLE_FAILURE_TYPES } from '../common/core/errors';
import type { HostTimeouts } from '../common/input/bounds';
import { hostTaskQueue } from '../common/core/names';
import { currentClaimant } from './owner';

/**
 * Control activities heartbeat while they run (worker/control-worker.ts): a control worker that dies is noticed
 * within this, and its activity retried on another (or a restarted) worker.
 */
const CONTROL_HEARTBEAT_TIMEOUT = '15 seconds';

/** Provider calls create and destroy resources that cost money: retry transient API errors, never bad input. */
export const providerCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
  // A run cancelled mid-provisioning waits for the host to be made: its teardown must not race the creation.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '2 seconds',
    maximumInterval: '1 minute',
    maximumAttempts: 10,
    nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES,
  },
});

/**
 * A power cut (the power-cut drill): one attempt. A second cut after the first had dropped the device's writes would
 * be another fault than the one the drill asked for; a cut that fails fails its round, with the reason.
 */
export const powerCutCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { maximumAttempts: 1 },
});

/** A path the lab refused to write or delete (a planted link, an unsafe id, another run's) stays refused: no retry changes it. */
const REFUSED_PATH_TYPES = [FAILURE_TYPES.labPath, FAILURE_TYPES.unsafeId, FAILURE_TYPES.ownedByAnotherRun];

/**
 * Teardown must eventually succeed, whatever happened before: retry for a long time, and keep retrying on cancel;
 * but not a path the file guard refused.
 */
export const teardownCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '2 seconds', maximumInterval: '2 minutes', maximumAttempts: 30, nonRetryableErrorTypes: REFUSED_PATH_TYPES },
});

/** Results are small writes to a folder or S3; nothing measured may be lost, so retry them generously. */
export const resultCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 20, nonRetryableErrorTypes: REFUSED_PATH_TYPES },
});

/** Data sets' records (a claim, a manifest, a release): small files, retried like results; a refusal stays refused. */
export const dataSetCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 20, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
});

/** The wait for another builder's manifest: one heartbeating activity as long as the builder's bound, not a polling loop in the history. */
export function dataSetWaitCalls(boundSeconds: number) {
  return proxyActivities<ControlActivities>({
    startToCloseTimeout: (boundSeconds + 300) * 1000,
    heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
    retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
  });
}

/**
 * The sweeper's calls: listing and run lookups are cheap, its teardowns must not hold the sweep for an hour when
 * one host resists; the next sweep tries that host again.
 */
export const sweepCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: CONTROL_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
});

/** Checks of the spec against this environment: bad input is final, so no retry. */
export const preflightCalls = proxyActivities<ControlActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
});

/** What a diagnose capture may take beyond its sampled window: connecting, the closing readings, pg_test_fsync (about 16 s, bounded at 2 min), storing. */
const DIAGNOSE_OVERHEAD_SECONDS = 300;

/**
 * Diagnose's read-only capture of a server that may be a production replica: bounded by its window, and a server that
 * is down or restarting may come back, so a few attempts, spaced out; bad input is final.
 */
export function diagnoseCalls(seconds: number) {
  return proxyActivities<ControlActivities>({
    startToCloseTimeout: `${seconds + DIAGNOSE_OVERHEAD_SECONDS} seconds`,
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '5 seconds', maximumAttempts: 3, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
  });
}

export type { HostTimeouts };

/**
 * The host activities each group of hostCalls may schedule, by what its timeouts and retries are meant for: a call
 * through another group is a type error, and the group has no such function at run time. An activity belongs to one
 * group at most, so it never runs under another group's retries.
 */
export const HOST_CALL_GROUPS = {
  hello: ['describeHost'],
  setup: ['describeServer', 'configurePostgres', 'configureBackups', 'initBackupRepository', 'takeBackup', 'verifyAccounts', 'cloneStandby', 'setReplication', 'createFailoverLedger', 'rejoinAsStandby'],
  load: ['loadData', 'publishDataSet', 'restoreDataSet'],
  measure: [
    'runPgbench',
    'writeHistory',
    'markTarget',
    'waitForArchive',
    'removeArchivedSegment',
    'recoverFromBackup',
    'checkArchive',
    'verifyRestore',
    'runFailoverWriter',
    'standbyPosition',
    'promoteStandby',
    'archiveCurrentSegment',
    'countLostCommits',
    'probeOldPrimary',
    'waitForStandbys',
    'checkRepository',
    'recoverAfterPowerCut',
    'checkClusterAfterPowerCut',
    'countAfterPowerCut',
  ],
  bulk: ['restoreBackup'],
} as const satisfies Record<string, readonly (keyof HostActivities)[]>;

type HostCallGroupName = keyof typeof HOST_CALL_GROUPS;

/** The activities of one group, as a workflow calls them. */
export type HostCallGroup<G extends HostCallGroupName> = ActivityInterfaceFor<Pick<HostActivities, (typeof HOST_CALL_GROUPS)[G][number]>>;

/**
 * A group's activities with the group's options, and nothing else (the proxy would make any name callable). Each call
 * names this workflow as the owner it acts for (currentClaimant): the host's agent refuses any other.
 */
function hostCallGroup<G extends HostCallGroupName>(group: G, options: ActivityOptions): HostCallGroup<G> {
  const proxy = proxyActivities<HostActivities>(options);
  // At call time (a call is always made in a workflow; the groups themselves may be built outside one, in tests).
  const withOwner = (input: unknown) => ({ ...(input as object), owner: currentClaimant() });
  return Object.fromEntries(
    HOST_CALL_GROUPS[group].map((activity) => {
      const call = proxy[activity] as unknown as ((input: unknown) => Promise<unknown>) & { executeWithOptions(o: unknown, args: unknown[]): Promise<unknown> };
      const owned = Object.assign((input: unknown) => call(withOwner(input)), {
        executeWithOptions: (o: unknown, [input]: unknown[]) => call.executeWithOptions(o, [withOwner(input)]),
      });
      return [activity, owned];
    }),
  ) as unknown as HostCallGroup<G>;
}

/** A host's activities, grouped by timeout class (hostCalls). */
export interface HostCalls {
  hello: HostCallGroup<'hello'>;
  setup: HostCallGroup<'setup'>;
  load: HostCallGroup<'load'>;
  measure: HostCallGroup<'measure'>;
  bulk: HostCallGroup<'bulk'>;
}

/**
 * A phase's host activity on its host (common/phases/): one attempt, like a measurement, recorded and retried by the
 * workflow; bounded by the host's silence and by the phase's own bound, which its module derives from its inputs.
 */
export function phaseCall(hostId: string, step: PhaseStep, timeouts: HostTimeouts): Promise<unknown> {
  // Untyped: the step names its activity as its module declares it, and activities/host/phases/index.ts is typed to
  // provide every registered phase's activity with that name, input and result.
  const proxy = proxyActivities({
    taskQueue: hostTaskQueue(hostId),
    scheduleToStartTimeout: timeouts.deadAfterSeconds * 1000,
    startToCloseTimeout: step.boundSeconds * 1000,
    heartbeatTimeout: Math.min(60, timeouts.deadAfterSeconds) * 1000,
    retry: { maximumAttempts: 1 },
    cancellationType: ActivityCancellationType.TRY_CANCEL,
  });
  // Owned like every host call (hostCallGroup): the agent refuses a phase's activity that names no owner.
  return proxy[step.activity].executeWithOptions({ summary: step.summary }, [{ ...step.input, owner: currentClaimant() }]);
}

/**
 * Host activities of one host, routed to its agent's own task queue. Every one is bounded by the host's silence
 * (schedule-to-start: a task nobody polls for; heartbeat: a task whose agent died) as well as by its own length.
 */
export function hostCalls(hostId: string, timeouts: HostTimeouts): HostCalls {
  const taskQueue = hostTaskQueue(hostId);
  // Milliseconds: the SDK's Duration is a number of ms or a fixed string form.
  const silence = (seconds: number) => Math.min(seconds, timeouts.deadAfterSeconds) * 1000;
  const scheduleToStartTimeout = timeouts.deadAfterSeconds * 1000;
  return {
    /** The agent's hello: fails fast when no agent polls the queue, instead of waiting for a dead host. */
    hello: hostCallGroup('hello', {
      taskQueue,
      scheduleToStartTimeout: `${timeouts.agentStartSeconds} seconds`,
      startToCloseTimeout: '1 minute',
      retry: { maximumAttempts: 1 },
    }),
    /** Configure and start Postgres, backups: idempotent, heartbeat while they wait. */
    setup: hostCallGroup('setup', {
      taskQueue,
      scheduleToStartTimeout,
      // Base backups copy the data set: as long as a bulk step that moves it, and never under 2 hours.
      startToCloseTimeout: Math.max(2 * 3600, timeouts.bulkSeconds) * 1000,
      heartbeatTimeout: silence(120),
      retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', maximumAttempts: 10, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
    /**
     * The resumable load: a missed heartbeat means the agent died; the retry resumes from the database's own
     * record of finished chunks, so retries are cheap and many are allowed.
     */
    load: hostCallGroup('load', {
      taskQueue,
      scheduleToStartTimeout,
      startToCloseTimeout: `${timeouts.loadHours} hours`,
      heartbeatTimeout: silence(30),
      retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', maximumAttempts: 30, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
    /**
     * Measurements: one attempt each. The workflow retries them itself so that a failed attempt is recorded in
     * the result, not silently replaced (and never averaged in).
     */
    measure: hostCallGroup('measure', {
      taskQueue,
      scheduleToStartTimeout,
      startToCloseTimeout: `${timeouts.measureSeconds} seconds`,
      heartbeatTimeout: silence(60),
      retry: { maximumAttempts: 1 },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
    /**
     * Bulk steps (a restore's fetch): one attempt each like the measurements, recorded and retried by the workflow;
     * their bound grows with the bytes they move.
     */
    bulk: hostCallGroup('bulk', {
      taskQueue,
      scheduleToStartTimeout,
      startToCloseTimeout: `${timeouts.bulkSeconds} seconds`,
      heartbeatTimeout: silence(60),
      retry: { maximumAttempts: 1 },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
  };
}
