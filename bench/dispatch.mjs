#!/usr/bin/env node
// npm run bench:dispatch — the dispatcher against a reference A2A server (the SDK's sample
// pattern: DefaultRequestHandler + InMemoryTaskStore + an executor that completes at once), same
// load generator, connections and duration, in one invocation:
//   (a) SendMessage with returnImmediately (durable accept: Postgres commit; Kafka produce by the relay)
//   (b) blocking SendMessage (dispatcher: through Kafka to the demo echo worker, in its own
//       process, and back)
// plus (a) with the dispatcher as two processes (DISPATCHER_PROCESSES=2: node:cluster workers sharing
// the port, a stack of its own: database, topics, echo worker) and, not targets, (a) again with
// the echo worker paused (the accept path alone on this machine) and (a) against a bare node:http
// server (the exchange alone: the floor of any front door).
// BENCH_ROUNDS rounds (default 3) of all of them, each dispatcher run right after its reference run;
// the figures are medians of the per-round ratios. CPU per request is summed over the processes
// (dispatcher, echo worker, Postgres, Kafka). Writes bench/results/dispatch.json, whose `summary`
// bench/all.mjs copies into bench/results/summary.json. BENCH_DISPATCHER_PROCESSES (default 2)
// sizes the multi-process scenario; 1 leaves it out. Needs the local Kafka and Postgres (see README).
import { writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { A2A_HEADERS, describeLoad, drained as drainedBacklog, sendMessageBody } from './dispatch-requests.mjs';
import { startDispatchStack } from './dispatch-stack.mjs';
import { cpuMs, cpuMsOf, infraCpuMs } from './process-cpu.mjs';
import { median } from './stats.mjs';
import { machine } from './run-facts.mjs';
import { integer } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
const connections = integer('BENCH_CONNECTIONS', 32);
const duration = integer('BENCH_DURATION_S', 10);
const warmupS = integer('BENCH_WARMUP_S', 3);
const rounds = integer('BENCH_ROUNDS', 3);
// 1 leaves the multi-process stack out.
const processes = integer('BENCH_DISPATCHER_PROCESSES', 2);
const stack = await startDispatchStack('bench');
const { urls } = stack;
const worker = stack.worker;
const multi =
  processes > 1
    ? await startDispatchStack('bench-multi', { dispatcherProcesses: processes }).catch(async (err) => {
        await stack.stop();
        throw err;
      })
    : undefined;

const body = sendMessageBody;
const headers = A2A_HEADERS;

async function check(url, returnImmediately) {
  const res = await fetch(url, { method: 'POST', headers, body: body(returnImmediately) });
  const json = await res.json();
  const state = json.result?.task?.status?.state;
  if (!state) throw new Error(`${url}: unexpected answer ${JSON.stringify(json)}`);
  return state;
}

/**
 * `on`: the stack whose processes are measured; the reference's (or the bare floor's) own process
 * when `url` is theirs (the stack's idle dispatcher and echo worker are then left out).
 */
async function load(name, url, returnImmediately, on = stack) {
  const alone = url === urls.reference ? 'reference' : url === urls.bare ? 'bare' : undefined;
  const expected = await check(url, returnImmediately);
  // CPU per request of the server process(es), the echo worker, Postgres and Kafka: unlike req/s,
  // barely moved by whatever else the machine runs, and it says where a request's cost goes.
  const servers = alone ? on.pidsOf(alone) : on.serverPids();
  const cpuNow = () => {
    const infra = infraCpuMs();
    return [cpuMsOf(servers), alone ? 0 : cpuMs(on.worker.pid), infra.postgres, infra.kafka];
  };
  const cpuBefore = cpuNow();
  // The load generator (this process) shares the cores: its CPU bounds what req/s the rest can reach.
  const loadGeneratorBefore = process.cpuUsage();
  let wrong = 0;
  // Samples from the second after the start on: the first may still hold the quiet before it.
  const eluFrom = Date.now() + 1000;
  const result = await autocannon({
    url,
    method: 'POST',
    headers,
    connections,
    duration,
    requests: [{ setupRequest: (req) => ({ ...req, body: body(returnImmediately) }) }],
    // Count answers that are JSON-RPC errors or not the expected state: 200 is not success.
    setupClient: (client) =>
      client.on('body', (buf) => {
        const s = buf.toString();
        if (!s.includes('"result"') || (!returnImmediately && !s.includes('TASK_STATE_COMPLETED'))) wrong += 1;
      }),
  });
  const out = {
    scenario: name,
    url,
    firstAnswerState: expected,
    requests: result.requests.total,
    reqPerSec: result.requests.average,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, avg: result.latency.average },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    wrongAnswers: wrong,
    // 1 means the servers' one thread was busy the whole time: that thread bounds the scenario.
    serverEventLoopUtilization: on.eventLoopUtilization(eluFrom, alone ?? 'dispatcher'),
  };
  const cpuAfter = cpuNow();
  const loadGenerator = process.cpuUsage(loadGeneratorBefore);
  if (cpuMs(process.pid) !== undefined && result.requests.total > 0) {
    const per = (i) => Math.round(((cpuAfter[i] - cpuBefore[i]) / result.requests.total) * 1000) / 1000;
    out.cpuMsPerRequest = { server: per(0), echoWorker: per(1), postgres: per(2), kafka: per(3) };
    out.cpuMsPerRequest.total = Math.round((per(0) + per(1) + per(2) + per(3)) * 1000) / 1000;
    // Not in `total`: the reference's figures do not count it either.
    out.cpuMsPerRequest.loadGenerator =
      Math.round(((loadGenerator.user + loadGenerator.system) / 1000 / result.requests.total) * 1000) / 1000;
    out.serverProcesses = servers.length;
  }
  console.error(
    `${name}: ${out.reqPerSec.toFixed(0)} req/s, p50 ${out.latencyMs.p50} ms, p99 ${out.latencyMs.p99} ms, wrong ${wrong}, non2xx ${out.non2xx}, errors ${out.errors}, CPU ms/request ${JSON.stringify(out.cpuMsPerRequest)}, event loop ${out.serverEventLoopUtilization}`,
  );
  return out;
}

