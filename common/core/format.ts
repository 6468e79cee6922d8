/** Numbers as the reports print them; pure, so report.md, report.html and each phase's section agree. */

/** A number with at most `digits` decimals and thousands separators; "–" for a figure that was not measured. */
export const fmt = (v: number | null | undefined, digits = 1): string =>
  v === null || v === undefined || Number.isNaN(v)
    ? '–'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });

/** A speedup as "2.35x"; "–" when either side was not measured. */
export const ratio = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : `${fmt(v, 2)}x`);
