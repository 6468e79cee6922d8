/**
 * Progress state of a workflow: fed by phase changes and by activities' progress signals, read by the progress
 * query, shown in the UI as "current details", and passed up to a parent workflow when there is one.
 */
import { getExternalWorkflowHandle, setCurrentDetails, setHandler } from '@temporalio/workflow';
import { phaseProgressSignal, progressQuery, type PhaseProgress, type RunProgress } from '../common/messages';
import { progressMarkdown, runPercent } from '../common/progress';

export class ProgressBoard {
  private readonly clusters: Record<string, PhaseProgress> = {};
  private phase = 'starting';
  private readonly failures: string[] = [];
  private percentOverride: number | undefined;

  /**
   * @param totalClusters clusters the run will have, so the percentage counts the ones not started yet
   * @param parentWorkflowId where to pass progress up to (a child cluster reports to its experiment)
   */
  constructor(
    private readonly title: string,
    private readonly runId: string,
    private totalClusters: number,
    private readonly parentWorkflowId?: string,
  ) {
    setHandler(phaseProgressSignal, (p) => this.onSignal(p));
    setHandler(progressQuery, () => this.snapshot());
  }

  setTotal(total: number): void {
    this.totalClusters = total;
  }

  /** The run's own phase ("validating", "running clusters", "writing results", ...). */
  setPhase(phase: string): void {
    this.phase = phase;
    this.publish();
  }

  /** The one host of this workflow (a cluster's, a drill step's) moved on: the workflow's phase follows it. */
  step(hostId: string, phase: string): void {
    this.phase = phase;
    this.enter(hostId, phase);
  }

  /** A cluster entered a phase; its percentage starts again at 0. */
  enter(hostId: string, phase: string): void {
    this.update({ hostId, phase, percent: 0, at: new Date().toISOString() });
  }

  /** The run's percentage when its own steps measure it better than its hosts' phases (a drill's). */
  setPercent(percent: number): void {
    this.percentOverride = Math.round(percent * 10) / 10;
    this.publish();
  }

  fail(message: string): void {
    this.failures.push(message);
    this.publish();
  }

  /** Progress from an activity, or from a child passing its own up. */
  private onSignal(p: PhaseProgress): void {
    const current = this.clusters[p.hostId];
    // A late signal from a phase the cluster already left must not move it back; a child's own phase changes
    // (percent 0) always count.
    if (current && current.phase !== p.phase && p.percent !== 0) return;
    this.update(p);
  }

  private update(p: PhaseProgress): void {
    this.clusters[p.hostId] = p;
    this.publish();
    if (this.parentWorkflowId)
      getExternalWorkflowHandle(this.parentWorkflowId)
        .signal(phaseProgressSignal, p)
        .catch(() => undefined); // The parent may be gone (cancelled); progress is best effort.
  }

  snapshot(): RunProgress {
    const clusters = Object.values(this.clusters);
    const etas = clusters.map((c) => c.etaSeconds).filter((e): e is number => e !== undefined);
    return {
      runId: this.runId,
      phase: this.phase,
      percent: this.percentOverride ?? runPercent(clusters, this.totalClusters),
      etaSeconds: etas.length ? Math.max(...etas) : undefined,
      clusters: { ...this.clusters },
      failures: [...this.failures],
    };
  }

  private publish(): void {
    setCurrentDetails(progressMarkdown(this.title, this.snapshot()));
  }
}
