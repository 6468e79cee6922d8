/**
 * The figures both reports put side by side with the reference: the summary table shaped like the reference's,
 * and the latency breakdown. Pure, so report.md and report.html show the same numbers.
 */
import { BREAKDOWN_KEYS, BREAKDOWN_LABELS, type BreakdownKey } from '../../common/results/breakdown';
import { REFERENCE, REFERENCE_ROLES } from '../../common/results/reference';
import type { ClassResult, ExperimentResult } from '../../common/results/result';
import { fmt, ratio } from '../../common/core/format';
import { comparedPhases } from '../../common/phases/registry';

/** One row of the summary table: this run's baseline, candidate and ratio, then the reference's. */
export interface SummaryRow {
  metric: string;
  baseline: string;
  candidate: string;
  ratio: string;
  refBaseline: string;
  refCandidate: string;
  refRatio: string;
}

const refBase = () => REFERENCE.results[REFERENCE_ROLES.baseline];
const refCand = () => REFERENCE.results[REFERENCE_ROLES.candidate];

/** The reference-shaped summary: TPS, latency, then each phase the reference measured too. Empty without a comparison. */
export function summaryRows(result: ExperimentResult): SummaryRow[] {
  if (!result.compare) return [];
  const base: ClassResult | undefined = result.classes[result.compare.baseline];
  const cand: ClassResult | undefined = result.classes[result.compare.candidate];
  const spec = result.spec;
  const rows: SummaryRow[] = [
    {
      metric: 'median throughput (TPS)',
      baseline: fmt(base?.medianTps),
      candidate: fmt(cand?.medianTps),
      ratio: ratio(result.ratios.tps),
      refBaseline: fmt(refBase().medianTps),
      refCandidate: fmt(refCand().medianTps),
      refRatio: ratio(REFERENCE.ratios.tps),
    },
    {
      metric: 'median transaction latency (ms)',
      baseline: fmt(base?.medianLatencyMs, 2),
      candidate: fmt(cand?.medianLatencyMs, 2),
      ratio: ratio(result.ratios.latency),
      refBaseline: fmt(refBase().medianLatencyMs),
      refCandidate: fmt(refCand().medianLatencyMs),
      refRatio: ratio(REFERENCE.ratios.latency),
    },
  ];
  for (const p of comparedPhases()) {
    const metric = p.metric(spec.phases);
    if (metric === null) continue;
    rows.push({
      metric,
      baseline: fmt(p.seconds(base?.phases ?? {}), 2),
      candidate: fmt(p.seconds(cand?.phases ?? {}), 2),
      ratio: ratio(result.ratios[p.ratioKey]),
      refBaseline: fmt(p.reference?.baseline),
      refCandidate: fmt(p.reference?.candidate),
      refRatio: ratio(p.reference?.ratio),
    });
  }
  return rows;
}

/** The reference's breakdown of one class (it has no "other" part). */
export function referenceBreakdown(role: 'baseline' | 'candidate'): Partial<Record<BreakdownKey, number>> {
  return (role === 'baseline' ? refBase() : refCand()).latencyBreakdownMs;
}

/** Breakdown rows (ms per transaction): this run's baseline and candidate, then the reference's. */
export function breakdownRows(result: ExperimentResult): { part: string; values: string[] }[] {
  if (!result.compare) return [];
  const base = result.classes[result.compare.baseline]?.breakdownMs;
  const cand = result.classes[result.compare.candidate]?.breakdownMs;
  if (!base && !cand) return [];
  const refB = referenceBreakdown('baseline');
  const refC = referenceBreakdown('candidate');
  const rows = BREAKDOWN_KEYS.map((k) => ({
    part: BREAKDOWN_LABELS[k],
    values: [fmt(base?.[k], 2), fmt(cand?.[k], 2), fmt(refB[k], 1), fmt(refC[k], 1)],
  }));
  const total = (b: Partial<Record<BreakdownKey, number>> | undefined) =>
    b ? BREAKDOWN_KEYS.reduce((s, k) => s + (b[k] ?? 0), 0) : undefined;
  rows.push({ part: 'total', values: [fmt(total(base), 2), fmt(total(cand), 2), fmt(total(refB), 1), fmt(total(refC), 1)] });
  return rows;
}

/** A check's verdict word: PASS, FAIL, or WARN for a failed warning. */
export function checkVerdict(c: { ok: boolean; severity?: 'error' | 'warning' }): 'PASS' | 'FAIL' | 'WARN' {
  return c.ok ? 'PASS' : c.severity === 'warning' ? 'WARN' : 'FAIL';
}
