#!/usr/bin/env node
// npm run bench:soak — blocking SendMessage through the dispatcher, Kafka and an echo worker (each
// in its own process, as bench:dispatch starts them) at a FIXED rate for a long time: default
// 10 minutes at 50% of the blocking throughput last measured by bench:dispatch (the verdict run is
// 30 minutes: SOAK_DURATION_S=1800). Reports throughput, p50/p99, errors and how the memory of
// every process grew. RSS and the dispatcher's V8 heap (from its /metrics) are sampled every
// SOAK_SAMPLE_S: one reading swings by ±15% with the garbage collector's cycle, so growth compares
// the median RSS of the first and the last SOAK_WINDOW_S, and the heap's floor (its least reading,
// after a collection) over the same windows — a leak raises the floor. Latency is kept per minute;
// the verdict compares the p99 of the first and the last SOAK_LATENCY_WINDOW_S. The verdict
// (`flat`): RSS growth ≤ 5% for every process, last p99 ≤ 1.5× first p99, no error.
// SOAK_HEAP_SNAPSHOT_DIR=dir writes a heap snapshot of the dispatcher after the warm-up and at the
// end (compare them with `node bench/heap-diff.mjs <start> <end>`). Writes bench/results/soak.json.
// Env: SOAK_DURATION_S (600), SOAK_RATE (req/s; default half of bench/results/dispatch.json (b)),
//      BENCH_CONNECTIONS (32), SOAK_WARMUP_S (600), SOAK_SAMPLE_S (5), SOAK_WINDOW_S (60),
//      SOAK_LATENCY_WINDOW_S (300), SOAK_HEAP_SNAPSHOT_DIR, SOAK_RESULT_FILE (bench/results/soak.json).
//      Flag: --short = 60 s.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { startDispatchStack } from './dispatch-stack.mjs';
import { median, quantile } from './stats.mjs';
import { A2A_HEADERS, sendMessageBody } from './dispatch-requests.mjs';
import { machine } from './run-facts.mjs';
import { integer, number, text } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
const short = process.argv.includes('--short');
const duration = integer('SOAK_DURATION_S', short ? 60 : 600, { min: 2 });
const connections = integer('BENCH_CONNECTIONS', 32);
const warmupS = integer('SOAK_WARMUP_S', short ? 10 : 600, { min: 0 });
const sampleEvery = number('SOAK_SAMPLE_S', 5, { min: 0.1 }) * 1000;
const windowS = Math.min(integer('SOAK_WINDOW_S', 60), duration / 2);
const latencyWindowS = Math.min(integer('SOAK_LATENCY_WINDOW_S', 300, { min: 1 }), duration / 2);
const heapSnapshotDir = text('SOAK_HEAP_SNAPSHOT_DIR', undefined);
const fixedRate = integer('SOAK_RATE', undefined);
const resultFile = text('SOAK_RESULT_FILE', `${root}bench/results/soak.json`);
let measured;
try {
  // (b)'s median over the dispatch bench's rounds.
  measured = median(JSON.parse(readFileSync(`${root}bench/results/dispatch.json`, 'utf8')).rounds.map((r) => r.b_dispatcher.reqPerSec));
} catch {
  measured = 100;
}
const rate = fixedRate ?? Math.max(1, Math.round(measured / 2));
/** A `kB` line of /proc/<pid>/status in MiB (Linux). */
const statusMiB = (pid, field) => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : undefined;
};
/** Resident set size of a process in MiB. */
const rssMiB = (pid) => statusMiB(pid, 'VmRSS');

/**
 * Where the dispatcher's memory is: V8's heap in use and committed, memory V8 counts as external
 * (Buffers), from the default metrics on its /metrics; and its RSS split into anonymous memory
 * (heaps, malloc) and mapped files (code of node and its libraries).
 */
