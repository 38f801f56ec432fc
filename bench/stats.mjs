// Statistics shared by the benchmarks.

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** The `q`-quantile of `xs` (nearest rank); undefined for no values. */
export function quantile(xs, q) {
  if (xs.length === 0) return undefined;
  const sorted = Float64Array.from(xs).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** `x` rounded to three decimals (the figures' precision in bench/results). */
export const round3 = (x) => Math.round(x * 1000) / 1000;

/** The median of `xs` with its range. */
export function spread(xs) {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}