/** Same load, not recorded: JIT, pools, Kafka connections and consumer assignments settle first. */
async function warmup(url, returnImmediately) {
  if (!url) return;
  await autocannon({
    url,
    method: 'POST',
    headers,
    connections,
    duration: warmupS,
    requests: [{ setupRequest: (req) => ({ ...req, body: body(returnImmediately) }) }],
  });
}

const drained = (on = stack) => drainedBacklog(on);

// The VM's speed drifts by tens of percent within minutes (seen: the reference at 1,100 and at
// 2,000 req/s ten minutes apart), so one reference run against one dispatcher run says little.
// Each round runs every scenario back to back with its reference; the ratios are per round, and
// the figures are the medians over the rounds (the spread is reported with them).
const perRound = [];
try {
  for (const url of [urls.reference, urls.dispatcher]) for (const ri of [true, false]) await warmup(url, ri);
  await warmup(urls.bare, true);
  await warmup(multi?.urls.dispatcher, true);
  await drained();
  if (multi) await drained(multi);
  for (let round = 1; round <= rounds; round++) {
    console.error(`round ${round} of ${rounds}`);
    const rows = {};
    rows.a_reference = await load('(a) reference, returnImmediately', urls.reference, true);
    // Not a target: the floor of the exchange itself (see dispatch-servers.mjs, serveBare).
    rows.a_bare = await load('(a) bare node:http exchange', urls.bare, true);
    rows.a_dispatcher = await load('(a) dispatcher, returnImmediately', urls.dispatcher, true);
    // Not part of (a)'s figures: how long the worker and the projection took to finish its backlog.
    rows.a_dispatcher.backlogDrainedAfterMs = await drained();
    console.error(
      `(a) dispatcher: backlog of accepted tasks completed ${rows.a_dispatcher.backlogDrainedAfterMs} ms after the load stopped`,
    );
    if (multi) {
      // Its own reference run right before it: the VM's speed drifts within minutes.
      rows.a_reference_multi = await load('(a) reference, returnImmediately', urls.reference, true);
      rows.a_dispatcher_multi = await load(`(a) dispatcher, ${processes} processes, returnImmediately`, multi.urls.dispatcher, true, multi);
      rows.a_dispatcher_multi.backlogDrainedAfterMs = await drained(multi);
    }
    // Not a target: the same load with the echo worker paused (SIGSTOP for its duration), so the
    // dispatcher's accept path (dedup, Postgres commit, relay produce) has the 2 cores to itself,
    // without the worker and the projection of its events competing for them. It says how much of
    // (a)'s gap is the front door and how much is co-locating the rest of the pipeline on this machine.
    worker.kill('SIGSTOP');
    try {
      rows.a_dispatcher_workerPaused = await load('(a) dispatcher, returnImmediately, worker paused', urls.dispatcher, true);
    } finally {
      worker.kill('SIGCONT');
    }
    rows.a_dispatcher_workerPaused.backlogDrainedAfterMs = await drained();
    console.error(
      `(a) dispatcher, worker paused: backlog of accepted tasks completed ${rows.a_dispatcher_workerPaused.backlogDrainedAfterMs} ms after the worker resumed`,
    );
    rows.b_reference = await load('(b) reference, blocking', urls.reference, false);
    rows.b_dispatcher = await load('(b) dispatcher, blocking via Kafka', urls.dispatcher, false);
    perRound.push(rows);
  }
} finally {
  await multi?.stop();
  await stack.stop();
}