const dispatcherMemory = async (origin, pid) => {
  // A sample line's value in MiB: `series` is the metric's name with its labels, as a pattern.
  const mib = (text, series) => {
    const m = new RegExp(`^${series} (\\S+)$`, 'm').exec(text);
    return m ? Math.round(Number(m[1]) / 104857.6) / 10 : undefined;
  };
  const spaceMiB = (text, space) => mib(text, `nodejs_heap_space_size_total_bytes\\{[^}]*space="${space}"[^}]*\\}`);
  const proc = { dispatcherRssAnonMiB: statusMiB(pid, 'RssAnon'), dispatcherRssFileMiB: statusMiB(pid, 'RssFile') };
  try {
    const text = await (await fetch(`${origin}/metrics`)).text();
    return {
      dispatcherHeapMiB: mib(text, 'nodejs_heap_size_used_bytes'),
      dispatcherHeapCommittedMiB: mib(text, 'nodejs_heap_size_total_bytes'),
      dispatcherExternalMiB: mib(text, 'nodejs_external_memory_bytes'),
      // V8's old generation and young generation (committed): which one a change of RSS is.
      dispatcherOldSpaceCommittedMiB: spaceMiB(text, 'old'),
      dispatcherNewSpaceCommittedMiB: spaceMiB(text, 'new'),
      ...proc,
    };
  } catch {
    return proc;
  }
};
const percentGrowth = (from, to) => Math.round(((to - from) / from) * 1000) / 10;
/** `of` (median or min) of a series over the first and the last window, and the growth between them. */
function windows(samples, key, of, span = duration) {
  const values = (keep) =>
    samples
      .filter(keep)
      .map((x) => x[key])
      .filter((v) => v !== undefined);
  const first = values((x) => x.atS <= windowS);
  const last = values((x) => x.atS >= span - windowS);
  if (first.length === 0 || last.length === 0) return undefined;
  const [a, b] = [of(first), of(last)];
  return { first: a, last: b, growthPercent: percentGrowth(a, b) };
}

/** Writes a heap snapshot of the dispatcher (SIGUSR2) and resolves with its path once written. */
async function heapSnapshot(pid) {
  const before = new Set(readdirSync(heapSnapshotDir));
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const fresh = readdirSync(heapSnapshotDir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!fresh) continue;
    // Written in one go by V8: done once its size stays the same for a second.
    const path = `${heapSnapshotDir}/${fresh}`;
    const size = statSync(path).size;
    await new Promise((r) => setTimeout(r, 1000));
    if (size > 0 && statSync(path).size === size) return path;
  }
}

