/** The lab's search attributes as typed keys, so runs can be listed by experiment, preset, classes and status. */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';
import { SEARCH_ATTRIBUTES } from '../common/core/names';
import { activityCause, resolveOrFail } from './failures';

const keys = {
  experiment: defineSearchAttributeKey(SEARCH_ATTRIBUTES.experiment.name, SearchAttributeType.KEYWORD),
  preset: defineSearchAttributeKey(SEARCH_ATTRIBUTES.preset.name, SearchAttributeType.KEYWORD),
  storageClasses: defineSearchAttributeKey(SEARCH_ATTRIBUTES.storageClasses.name, SearchAttributeType.KEYWORD_LIST),
  status: defineSearchAttributeKey(SEARCH_ATTRIBUTES.status.name, SearchAttributeType.KEYWORD),
};

export interface LabSearchAttributes {
  experiment?: string;
  preset?: string;
  storageClasses?: string[];
  status?: string;
}

/** Update pairs for the attributes given (the others are left as they are). */
export function searchAttributes(values: LabSearchAttributes): SearchAttributeUpdatePair[] {
  const pairs: SearchAttributeUpdatePair[] = [];
  if (values.experiment !== undefined) pairs.push({ key: keys.experiment, value: values.experiment });
  if (values.preset !== undefined) pairs.push({ key: keys.preset, value: values.preset });
  if (values.storageClasses !== undefined) pairs.push({ key: keys.storageClasses, value: values.storageClasses });
  if (values.status !== undefined) pairs.push({ key: keys.status, value: values.status });
  return pairs;
}

/**
 * Validates a run's input: an invalid one marks the run "invalid" and fails it at once (non-retryable, every
 * problem named); a valid one marks it "running", with what it is, so runs can be listed by it.
 */
export function acceptInput<S>(
  resolve: (input: unknown) => S,
  input: unknown,
  describe: (spec: S) => Omit<LabSearchAttributes, 'status'>,
): S {
  let spec: S;
  try {
    spec = resolveOrFail(resolve, input);
  } catch (err) {
    upsertSearchAttributes(searchAttributes({ status: 'invalid' }));
    throw err;
  }
  upsertSearchAttributes(searchAttributes({ ...describe(spec), status: 'running' }));
  return spec;
}

/**
 * Awaits a preflight activity (the spec checked by the real tools, this environment against it): a failure marks
 * the run "invalid" and fails it with the activity's own failure, naming the field and the fix.
 */
export async function preflightOrFail<T>(preflight: Promise<T>): Promise<T> {
  try {
    return await preflight;
  } catch (err) {
    upsertSearchAttributes(searchAttributes({ status: 'invalid' }));
    throw activityCause(err);
  }
}

/** What a drill is, for the lab's search attributes. */
export function drillSearchAttributes(spec: { name: string; preset?: string; storageClass: { kind: string } }): Omit<LabSearchAttributes, 'status'> {
  return { experiment: spec.name, preset: spec.preset ?? 'custom', storageClasses: [spec.storageClass.kind] };
}
