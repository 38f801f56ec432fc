// Summarises a V8 CPU profile (`--cpu-prof`, as BENCH_CPU_PROFILE_DIR and BENCH_WORKER_NODE_ARGS
// write them) by what spent the time: each sample is charged to the nearest library or project
// module on its stack — Node's own frames (streams, sockets, timers) to the code that called
// them, HTTP parsing and writing to "Node HTTP" — and garbage collection stands apart.
//
//   node bench/profile-summary.mjs <file.cpuprofile> [--from S] [--to S] [--top N] [--json]
//
// The window (seconds from the profile's start) defaults to the busy part of a bench run: the
// longest stretch of whole seconds, start-up left out, each at least half as busy as the busiest.
// A profile samples the thread's stack whether or not it is on a core, so a call that wakes
// another process (a socket write) also collects the wait for a core: read those as upper bounds.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { from: { type: 'string' }, to: { type: 'string' }, top: { type: 'string' }, json: { type: 'boolean' } },
});
if (positionals.length !== 1) {
  console.error('usage: node bench/profile-summary.mjs <file.cpuprofile> [--from S] [--to S] [--top N] [--json]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));

// Packages that act as one part of a process.
const families = [
  [
    /^(express|router|body-parser|raw-body|finalhandler|on-finished|type-is|content-type|iconv-lite|qs|http-errors|accepts|negotiator|mime-types|mime-db|vary|etag|fresh|proxy-addr|parseurl|media-typer|encodeurl|send|depd|statuses|bytes|unpipe|destroy|@nestjs\/platform-express)$/,
    'express and its middleware',
  ],
  [/^(pg|pg-protocol|pg-pool|pg-types|postgres-array|postgres-date|postgres-bytea|postgres-interval)$/, 'pg'],
  [/^@opentelemetry\//, 'OpenTelemetry'],
  [/^@modelcontextprotocol\//, 'MCP SDK'],
  [/^@a2a-js\//, 'A2A SDK'],
  [/^@nestjs\//, 'NestJS'],
  [/^(pino|pino-std-serializers|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|atomic-sleep|on-exit-leak-free)$/, 'pino'],
];
const groupOfPackage = (name) => families.find(([re]) => re.test(name))?.[1] ?? name;

/** The group a frame's url belongs to; null for Node's own frames outside HTTP (charged to their caller). */
function groupOf(url) {
  if (!url) return null;
  if (/^node:(_http|internal\/http|internal\/deps\/undici)/.test(url)) return 'Node HTTP';
  if (url.startsWith('node:')) return null;
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (pkg) return groupOfPackage(pkg[1]);
  const app = url.match(/\/apps\/([^/]+)\/(?:dist|src)\/(?:([^/]+)\/)?/);
  if (app) return `apps/${app[1]}${app[2] && !app[2].includes('.') ? `/${app[2]}` : ''}`;
  const lib = url.match(/\/libs\/([^/]+)\//);
  if (lib) return `libs/${lib[1]}`;
  const bench = url.match(/\/(bench|scripts|test)\/[^/]+$/);
  return bench ? bench[0].slice(1) : null;
}

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const groupCache = new Map();
function sampleGroup(id) {
  if (groupCache.has(id)) return groupCache.get(id);
  const fn = nodes.get(id).callFrame.functionName;
  let group = fn.startsWith('(') ? fn : undefined;
  for (let cur = id; group === undefined && cur !== undefined; cur = parent.get(cur))
    group = groupOf(nodes.get(cur).callFrame.url) ?? undefined;
  group ??= 'Node runtime';
  groupCache.set(id, group);
  return group;
}

// Sample times (µs from the start) and how long each stood for.
const at = [];
let t = 0;
for (const d of profile.timeDeltas) at.push((t += d));
const span = (i) => profile.timeDeltas[i + 1] ?? 0;
const busyPerSecond = [];
profile.samples.forEach((id, i) => {
  if (sampleGroup(id) === '(idle)') return;
  const s = Math.floor(at[i] / 1e6);
  busyPerSecond[s] = (busyPerSecond[s] ?? 0) + span(i);
});

function busyWindow() {
  const busy = Array.from(busyPerSecond, (v) => v ?? 0);
  const peak = Math.max(0, ...busy.slice(2));
  let best = [2, 2];
  for (let s = 2; s < busy.length;) {
    if (busy[s] < peak / 2) {
      s++;
      continue;
    }
    let e = s;
    while (e + 1 < busy.length && busy[e + 1] >= peak / 2) e++;
    if (e - s > best[1] - best[0]) best = [s, e];
    s = e + 1;
  }
  return [best[0], best[1] + 1];
}
const [from, to] = values.from || values.to ? [Number(values.from ?? 0), Number(values.to ?? Infinity)] : busyWindow();

const byGroup = new Map();
let busyUs = 0;
profile.samples.forEach((id, i) => {
  const s = at[i] / 1e6;
  const group = sampleGroup(id);
  if (s < from || s >= to || group === '(idle)') return;
  busyUs += span(i);
  byGroup.set(group, (byGroup.get(group) ?? 0) + span(i));
});
if (busyUs === 0) {
  console.error(`no busy samples between ${from} and ${to} s of ${positionals[0]}: nothing to summarise`);
  process.exit(1);
}
const rows = [...byGroup.entries()]
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(values.top ?? 25))
  .map(([group, us]) => ({ group, share: Math.round((1000 * us) / busyUs) / 10 }));
const seconds = to === Infinity ? Math.ceil(at.at(-1) / 1e6) - from : to - from;
const summary = {
  window: { from, to: from + seconds },
  busyMs: Math.round(busyUs / 1000),
  busyShare: Math.round((100 * busyUs) / 1e6 / seconds) / 100,
  rows,
};

if (values.json) console.log(JSON.stringify(summary, null, 2));
else {
  console.log(`window ${from}–${from + seconds} s, busy ${summary.busyMs} ms (${Math.round(summary.busyShare * 100)}% of the thread)`);
  console.log('| part | share of busy time |\n| --- | --- |');
  for (const r of rows) console.log(`| ${r.group} | ${r.share}% |`);
}
