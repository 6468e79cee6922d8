/**
 * Every registered workflow type is a door: anyone with start rights on the namespace can start any of them, with any
 * workflow id and any arguments (the server checks neither). These checks run first in each workflow, before its
 * first command, so a refusal is one failed workflow task and a valid run's command sequence is unchanged:
 * its own workflow id (it becomes folder names), the arguments only the lab passes (a continuation, a child's
 * parent), and inputs that have no spec resolver of their own. Every refusal is InvalidSpecError, non-retryable,
 * each problem "<field>: <what is wrong>; <fix>".
 */
import { ApplicationFailure, workflowInfo, type WorkflowInfo } from '@temporalio/workflow';
import type { z } from 'zod';
import { FAILURE_TYPES, formatSpecProblems, type SpecProblem } from '../common/core/errors';
import { CHILD_ID_ROOM, MAX_ID_LENGTH, workflowIdProblem } from '../common/core/ids';
import { toProblem } from '../common/input/spec';

/** What the doors read of a run's own info (a parameter, so unit tests can pass their own). */
export type DoorInfo = Pick<WorkflowInfo, 'workflowId' | 'workflowType' | 'parent' | 'continuedFromExecutionRunId' | 'attempt' | 'cronSchedule'>;

/** Fails the run at its door: InvalidSpecError, non-retryable, every problem named. */
export function refuseAtDoor(problems: SpecProblem[], subject: string): never {
  throw ApplicationFailure.create({ message: formatSpecProblems(problems, subject), type: FAILURE_TYPES.invalidSpec, nonRetryable: true, details: problems });
}

/** The problem of a run's own workflow id, or null. A run without a parent leaves room for its children's ids. */
export function workflowIdDoorProblem(info: DoorInfo): SpecProblem | null {
  const problem = workflowIdProblem(info.workflowId, info.parent ? MAX_ID_LENGTH : MAX_ID_LENGTH - CHILD_ID_ROOM);
  return problem ? { path: 'workflowId', message: problem } : null;
}

/** The run's own workflow id, refused at the door when it cannot be a run folder (`.`, `..`, `a/../b`, `-rf`, `_history`). */
export function checkedWorkflowId(info: DoorInfo = workflowInfo()): string {
  const problem = workflowIdDoorProblem(info);
  if (problem) refuseAtDoor([problem], `${info.workflowType} start`);
  return info.workflowId;
}

/**
 * Why a run may not take an argument meant for continue-as-new, or null when it may: only the lab's own
 * continueAsNew starts a run with one. A client cannot set continuedFromExecutionRunId, but a retry (attempt > 1)
 * and a cron run carry it with the client's own arguments, so those are refused too.
 */
export function continuationProblem(info: DoorInfo, field: string): SpecProblem | null {
  const fix = 'start the run with its input only (one object); the lab passes this argument to itself when a run continues as new';
  if (!info.continuedFromExecutionRunId) return { path: field, message: `a new run was started with it; ${fix}` };
  if (info.attempt !== 1) return { path: field, message: `attempt ${info.attempt} of a run retried by a client's retry policy carries it; ${fix}` };
  if (info.cronSchedule) return { path: field, message: `a cron run (${info.cronSchedule}) carries it; ${fix}` };
  return null;
}

/** Parses a value with a zod schema at the door; every problem is named under `field` (none: the value itself). */
export function parseAtDoor<T>(schema: z.ZodType<T>, value: unknown, field: string | null, subject: string): T {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  refuseAtDoor(parsed.error.issues.map(toProblem).map((p) => underField(p, field)), subject);
}

/** A problem of a part of the input, named by its full path. */
export function underField(p: SpecProblem, field: string | null): SpecProblem {
  return { path: [field, p.path].filter(Boolean).join('.'), message: p.message };
}

/**
 * An argument meant only for continue-as-new, or undefined when none was passed. Refused unless the lab's own
 * continueAsNew started this run; validated with its schema anyway (a run continued by an older code version must
 * still parse).
 */
export function continuationAtDoor<T>(schema: z.ZodType<T>, value: unknown, field: string, info: DoorInfo = workflowInfo()): T | undefined {
  if (value === undefined || value === null) return undefined;
  const problem = continuationProblem(info, field);
  if (problem) refuseAtDoor([problem], `${info.workflowType} start`);
  return parseAtDoor(schema, value, field, `${info.workflowType} continuation`);
}
