/**
 * Progress state of a workflow, read on demand: the progress query returns it and the UI shows it as "current
 * details". It records every step each host entered and the state of each child workflow. No signals: neither
 * activities nor children report into it, so a workflow's history does not grow with the run's length; a reader
 * that wants the figures of a running step asks the children (their own query) and the server (pending
 * activities' heartbeats).
 */
import { setCurrentDetails, setHandler } from '@temporalio/workflow';
import { progressQuery, type ChildProgress, type HostProgress, type RunProgress } from '../common/core/messages';
import { childrenPercent, clusterPercent, progressMarkdown } from '../common/results/progress';

export class ProgressBoard {
  private readonly hosts: Record<string, HostProgress> = {};
  private readonly children: ChildProgress[] = [];
  private stage = 'starting';
  private readonly failures: string[] = [];
  private percentOverride: number | undefined;

  constructor(
    private readonly title: string,
    private readonly runId: string,
  ) {
    setHandler(progressQuery, () => this.snapshot());
  }

  /** The run's own stage ("validating", "running clusters", "writing results", ...). */
  setStage(stage: string): void {
    this.stage = stage;
    this.publish();
  }

  /** A host of this workflow (a cluster's, a drill's) entered a step of its plan; the run's stage follows it. */
  step(hostId: string, step: string): void {
    this.stage = step;
    const at = new Date().toISOString();
    const steps = [...(this.hosts[hostId]?.steps ?? []), { step, at }];
    this.hosts[hostId] = { hostId, step, steps, at };
    this.publish();
  }

  /** A child workflow this run waits for (or its new state). */
  child(workflowId: string, label: string, state: ChildProgress['state']): void {
    const existing = this.children.find((c) => c.workflowId === workflowId);
    if (existing) existing.state = state;
    else this.children.push({ workflowId, label, state });
    this.publish();
  }

  /** The run's percentage when its own steps measure it better than its hosts' steps (a drill's). */
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
      stage: this.stage,
      percent,
      clusters: Object.fromEntries(hosts.map((h) => [h.hostId, { ...h, steps: [...(h.steps ?? [])] }])),
      children: this.children.map((c) => ({ ...c })),
      failures: [...this.failures],
    };
  }

  private publish(): void {
    setCurrentDetails(progressMarkdown(this.title, this.snapshot()));
  }
}
