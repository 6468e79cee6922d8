/**
 * Query definitions and the shapes of progress, in one module; workflows and clients both import them from here.
 * Progress is read on demand (queries, current details, pending activities' heartbeats), never streamed into a
 * workflow as signals: a workflow's history then stays bounded whatever the run's length.
 */
import { defineQuery } from '@temporalio/workflow';

/** One step a host entered, and when: a workflow's own record, so no step is lost between two polls. */
export interface StepEntry {
  step: string;
  at: string;
}

/**
 * Where a host (a cluster's, a drill's) is: the step of its plan it is in. The workflow records the steps; the
 * percentage, ETA and figures within a step come from its running activity's last heartbeat (an ActivityProgress), added by whoever reads it.
 */
export interface HostProgress {
  hostId: string;
  step: string;
  /** Every step entered, oldest first (absent in an activity's heartbeat). */
  steps?: StepEntry[];
  /** 0-100 within the step, when known. */
  percent?: number;
  /** Seconds left in the step, by the ETA rule (common/results/eta.ts); only when it covers all of it. */
  etaSeconds?: number;
  /** Free-form figures: rows, MB, rows/s, latest TPS, ... */
  detail?: Record<string, number | string>;
  at: string;
}

/**
 * A progress reading of the part of a step its activity is in (detail.step: "writing backlog", "draining"): `done` of
 * `total` units, `seconds` since its measure began.
 */
export interface StepMeasure {
  step: string;
  unit: 'bytes' | 'blocks' | 'chunks';
  seconds: number;
  done: number;
  total: number;
}

/** What a host activity heartbeats: its step's progress (the UI shows it on the pending activity). */
export type ActivityProgress = Omit<HostProgress, 'steps'> & {
  /**
   * The running part's progress as its ETA rule read it (common/results/eta.ts): exact where the details round it,
   * so a series of heartbeats can be replayed through the rule.
   */
  measure?: StepMeasure;
};

/** A child workflow of a run (a cluster, a drill, a nightly's experiment), as its parent knows it. */
export interface ChildProgress {
  workflowId: string;
  /** What it is: a host id for a cluster, "restore drill", ... */
  label: string;
  state: 'waiting' | 'running' | 'done' | 'failed';
}

/** A run as its own workflow knows it: its stage, its hosts' steps, its children, its failures. */
export interface RunProgress {
  runId: string;
  /** What the run as a whole is doing ("validating", "running clusters", a drill's step, ...). */
  stage: string;
  /** The workflow's own estimate (its steps, or its children finished); readers refine it from children. */
  percent: number;
  /** Hosts this workflow drives itself (a cluster's one host, a drill's hosts). */
  clusters: Record<string, HostProgress>;
  /** Child workflows, whose own progress query tells more. */
  children: ChildProgress[];
  failures: string[];
}

/** The run's progress; the CLI polls it (and its children's) and the UI shows it as current details. */
export const progressQuery = defineQuery<RunProgress>('progress');