const round2 = (x) => Math.round(x * 100) / 100;
/** Median and range over the rounds of dispatcher/reference for one figure. */
function ratio(disp, ref, pick) {
  const each = perRound.map((r) => round2(pick(r[disp]) / pick(r[ref])));
  return { median: round2(median(each)), min: Math.min(...each), max: Math.max(...each), perRound: each };
}
const rps = (row) => row.reqPerSec;
const p99 = (row) => row.latencyMs.p99;
const cpu = (row) => row?.cpuMsPerRequest?.total ?? NaN;
const a = ratio('a_dispatcher', 'a_reference', rps);
const aP99 = ratio('a_dispatcher', 'a_reference', p99);
const aCpu = ratio('a_dispatcher', 'a_reference', cpu);
const b = ratio('b_dispatcher', 'b_reference', rps);
const bCpu = ratio('b_dispatcher', 'b_reference', cpu);
const m = multi ? ratio('a_dispatcher_multi', 'a_reference_multi', rps) : undefined;
const mP99 = multi ? ratio('a_dispatcher_multi', 'a_reference_multi', p99) : undefined;
const mCpu = multi ? ratio('a_dispatcher_multi', 'a_reference_multi', cpu) : undefined;
const paused = ratio('a_dispatcher_workerPaused', 'a_reference', rps);
const pausedP99 = ratio('a_dispatcher_workerPaused', 'a_reference', p99);
const pausedCpu = ratio('a_dispatcher_workerPaused', 'a_reference', cpu);
const bareCpu = ratio('a_bare', 'a_reference', cpu);
// (a) as it would cost if the dispatcher's process did nothing but the bare exchange, the work kept
// (echo worker, Postgres, Kafka as measured in (a)): no front door design gets below it.
for (const r of perRound) {
  const [w, d] = [r.a_bare.cpuMsPerRequest, r.a_dispatcher.cpuMsPerRequest];
  if (w && d) r.a_floor = { cpuMsPerRequest: { total: Math.round((w.server + d.echoWorker + d.postgres + d.kafka) * 1000) / 1000 } };
}
const floorCpu = ratio('a_floor', 'a_reference', cpu);
/** Median over the rounds of one process's CPU ms per request in one scenario. */
const cpuBy = (row) =>
  Object.fromEntries(
    ['server', 'echoWorker', 'postgres', 'kafka', 'total', 'loadGenerator'].map((k) => [
      k,
      Math.round(median(perRound.map((r) => r[row]?.cpuMsPerRequest?.[k] ?? NaN)) * 1000) / 1000,
    ]),
  );
