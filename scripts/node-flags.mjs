// Node flags of the agents' worker processes, wherever this repository starts one (npm start, the
// benchmarks); the Helm chart (agents.env.NODE_OPTIONS) and docker-compose.yml state the same, and
// test/charts/chart.spec.ts holds the chart to it.
//
// A worker keeps each turn's objects alive for the turn's few hundred milliseconds, with up to
// AGENTS_MAX_IN_FLIGHT turns at once: in V8's default 16 MiB semi-spaces much of that survives a
// scavenge and is copied. 64 MiB semi-spaces cut the worker's GC time by about a third (a fifth to
// a quarter of its CPU before) for at most ~100 MiB more young generation (docs/benchmarks.md).
export const agentsNodeFlags = ['--max-semi-space-size=64'];
