/**
 * Is the host's Postgres answering? A probe on a connection of its own that never blocks its caller: the caller
 * starts a probe and reads the outcome when it comes; an unanswered probe stays in flight (a stopped server never
 * answers it) and the caller measures the silence meanwhile (common/core/postgres-silence.ts). One connection for the
 * whole watch, as the lab's superuser role (a reserved slot: never one the workload's clients need), `SELECT 1` on
 * it: no lock, no disk read, so only a server that does not run at all leaves it unanswered.
 */
import { DatabaseError, type Client } from 'pg';
import { listKernelDir, readKernelFile, readLabFile } from './lab-fs';
import path from 'node:path';
import type { HostConfig } from '../common/core/hosts';
import type { PostgresProcess, ProbeOutcome } from '../common/core/postgres-silence';
import { parsePidStatState } from './parsers/proc';
import { localClient } from './pg';

/**
 * The probe's application_name: not "storage-lab <something>", so a retry's cleanup of the lab's leftover backends
 * (activities/host/leftovers.ts) never ends the watch of the attempt that runs it.
 */
export const PROBE_APPLICATION_NAME = 'storage-lab-watchdog';

/** Errors of a connection the server refused: nothing listens (not running, or its socket is gone). */
const REFUSED = new Set(['ECONNREFUSED', 'ENOENT']);

/** What an error of the probe says: a message the server sent is a reply; a refused connection; else no reply. */
export function probeOutcomeOf(err: unknown): ProbeOutcome {
  if (err instanceof DatabaseError) return 'reply';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && REFUSED.has(code) ? 'refused' : 'no reply';
}

export class PostgresProbe {
  private client: Client | null = null;
  private inFlight = false;
  private closed = false;

  constructor(private readonly config: Pick<HostConfig, 'socketDir' | 'postgres'>) {}

  /** Starts a probe unless one is still in flight; `onOutcome` gets its outcome and when it came. Never throws. */
  start(onOutcome: (outcome: ProbeOutcome, atMs: number) => void): void {
    if (this.inFlight || this.closed) return;
    this.inFlight = true;
    void this.once().then((outcome) => {
      this.inFlight = false;
      if (!this.closed) onOutcome(outcome, Date.now());
    });
  }

  /** Ends the watch: the connection is destroyed at once (ending it politely would wait for a silent server). */
  close(): void {
    this.closed = true;
    this.drop();
  }

  private async once(): Promise<ProbeOutcome> {
    try {
      if (!this.client) {
        // The postgres database is always there, whatever the step does to the lab's (a restore, a drop).
        const client = localClient(this.config, { database: 'postgres', applicationName: PROBE_APPLICATION_NAME });
        client.on('error', () => undefined);
        this.client = client;
        await client.connect();
      }
      await this.client.query('SELECT 1');
      return 'reply';
    } catch (err) {
      // A connection that failed or was ended is made again by the next probe.
      this.drop();
      return probeOutcomeOf(err);
    }
  }

  private drop(): void {
    const client = this.client;
    this.client = null;
    (client as unknown as { connection?: { stream?: { destroy(): void } } } | null)?.connection?.stream?.destroy();
  }
}

/**
 * The host's Postgres processes (the postmaster from its pid file, and its children) with their states; null when
 * there is no postmaster. For the failure's message: a stopped server (SIGSTOP) reads differently from a hung one.
 */
export function postgresProcesses(dataDir: string): PostgresProcess[] | null {
  const postmaster = postmasterPid(dataDir);
  if (postmaster === null) return null;
  const found = processStates().filter((p) => p.pid === postmaster || p.ppid === postmaster);
  return found.some((p) => p.pid === postmaster) ? found.map(({ pid, state }) => ({ pid, state })) : null;
}

/** The postmaster's pid from its pid file in the data folder, or null. */
export function postmasterPid(dataDir: string): number | null {
  try {
    // PGDATA is the postgres user's: read through the file guard (no link followed), only its first bytes.
    const pid = Number((readLabFile(path.join(dataDir, 'postmaster.pid'), { maxBytes: 1024 }) ?? '').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Pids of the children of a process (a postmaster's backends and workers). */
export function childrenOf(parent: number): number[] {
  return processStates()
    .filter((p) => p.ppid === parent)
    .map((p) => p.pid);
}

/** Every process of the machine with its state and parent. */
function processStates(): (PostgresProcess & { ppid: number })[] {
  const found: (PostgresProcess & { ppid: number })[] = [];
  for (const entry of listKernelDir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      found.push({ pid: Number(entry), ...parsePidStatState(readKernelFile(`/proc/${entry}/stat`)) });
    } catch {
      // Exited while we looked.
    }
  }
  return found;
}
