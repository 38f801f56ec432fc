/**
 * The value of one sample on a service's `GET /metrics`, by metric name and a subset of its labels
 * (in any order); undefined when no sample matches.
 */
export async function metricSample(baseUrl: string, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}
