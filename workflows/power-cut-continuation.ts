/**
 * The power-cut drill between executions: what it carries when it continues as new (every ROUNDS_PER_EXECUTION
 * rounds, so its history stays bounded), and the door that checks a carried continuation: only in a run the lab
 * continued (continuationAtDoor), and only hosts this run's ids name, on loopback, of the drill's provider, with rounds
 * that all passed, numbered in order.
 */
import { z } from 'zod';
import type { HostRecord } from '../common/core/hosts';
import { hostTaskQueue } from '../common/core/names';
import { nameSchemeOf } from '../common/core/ids';
import type { DrillInput, PowerCutDrillSpec } from '../common/input/drill-spec';
import type { PowerCutClusterCheck, PowerCutRound } from '../common/results/drill-result';
import { continuationAtDoor } from './doors';
import { ROUNDS_PER_EXECUTION, hostRecordSchema } from './failover-continuation';

/** Where a power-cut drill stands between executions: its primary, the check before the first cut, the rounds so far. */
export interface PowerCutContinuation {
  startedAt: string;
  postgresVersion: string | null;
  records: { n1: HostRecord };
  baseline: PowerCutClusterCheck | null;
  rounds: PowerCutRound[];
  nextRound: number;
}

const Text = z.string().max(2_000).regex(/^[^\u0000-\u0008\u000b-\u001f\u007f]*$/, { error: 'must not hold control characters' });

/** The continuation's shape and its fields against each other and the spec (null when the input itself is invalid). */
export function powerCutContinuationSchema(runId: string, spec: PowerCutDrillSpec | null) {
  const count = z.number().int().nonnegative();
  return z
    .object({
      startedAt: z.iso.datetime(),
      postgresVersion: Text.nullable(),
      records: z.object({ n1: hostRecordSchema(runId, 'n1') }).strict(),
      // Figures for the report only: nothing of them reaches a host or names a resource.
      baseline: z.looseObject({ amcheck: z.looseObject({ ok: z.boolean(), detail: Text }) }).nullable(),
      rounds: z.array(z.looseObject({ round: z.number().int().min(1), ok: z.literal(true), lostCommits: count })).max(50),
      nextRound: z.number().int().min(ROUNDS_PER_EXECUTION + 1),
    })
    .strict()
    .superRefine((c, ctx) => {
      const add = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
      const r = c.records.n1;
      if (hostTaskQueue(r.hostId) !== r.taskQueue) add(['records', 'n1', 'taskQueue'], "must be the host's own task queue (host:<hostId>)");
      if ((c.nextRound - 1) % ROUNDS_PER_EXECUTION !== 0 || c.rounds.length !== c.nextRound - 1 || c.rounds.some((x, i) => x.round !== i + 1))
        add(['nextRound'], `a run continues after every ${ROUNDS_PER_EXECUTION} rounds, carrying each of them in order`);
      if (!spec) return;
      if (r.provider !== spec.provider) add(['records', 'n1', 'provider'], `must be the drill's provider, ${spec.provider}`);
      if (r.postgres.host !== '127.0.0.1') add(['records', 'n1', 'postgres', 'host'], 'local hosts listen on 127.0.0.1 only');
      if (r.kind !== spec.storageClass.kind) add(['records', 'n1', 'kind'], `must be the drill's storage kind, ${spec.storageClass.kind}`);
      if (c.nextRound > spec.rounds) add(['nextRound'], `beyond the drill's ${spec.rounds} rounds`);
    });
}

/** The continuation a run carries, checked at the door; undefined when it was started with its input only. */
export function powerCutContinuedAtDoor(
  runId: string,
  input: DrillInput,
  raw: unknown,
  resolve: (input: unknown) => PowerCutDrillSpec,
): PowerCutContinuation | undefined {
  if (raw == null) return undefined;
  let spec: PowerCutDrillSpec | null = null;
  try {
    spec = resolve(input ?? {});
  } catch {
    // An invalid input: acceptInput refuses the run, naming every problem.
  }
  return continuationAtDoor(powerCutContinuationSchema(runId, spec) as unknown as z.ZodType<PowerCutContinuation>, raw, 'continued');
}

/** What an execution carries to the next, before round `nextRound`. */
export function powerCutContinuation(
  record: HostRecord,
  result: { startedAt: string; postgresVersion: string | null; baseline: PowerCutClusterCheck | null; rounds: PowerCutRound[] },
  nextRound: number,
): PowerCutContinuation {
  return { startedAt: result.startedAt, postgresVersion: result.postgresVersion, records: { n1: record }, baseline: result.baseline, rounds: result.rounds, nextRound };
}

/** The naming scheme of a continued run's hosts (its first execution chose it). */
export function continuedScheme(c: PowerCutContinuation) {
  return nameSchemeOf(c.records.n1.hostId);
}
