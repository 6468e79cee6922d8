/** What every host activity gets from its agent: the host it runs on and the OS users it runs tools as. */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE_TYPES } from '../../common/errors';
import { chownLab } from '../../infra/lab-fs';
import type { HostConfig } from '../../infra/providers/host-provider';
import type { OsUser } from '../../infra/postgres-binaries';

export interface HostDeps {
  config: HostConfig;
  /** Postgres runs as this user when the agent is root; null when the agent itself may run it. */
  osUser: OsUser | null;
  /** Client tools (pgbench, psql, pg_recvlogical, pg_amcheck) run as this unprivileged user; null: as the agent's. */
  clientUser: OsUser | null;
}

/** Every host activity names its host; a task routed to the wrong agent must never touch this host's data. */
export interface HostInput {
  hostId: string;
}

export function assertHost(deps: HostDeps, input: HostInput): void {
  if (input.hostId !== deps.config.hostId)
    throw ApplicationFailure.nonRetryable(
      `activity for host ${input.hostId} reached the agent of host ${deps.config.hostId}`,
      FAILURE_TYPES.hostGone,
    );
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
