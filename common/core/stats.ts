/** Small statistics shared by activities and workflows. Pure and workflow-safe. */

// Held in a constant: a global lookup per call is ~20x slower inside Jest's vm sandbox, where simulations run.
const { imul } = Math;

/** The median of a list, or null when it is empty. */
export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The arithmetic mean, or NaN when the list is empty. */
export function mean(values: number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** The sample standard deviation (n - 1 in the denominator), or NaN with fewer than two values. */
export function sampleStandardDeviation(values: number[]): number {
  if (values.length < 2) return NaN;
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) ** 2;
  return Math.sqrt(squares / (values.length - 1));
}

/** Percentile of sorted values (linear interpolation between neighbours; infinite neighbours are returned as is). */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  if (lo === hi || sorted[lo] === sorted[hi]) return sorted[lo];
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** A small, fast PRNG (mulberry32): the same seed gives the same sequence, so anything drawn from it is reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error below 1e-13). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  const z = x - 1;
  let sum = c[0];
  for (let i = 1; i < 9; i++) sum += c[i] / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/**
 * The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz, as in Numerical
 * Recipes' betacf), evaluated where it converges fast and mirrored otherwise. At most 300 terms.
 */
export function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - regularizedIncompleteBeta(1 - x, b, a);
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let f = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let num = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    f *= d * c;
    num = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    f *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return (front * f) / a;
}

/** Standard normal CDF (Abramowitz-Stegun 7.1.26 erf, error < 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** The CDF of Student's t distribution with `df` degrees of freedom (df > 0; ±Infinity give 0 and 1). */
export function studentTCdf(t: number, df: number): number {
  if (Number.isNaN(t)) return NaN;
  if (t === Infinity) return 1;
  if (t === -Infinity) return 0;
  const tail = 0.5 * regularizedIncompleteBeta(df / (df + t * t), df / 2, 0.5);
  return t > 0 ? 1 - tail : tail;
}

/** The p-quantile of Student's t (0 < p < 1): bracketed, then bisected on the CDF (bounded: at most 64 + 200 steps). */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) return NaN;
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 64 && studentTCdf(hi, df) < p; i++) {
    lo = hi;
    hi *= 2;
  }
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * The exact null distribution of the Mann-Whitney U statistic for samples of m and n (no ties): P(U <= u).
 * The counts of U are the coefficients of the Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) /
 * (1 - q^i); O(m^2 n) steps. A fractional u (ties counted half) is rounded down.
 */
export function mannWhitneyLowerTail(u: number, m: number, n: number): number {
  const size = m * n;
  const counts = new Float64Array(size + 1);
  counts[0] = 1;
  for (let i = 1; i <= m; i++) {
    // Multiply by (1 - q^(n+i)), then divide by (1 - q^i): the quotient is again a polynomial.
    for (let k = size; k >= n + i; k--) counts[k] -= counts[k - n - i];
    for (let k = i; k <= size; k++) counts[k] += counts[k - i];
  }
  let total = 0;
  let below = 0;
  const limit = Math.floor(u + 1e-9);
  for (let k = 0; k <= size; k++) {
    total += counts[k];
    if (k <= limit) below += counts[k];
  }
  return Math.min(1, below / total);
}