if (heapSnapshotDir) mkdirSync(heapSnapshotDir, { recursive: true });
const stack = await startDispatchStack('soak', { heapSnapshotDir });
const { urls } = stack;
const procs = { dispatcher: stack.servers.pid, echoWorker: stack.worker.pid };
const headers = A2A_HEADERS;
// Blocking: answered once the worker's final event is projected.
const body = () => sendMessageBody(false);
let summary;
try {
  const origin = new URL(urls.dispatcher).origin;
  /** Samples memory into `into` every SOAK_SAMPLE_S, `atS` counted from now; returns its stop. */
  const sampleInto = async (into) => {
    const t = Date.now();
    const sample = async () =>
      into.push({
        atS: Math.round((Date.now() - t) / 1000),
        ...Object.fromEntries(Object.entries(procs).map(([k, pid]) => [`${k}RssMiB`, rssMiB(pid)])),
        ...(await dispatcherMemory(origin, procs.dispatcher)),
      });
    await sample();
    const timer = setInterval(() => void sample(), sampleEvery);
    return async () => {
      clearInterval(timer);
      await sample();
    };
  };
  // Warm-up at the same rate. A process's memory grows at a new load until V8 has sized its heap
  // to it (the old generation's committed size settles over minutes, not seconds), code is
  // compiled and pools and buffers fill, so growth is measured from a process that has reached its
  // working set for this load. The warm-up's own samples are kept (`warmup`).
  const warmupSamples = [];
  const stopWarmupSampler = await sampleInto(warmupSamples);
  await autocannon({
    url: urls.dispatcher,
    method: 'POST',
    headers,
    connections,
    overallRate: rate,
    duration: warmupS,
    requests: [{ setupRequest: (r) => ({ ...r, body: body() }) }],
  });
  await stopWarmupSampler();
  const heapSnapshots = {};
  if (heapSnapshotDir) heapSnapshots.start = await heapSnapshot(procs.dispatcher);
  const rssStart = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, rssMiB(pid)]));
  console.error(`soak: ${duration} s at ${rate} req/s (50% of ${measured}), RSS at start ${JSON.stringify(rssStart)}`);
  let wrong = 0;
  const samples = [];
  const t0 = Date.now();
  /** Latencies (ms) of the answers of each minute of the run. */
  const perMinute = [];
  const stopSampler = await sampleInto(samples);
  const result = await autocannon({
    url: urls.dispatcher,
    method: 'POST',
    headers,
    connections,
    overallRate: rate,
    duration,
    requests: [{ setupRequest: (r) => ({ ...r, body: body() }) }],
    setupClient: (client) => {
      client.on('body', (b) => void (b.toString().includes('TASK_STATE_COMPLETED') || (wrong += 1)));
      client.on('response', (_status, _bytes, ms) => {
        const minute = Math.floor((Date.now() - t0) / 60_000);
        (perMinute[minute] ??= []).push(ms);
      });
    },
  });
  await stopSampler();
  if (heapSnapshotDir) heapSnapshots.end = await heapSnapshot(procs.dispatcher);
  const minutes = perMinute.map((xs = [], i) => ({ minute: i + 1, answers: xs.length, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99) }));
  const windowMinutes = Math.max(1, Math.round(latencyWindowS / 60));
  const fullMinutes = Math.floor(duration / 60);
  const p99Of = (from, to) => quantile(perMinute.slice(from, to).flat(), 0.99);
  const latencyWindows = {
    minutes: windowMinutes,
    firstP99: p99Of(0, windowMinutes),
    lastP99: p99Of(Math.max(0, fullMinutes - windowMinutes), fullMinutes),
  };
  // Every answer's latency as measured: autocannon's own percentiles (`result.latencyMs`) add
  // coordinated-omission fill-ins at a 1 ms interval under a fixed rate, which pulls them down.
  const answers = perMinute.flat();
  latencyWindows.all = { p50: quantile(answers, 0.5), p99: quantile(answers, 0.99) };
  latencyWindows.ratio = Math.round((latencyWindows.lastP99 / latencyWindows.firstP99) * 100) / 100;
  const rssEnd = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, rssMiB(pid)]));
  const pointGrowth = Object.fromEntries(Object.keys(procs).map((k) => [k, percentGrowth(rssStart[k], rssEnd[k])]));
  const rss = Object.fromEntries(Object.keys(procs).map((k) => [k, windows(samples, `${k}RssMiB`, median)]));
  summary = {
    date: new Date().toISOString(),
    machine: { ...machine(), loadavgAtEnd: loadavg() },
    load: {
      tool: 'autocannon',
      scenario: 'blocking SendMessage via Kafka',
      connections,
      durationSeconds: duration,
      warmupSeconds: warmupS,
      targetRate: rate,
      measuredMax: measured,
    },
    result: {
      requests: result.requests.total,
      reqPerSec: result.requests.average,
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      wrongAnswers: wrong,
    },
    windowSeconds: windowS,
    // Median RSS of the first and the last window.
    rssMiB: rss,
    // The dispatcher's heap floor: the least heap in use seen in each window.
    dispatcherHeapFloorMiB: windows(samples, 'dispatcherHeapMiB', (xs) => Math.min(...xs)),
    // Which part of the dispatcher's RSS moved: medians over the same windows.
    dispatcherMemoryMiB: Object.fromEntries(
      ['HeapCommitted', 'OldSpaceCommitted', 'NewSpaceCommitted', 'External', 'RssAnon', 'RssFile'].map((k) => [
        k,
        windows(samples, `dispatcher${k}MiB`, median),
      ]),
    ),
    // The same over the warm-up's first and last window: what the warm-up kept out of the verdict.
    warmup: {
      rssMiB: Object.fromEntries(Object.keys(procs).map((k) => [k, windows(warmupSamples, `${k}RssMiB`, median, warmupS)])),
      dispatcherOldSpaceCommittedMiB: windows(warmupSamples, 'dispatcherOldSpaceCommittedMiB', median, warmupS),
      samples: warmupSamples,
    },
    pointRssMiB: { start: rssStart, end: rssEnd, growthPercent: pointGrowth },
    latencyWindows,
    flat: {
      // Writing a snapshot leaves the process's RSS raised for a while: no RSS verdict beside one.
      rssWithin5Percent: heapSnapshotDir ? null : Object.values(rss).every((r) => r !== undefined && r.growthPercent <= 5),
      p99Within1_5x: latencyWindows.ratio <= 1.5,
    },
    heapSnapshots,
    minutes,
    samples,
  };
} finally {
  await stack.stop();
}
writeFileSync(resultFile, `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary, null, 2));
process.exit(summary.flat.rssWithin5Percent !== false && summary.flat.p99Within1_5x && summary.result.errors === 0 ? 0 : 1);
