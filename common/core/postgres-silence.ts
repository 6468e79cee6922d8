/**
 * A host's Postgres that stopped answering while a host activity works on it (every process SIGSTOPped, a wedged
 * server): how long the activity's watchdog waits, when it calls the server dead, and what the failure says.
 * Pure and workflow-safe; the watchdog itself is activities/host/watchdog.ts, its probe lib/postgres-probe.ts.
 */

/** What one probe of the server got: any reply (an error the server sent counts), a refused connection, nothing. */
export type ProbeOutcome = 'reply' | 'refused' | 'no reply';

export interface SilenceWatch {
  /** No reply for this long and the server is dead: the activity fails. */
  limitMs: number;
  /** How often the watchdog looks (and, while the server is silent, heartbeats). */
  probeEveryMs: number;
}

/** The watchdog never looks more often than this (a probe is a query) nor less often (it heartbeats while waiting). */
const MIN_PROBE_MS = 500;
const MAX_PROBE_MS = 5_000;
/** Probes per limit: the silence is measured to a tenth of it. */
const PROBES_PER_LIMIT = 10;

/**
 * The watch of an activity, from its heartbeat timeout; null for one without (it is not watched). The limit is
 * that timeout: it is how long the lab lets the agent of this step go silent before it calls the host dead (at
 * most host.deadAfterSeconds, workflows/proxies.ts), and a Postgres silent for as long is dead for the same reason.
 * It is no new number to tune, and it stays above the stall a TPS run records and measures again (a server
 * stopped for a while and continued: no transaction for five seconds or more, well under every step's timeout).
 */
export function silenceWatch(heartbeatTimeoutMs: number | undefined): SilenceWatch | null {
  if (!heartbeatTimeoutMs || !Number.isFinite(heartbeatTimeoutMs) || heartbeatTimeoutMs <= 0) return null;
  const probeEveryMs = Math.min(MAX_PROBE_MS, Math.max(MIN_PROBE_MS, Math.round(heartbeatTimeoutMs / PROBES_PER_LIMIT)));
  return { limitMs: heartbeatTimeoutMs, probeEveryMs };
}

/**
 * When the server was last heard from. A refused connection counts as heard: a server that is not running answers
 * at once, and the activity's own calls fail on it with their own reason (a restart, a crash); only a server that
 * takes connections and queries and never answers is silent.
 */
export class SilenceClock {
  private lastHeardMs: number;
  constructor(startMs: number) {
    this.lastHeardMs = startMs;
  }
  record(outcome: ProbeOutcome, atMs: number): void {
    if (outcome !== 'no reply') this.lastHeardMs = Math.max(this.lastHeardMs, atMs);
  }
  silentMs(nowMs: number): number {
    return Math.max(0, nowMs - this.lastHeardMs);
  }
}

/**
 * What a silence means: `fine` (heard within a probe's period), `waiting` (a probe went unanswered: the watchdog
 * heartbeats, so the activity is not taken for a dead agent while it waits), `dead` (silent for the whole limit).
 */
export function silenceVerdict(silentMs: number, watch: SilenceWatch): 'fine' | 'waiting' | 'dead' {
  if (silentMs >= watch.limitMs) return 'dead';
  return silentMs > watch.probeEveryMs ? 'waiting' : 'fine';
}

/** A process of the host's Postgres as /proc shows it: its state letter (R, S, D, T, t, Z, ...). */
export interface PostgresProcess {
  pid: number;
  state: string;
}

/**
 * What the host's Postgres processes say about the silence: all or some stopped (T: SIGSTOP, or t: a debugger),
 * or none (then the server hangs inside: locks, I/O), or no postmaster at all.
 */
export function describeProcesses(processes: PostgresProcess[] | null): string {
  if (processes === null) return 'no postmaster found (postmaster.pid missing or not running)';
  const total = processes.length;
  const stopped = processes.filter((p) => p.state === 'T' || p.state === 't').length;
  const s = (n: number) => (n === 1 ? '' : 'es');
  if (stopped > 0) return `${stopped} of its ${total} process${s(total)} stopped (state T: SIGSTOP or a debugger)`;
  const counts = new Map<string, number>();
  for (const p of processes) counts.set(p.state, (counts.get(p.state) ?? 0) + 1);
  const states = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([state, n]) => `${state} ${n}`).join(', ');
  return `none of its ${total} process${s(total)} stopped (states ${states}): the server hangs inside (locks, I/O, memory)`;
}

/**
 * The failure's message: the host, that PostgreSQL stopped answering, for how long, in which step, what its
 * processes say, and why it is not retried.
 */
export function notAnsweringMessage(f: { hostId: string; step: string; silentMs: number; limitMs: number; processes: string }): string {
  const seconds = (ms: number) => Math.floor(ms / 1000);
  return (
    `host ${f.hostId}: PostgreSQL stopped answering (no reply for ${seconds(f.silentMs)} s) during step ${f.step}; ${f.processes}; ` +
    `not retried: a server silent for the step's bound (${seconds(f.limitMs)} s, at most host.deadAfterSeconds) would keep a retry on this host waiting as long`
  );
}
