/** Signal, query and update definitions in one module; workflows and clients both import them from here. */
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** Where a cluster (or drill) is: the phase, how far, and the figures a person watches. */
export interface PhaseProgress {
  hostId: string;
  phase: string;
  /** 0-100 within the phase, when known. */
  percent?: number;
  etaSeconds?: number;
  /** Free-form figures: rows, MB, rows/s, latest TPS, ... */
  detail?: Record<string, number | string>;
  at: string;
}

/** The whole run: one entry per cluster, and an overall percentage. */
export interface RunProgress {
  runId: string;
  phase: string;
  percent: number;
  etaSeconds?: number;
  clusters: Record<string, PhaseProgress>;
  failures: string[];
}

/** Activities and children report progress to their workflow with this signal (throttled by the sender). */
export const phaseProgressSignal = defineSignal<[PhaseProgress]>('phaseProgress');

/** The run's progress; the CLI polls it and the UI shows it. */
export const progressQuery = defineQuery<RunProgress>('progress');