const summary = {
  date: new Date().toISOString(),
  machine: machine(),
  load: {
    ...describeLoad({ connections, durationSeconds: duration, warmupSeconds: warmupS, rounds }),
    binding: 'JSON-RPC SendMessage',
    dispatcherProcesses: processes,
  },
  // The figures (medians over the rounds of the per-round ratios; CPU = total ms per request
  // over dispatcher, echo worker, Postgres and Kafka). bench/all.mjs copies them into summary.json.
  summary: {
    dispatch_a_cpu_per_request_ratio: aCpu.median,
    dispatch_a_req_per_s_ratio_two_processes: m?.median ?? null,
    dispatch_a_p99_ratio: mP99?.median ?? null,
    dispatch_b_cpu_per_request_ratio: bCpu.median,
    dispatch_b_req_per_s_ratio: b.median,
  },
  targets: {
    a_cpuPerRequestRatio: aCpu.median,
    a_cpuPerRequestTarget: 1.5,
    a_multi_reqPerSecRatio: m?.median ?? null,
    a_multi_reqPerSecTarget: 1,
    a_multi_p99Ratio: mP99?.median ?? null,
    a_multi_p99Target: 2,
    b_cpuPerRequestRatio: bCpu.median,
    b_cpuPerRequestTarget: 2.5,
    b_reqPerSecRatio: b.median,
    b_reqPerSecTarget: 0.6,
  },
  // Not targets: one process's (a) req/s and p99, the multi-process run's CPU, (a) with the worker
  // paused (the accept path alone on this machine), and CPU ms per request by process (medians).
  decomposition: {
    a_reqPerSecRatio: a.median,
    a_p99Ratio: aP99.median,
    a_multi_cpuPerRequestRatio: mCpu?.median ?? null,
    a_workerPaused_reqPerSecRatio: paused.median,
    a_workerPaused_p99Ratio: pausedP99.median,
    a_workerPaused_cpuPerRequestRatio: pausedCpu.median,
    a_bare_cpuPerRequestRatio: bareCpu.median,
    a_floor_cpuPerRequestRatio: floorCpu.median,
    cpuMsPerRequest: Object.fromEntries(
      ['a_reference', 'a_bare', 'a_dispatcher', 'a_dispatcher_multi', 'a_dispatcher_workerPaused', 'b_reference', 'b_dispatcher']
        .filter((row) => perRound[0]?.[row])
        .map((row) => [row, cpuBy(row)]),
    ),
  },
  spread: {
    a_cpuPerRequest: aCpu,
    a_reqPerSec: a,
    a_p99: aP99,
    ...(multi ? { a_multi_reqPerSec: m, a_multi_p99: mP99, a_multi_cpuPerRequest: mCpu } : {}),
    b_reqPerSec: b,
    b_cpuPerRequest: bCpu,
    a_workerPaused_reqPerSec: paused,
    a_workerPaused_p99: pausedP99,
    a_bare_cpuPerRequest: bareCpu,
    a_floor_cpuPerRequest: floorCpu,
  },
  rounds: perRound,
};
writeFileSync(`${root}bench/results/dispatch.json`, `${JSON.stringify(summary, null, 2)}\n`);
console.log(
  JSON.stringify(
    {
      ...summary.targets,
      ...summary.decomposition,
      summary: summary.summary,
      spread: Object.fromEntries(Object.entries(summary.spread).map(([k, v]) => [k, v.perRound])),
    },
    null,
    2,
  ),
);
