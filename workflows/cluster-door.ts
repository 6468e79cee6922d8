/**
 * The cluster's door and its names. Only experimentWorkflow starts clusters, after validating the spec and running
 * its preflight, and a client cannot forge a parent: a run without one is refused, and with one it must be the run it
 * names, under the workflow id and host id the experiment derives. The spec must still parse again unchanged (defence
 * in depth). The preflight is not run again here: it would add a command to every cluster (replay), and the parent ran it.
 */
import { z } from 'zod';
import { type SpecProblem } from '../common/core/errors';
import { hostIdFor } from '../common/core/ids';
import { InvalidSpecError, type ExperimentSpec } from '../common/input/spec';
import { revalidateSpec } from '../common/input/resolve';
import { checkedWorkflowId, parseAtDoor, refuseAtDoor, underField, type DoorInfo } from './doors';

export interface ClusterInput {
  runId: string;
  spec: ExperimentSpec;
  className: string;
  index: number;
  hostId: string;
}

/** The workflow id of cluster `index` of a class within a run. */
export function clusterWorkflowId(runId: string, className: string, index: number): string {
  return `${runId}/${className}-${index}`;
}

/** The fields a cluster's input has; the spec is checked by revalidateSpec. */
const ClusterInputShape = z
  .object({ runId: z.string(), className: z.string(), index: z.number().int().min(0), hostId: z.string(), spec: z.unknown() })
  .strict();

/** A cluster's input as its door accepts it, or the run refused with every problem named. */
export function clusterInputAtDoor(input: unknown, info: DoorInfo): ClusterInput {
  const subject = 'clusterWorkflow start';
  checkedWorkflowId(info);
  const parent = info.parent;
  if (!parent)
    refuseAtDoor(
      [{ path: 'parent', message: 'clusterWorkflow runs only as a child of experimentWorkflow, which validates the spec and runs its preflight (this run has no parent); start experimentWorkflow with the spec instead' }],
      subject,
    );
  const shape = parseAtDoor(ClusterInputShape, input, null, subject);
  const problems: SpecProblem[] = [];
  let spec: ExperimentSpec | undefined;
  try {
    spec = revalidateSpec(shape.spec);
  } catch (err) {
    if (!(err instanceof InvalidSpecError)) throw err;
    problems.push(...err.problems.map((p) => underField(p, 'spec')));
  }
  if (shape.runId !== parent.workflowId)
    problems.push({ path: 'runId', message: `${JSON.stringify(shape.runId)} is not the run that started this cluster (${JSON.stringify(parent.workflowId)}); the experiment passes its own workflow id` });
  const workflowId = clusterWorkflowId(shape.runId, shape.className, shape.index);
  if (info.workflowId !== workflowId)
    problems.push({ path: 'workflowId', message: `${JSON.stringify(info.workflowId)} is not this cluster's (${JSON.stringify(workflowId)}); the experiment names its clusters <run>/<class>-<index>` });
  // Of either scheme (workflows/names.ts): a parent that started before collision-proof names passes the old one.
  const hostId = hostIdFor(shape.runId, shape.className, shape.index);
  if (shape.hostId !== hostId && shape.hostId !== hostIdFor(shape.runId, shape.className, shape.index, 'fnv32'))
    problems.push({ path: 'hostId', message: `${JSON.stringify(shape.hostId)} is not this cluster's host (${JSON.stringify(hostId)}); the experiment derives it from the run, the class and the index` });
  if (spec && !Object.prototype.hasOwnProperty.call(spec.storageClasses, shape.className))
    problems.push({ path: 'className', message: `${JSON.stringify(shape.className)} is not a storage class of the spec; use one of ${Object.keys(spec.storageClasses).join(', ')}` });
  if (spec && shape.index >= spec.clustersPerClass)
    problems.push({ path: 'index', message: `${shape.index} is beyond the spec's ${spec.clustersPerClass} clusters per class; use 0 to ${spec.clustersPerClass - 1}` });
  if (problems.length || !spec) refuseAtDoor(problems, subject);
  return { ...shape, spec };
}
