// A small reader of the Prometheus text exposition format: enough to pick a few counter families
// out of a service's /metrics, not a general parser (no histograms, no exemplars).

/** One sample: its metric name, labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

/**
 * The samples of the metrics named in `names` (exact names, e.g. `mesh_events_refused_total`).
 * Comments, other metrics and lines that do not parse are skipped: a scrape is never trusted to be
 * well formed, and one bad line must not hide the others.
 */
export function samplesOf(text: string, names: readonly string[]): Sample[] {
  const wanted = new Set(names);
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line.trim());
    if (!m || !wanted.has(m[1]!)) continue;
    const labels = labelsOf(m[2] ?? '');
    const value = valueOf(m[3]!);
    if (!labels || Number.isNaN(value)) continue;
    out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Prometheus spells infinities +Inf and -Inf, which Number() does not read. */
function valueOf(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

function labelsOf(text: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (!m) return text.slice(at).trim() === '' ? labels : undefined;
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}
