/** What every host activity gets from its agent: the host it runs on and the OS users it runs tools as. */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { describeClaimant, ownedBy, ownerRefusal, type Claimant } from '../../common/core/claims';
import { FAILURE_TYPES, formatSpecProblems, type SpecProblem } from '../../common/core/errors';
import { ownedByAnotherRun } from '../../lib/claims';
import { chownLab } from '../../lib/lab-fs';
import type { HostConfig } from '../../common/core/hosts';
import type { OsUser } from '../../lib/postgres-binaries';
import type { IoCap, Prepared } from '../../lib/io-cap';
import type { MemoryLimit } from '../../lib/memory-limit';
import type { TestSeams } from '../../common/core/test-seams';

export interface HostDeps {
  config: HostConfig;
  /** Postgres runs as this user when the agent is root; null when the agent itself may run it. */
  osUser: OsUser | null;
  /** The spec's workload (pgbench with its script) runs as this unprivileged user, as the workload role; null: as the agent's. */
  clientUser: OsUser | null;
  /**
   * The host's emulated I/O cap: lifted for unmeasured preparation, applied before the measured part
   * (IoCap.withoutCap); a no-op on hosts without an emulated cap. The agent builds it from its config.
   */
  ioCap: IoCap;
  /**
   * The host's memory limit: lifted for a data set's publish and restore (prepareDataSet), set again after; absent where the
   * agent does not own one (tests, tools), and a no-op on a host without a memory cgroup.
   */
  memoryLimit?: MemoryLimit;
  /** A test's switches (common/core/test-seams.ts); absent in production. */
  testSeams?: TestSeams;
}

/**
 * Runs a data set's publish or restore (and its checks), which nothing measures and which end cold (startCold): with
 * the I/O cap lifted (lib/io-cap.ts) and, inside that, the memory limit (lib/memory-limit.ts), set again first, so
 * that the kernel's reclaim down to it still writes uncapped.
 */
export function prepareDataSet<T>(deps: Pick<HostDeps, 'ioCap' | 'memoryLimit'>, prepare: () => Promise<T>): Promise<Prepared<T>> {
  const limit = deps.memoryLimit;
  return deps.ioCap.prepare(limit ? () => limit.withoutLimit(prepare) : prepare);
}

/** Every host activity names its host; a task routed to the wrong agent must never touch this host's data. */
export interface HostInput {
  hostId: string;
  /** The workflow that asks (workflowInfo(); workflows/proxies.ts adds it to every host call): it must own the host. */
  owner?: Claimant;
}

/**
 * Refuses, non-retryably and naming both runs, an activity of any workflow but the host's owner: the owner record's
 * workflow and execution must be the ones the input names, and the workflow the server says scheduled the task must
 * be that workflow (a host of another run reached through a shared task queue is never touched). A host made before
 * owner records serves its run's workflow and that workflow's children.
 */
export function assertOwner(deps: Pick<HostDeps, 'config'>, input: unknown, activity: string): void {
  const owner = (input as { owner?: Claimant } | null)?.owner;
  const info = Context.current().info;
  const caller = info.workflowExecution?.workflowId;
  const record = deps.config.owner;
  if (record) {
    if (owner && ownedBy(record, owner) && (!caller || caller === record.workflowId)) return;
    const asking = owner ?? { workflowId: caller ?? '?', execution: '(none named)' };
    throw ownedByAnotherRun(ownerRefusal(`host ${deps.config.hostId}`, record, asking, `run ${activity} on`));
  }
  const runId = deps.config.runId;
  if (caller && caller !== runId && !caller.startsWith(`${runId}/`))
    throw ownedByAnotherRun(
      `host ${deps.config.hostId} belongs to run ${JSON.stringify(runId)} (made before owner records); ${owner ? describeClaimant(owner) : `workflow ${JSON.stringify(caller)}`} may not run ${activity} on it: refused, nothing of it touched`,
    );
}

export function assertHost(deps: HostDeps, input: HostInput): void {
  if (input.hostId !== deps.config.hostId)
    throw ApplicationFailure.nonRetryable(
      `activity for host ${input.hostId} reached the agent of host ${deps.config.hostId}`,
      FAILURE_TYPES.hostGone,
    );
}

/**
 * Fails the activity, non-retryable, naming every problem of its input at once: a value the workflow's door should
 * have refused reached the host, and the host refuses it again before it writes or runs anything.
 */
export function refuseInput(deps: HostDeps, problems: SpecProblem[]): void {
  if (problems.length)
    throw ApplicationFailure.nonRetryable(formatSpecProblems(problems, `input for host ${deps.config.hostId}`), FAILURE_TYPES.invalidSpec);
}

/** Options that run a Postgres server binary as the Postgres OS user. */
export function asPostgresUser(deps: HostDeps): { uid?: number; gid?: number } {
  return deps.osUser ? { uid: deps.osUser.uid, gid: deps.osUser.gid } : {};
}

/** Options that run a client tool as the unprivileged client user (never root: a workload script runs in it). */
export function asClientUser(deps: HostDeps): { uid?: number; gid?: number } {
  return deps.clientUser ? { uid: deps.clientUser.uid, gid: deps.clientUser.gid } : {};
}

/** Makes a folder the client user writes in (pgbench's logs) its own. */
export function ownByClient(deps: HostDeps, dir: string): void {
  if (deps.clientUser) chownLab(dir, deps.clientUser);
}

/**
 * Closes the host's socket folder to every OS user but the Postgres user (its owner) and the client tools' user (its
 * group, mode 0750); without root there is no client user and only the agent's own user may enter (0700). Peer
 * authentication then decides which role each of them may connect as (pg_ident.conf).
 */
export function closeSocketDir(deps: HostDeps): void {
  const mode = deps.clientUser ? 0o750 : 0o700;
  const self = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  chownLab(deps.config.socketDir, deps.osUser ? { uid: deps.osUser.uid, gid: deps.clientUser?.gid ?? deps.osUser.gid } : self, mode);
}
