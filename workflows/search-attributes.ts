/** The lab's search attributes as typed keys, so runs can be listed by experiment, preset, classes and status. */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributeUpdatePair } from '@temporalio/common';
import { SEARCH_ATTRIBUTES } from '../common/names';

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
