// Node flags of the dispatcher and the agents' worker processes, wherever this repository starts
// one (npm start, the benchmarks); the Helm chart (`dispatcher.nodeFlags`, `agents.nodeFlags`: on
// the command line, as NODE_OPTIONS refuses --min-semi-space-size), docker-compose.yml and the
// Dockerfile's default command state the same
// (test/charts/chart.spec.ts and test/foundation/compose.spec.ts hold them to it).
//
// Both keep each request's or turn's objects alive for its few to few hundred milliseconds, with
// hundreds to a thousand in flight: in V8's default 16 MiB semi-spaces much of that survives a
// scavenge and is copied. 64 MiB semi-spaces cut the GC time of a worker by about a third and of
// the dispatcher by about half, for at most ~100 MiB more young generation per process
// (docs/benchmarks.md). The least size is the same as the most: V8 otherwise grows and shrinks
// the semi-spaces with the allocation rate, and a process's memory steps by tens of MiB when the
// load changes; a fixed young generation is paid once, at start, and sized for in the limits.
const youngGeneration = ['--min-semi-space-size=64', '--max-semi-space-size=64'];

export const agentsNodeFlags = [...youngGeneration];
export const dispatcherNodeFlags = [...youngGeneration];
