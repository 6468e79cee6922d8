/**
 * The watchdog beside every host activity: while the activity works on its host's Postgres (a load, a TPS run, a
 * phase, a drill's step), a probe that cannot hang it (lib/postgres-probe.ts) asks the server whether it
 * answers. A server that takes connections and queries and answers none of them (every process SIGSTOPped, a wedged
 * server) blocks whatever the activity awaits on it: a sampler's closing query, a retry's cleanup, the load's
 * progress. Without the watchdog the activity then only stopped heartbeating, and its failure read "activity
 * Heartbeat timeout". With it, the activity fails, within the step's own heartbeat timeout, with a failure that
 * names the host, the step, that PostgreSQL stopped answering and for how long (common/core/postgres-silence.ts).
 * On a modelled volume it watches the volume's server too: with the server gone every I/O of the host fails, and
 * the activity fails at the next probe with a failure that says so and shows the end of the server's log.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FAILURE_TYPES } from '../../common/core/errors';
import { PHASES } from '../../common/phases/registry';
import { describeProcesses, notAnsweringMessage, silenceVerdict, silenceWatch, SilenceClock } from '../../common/core/postgres-silence';
import { PostgresProbe, postgresProcesses } from '../../lib/postgres-probe';
import { tail, volumeServerPid } from '../../lib/volume';
import { lastReportedPercent, type ProgressUpdate } from '../progress';
import type { HostDeps } from './deps';

/**
 * The step an activity works in, as the cluster's and drills' progress names it: its input's label (pgbench's
 * "warmup", "tps"), else by activity, else the activity's own name.
 */
const STEPS: Record<string, string> = {
  configurePostgres: 'configure',
  loadData: 'load',
  verifyAccounts: 'verify',
  // Each phase's activity works in the phase's own step.
  ...Object.fromEntries(PHASES.map((p) => [p.activity, p.name])),
};

export function stepOf(activity: string, input: unknown): string {
  const label = (input as { label?: unknown } | null)?.label;
  if (typeof label === 'string' && label) return label;
  return Object.hasOwn(STEPS, activity) ? STEPS[activity] : activity;
}

/**
 * Runs an activity under the watchdog. An activity without a heartbeat timeout (the agent's hello) is not watched.
 * The failure is non-retryable: a server silent for the whole step's bound on this host would keep a retry there
 * waiting as long, and the run must end within the host's bound; a server stopped for a while and continued is the
 * TPS run's stall, recorded and measured again, and stays well under this limit.
 */
export async function watchPostgres<T>(deps: HostDeps, step: string, run: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const watch = silenceWatch(ctx.info.heartbeatTimeoutMs);
  if (!watch) return run();
  const { hostId, dataDir } = deps.config;
  const probe = new PostgresProbe(deps.config);
  const clock = new SilenceClock(Date.now());
  let fail: (err: Error) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  let done = false;
  const look = () => {
    const volume = deps.config.volume;
    if (volume && !done && volumeServerPid(volume) === null) {
      done = true;
      clearInterval(timer);
      probe.close();
      fail(ApplicationFailure.nonRetryable(volumeServerGoneMessage(hostId, step, volume.log), FAILURE_TYPES.hostGone));
      return;
    }
    probe.start((outcome, atMs) => clock.record(outcome, atMs));
    const silentMs = clock.silentMs(Date.now());
    const verdict = silenceVerdict(silentMs, watch);
    if (verdict === 'waiting') {
      // The activity may be blocked on the server and heartbeat no more: the watchdog says it still lives, and why it waits.
      const update = waitingUpdate(lastReportedPercent(ctx), silentMs);
      ctx.heartbeat({ hostId, step, ...update, at: new Date().toISOString() });
    } else if (verdict === 'dead') {
      // A reply that came while this process was busy is read before the next check: one turn of the event loop
      // (its I/O) first, so a slow agent is never taken for a silent server.
      setImmediate(() => {
        const silent = clock.silentMs(Date.now());
        if (done || silenceVerdict(silent, watch) !== 'dead') return;
        done = true;
        clearInterval(timer);
        probe.close();
        const processes = describeProcesses(postgresProcesses(dataDir));
        fail(ApplicationFailure.nonRetryable(notAnsweringMessage({ hostId, step, silentMs: silent, limitMs: watch.limitMs, processes }), FAILURE_TYPES.postgresNotAnswering));
      });
    }
  };
  const timer = setInterval(look, watch.probeEveryMs);
  look();
  try {
    return await Promise.race([run(), failed]);
  } finally {
    done = true;
    clearInterval(timer);
    probe.close();
  }
}

/** The watchdog's heartbeat while the server is silent: the step's last percent kept, no ETA (nothing advances). */
export function waitingUpdate(percent: number | undefined, silentMs: number): ProgressUpdate {
  return { ...(percent !== undefined ? { percent } : {}), detail: { step: 'waiting for PostgreSQL', noReplySeconds: Math.floor(silentMs / 1000) } };
}

/** Why an activity failed when its host's volume server was gone. */
export function volumeServerGoneMessage(hostId: string, step: string, log: string): string {
  return `host ${hostId}: its modelled volume's server is not running (during ${step}), so every I/O of the host fails; the end of ${log}:\n${tail(log, 10)}`;
}

/** The same host activities, each under the watchdog. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- activities take any arguments
export function watched<T extends Record<string, (input: any) => Promise<unknown>>>(deps: HostDeps, activities: T): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [name, (input: unknown) => watchPostgres(deps, stepOf(name, input), () => fn(input))]),
  ) as T;
}
