/**
 * Progress state of a workflow, read on demand: the progress query returns it and the UI shows it as "current
 * details". It records every phase each host entered and the state of each child workflow. No signals: neither
 * activities nor children report into it, so a workflow's history does not grow with the run's length; a reader
 * that wants the figures of a running phase asks the children (their own query) and the server (pending
 * activities' heartbeats).
 */
import { setCurrentDetails, setHandler } from '@temporalio/workflow';
import { progressQuery, type ChildProgress, type PhaseProgress, type RunProgress } from '../common/core/messages';
import { childrenPercent, clusterPercent, progressMarkdown } from '../common/results/progress';

export class ProgressBoard {
  private readonly hosts: Record<string, PhaseProgress> = {};
  private readonly children: ChildProgress[] = [];
  private phase = 'starting';
  private readonly failures: string[] = [];
  private percentOverride: number | undefined;

  constructor(
    private readonly title: string,
    private readonly runId: string,
  ) {
    setHandler(progressQuery, () => this.snapshot());
  }

  /** The run's own phase ("validating", "running clusters", "writing results", ...). */
  setPhase(phase: string): void {
    this.phase = phase;
    this.publish();
  }

  /** A host of this workflow (a cluster's, a drill step's) entered a phase; the workflow's phase follows it. */
  step(hostId: string, phase: string): void {
    this.phase = phase;
    const at = new Date().toISOString();
    const phases = [...(this.hosts[hostId]?.phases ?? []), { phase, at }];
    this.hosts[hostId] = { hostId, phase, phases, at };
    this.publish();
  }

  /** A child workflow this run waits for (or its new state). */
  child(workflowId: string, label: string, state: ChildProgress['state']): void {
    const existing = this.children.find((c) => c.workflowId === workflowId);
    if (existing) existing.state = state;
    else this.children.push({ workflowId, label, state });
    this.publish();
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

  snapshot(): RunProgress {
    const hosts = Object.values(this.hosts);
    const percent =
      this.percentOverride ??
      (this.children.length
        ? childrenPercent(this.children)
        : hosts.length
          ? Math.round((10 * hosts.reduce((s, h) => s + clusterPercent(h), 0)) / hosts.length) / 10
          : 0);
    return {
      runId: this.runId,
      phase: this.phase,
      percent,
      clusters: Object.fromEntries(hosts.map((h) => [h.hostId, { ...h, phases: [...(h.phases ?? [])] }])),
      children: this.children.map((c) => ({ ...c })),
      failures: [...this.failures],
    };
  }

  private publish(): void {
    setCurrentDetails(progressMarkdown(this.title, this.snapshot()));
  }
}
