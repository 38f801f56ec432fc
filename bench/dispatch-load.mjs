#!/usr/bin/env node
// npm run bench:dispatch-load — what a dispatcher process costs per request as its load changes,
// with one process and with DISPATCHER_PROCESSES=2: (a) SendMessage with returnImmediately at fixed
// rates (BENCH_LOAD_RATES, req/s over all processes; 0 = as fast as the connections go), the echo
// worker running, CPU per request by process as bench:dispatch reads it, and each stack idle.
// Fits each stack's dispatcher CPU per second and process to `fixed + perRequest × (req/s of that
// process)` (least squares over every run): `fixed` is what a process spends per second whatever
// it serves (its consumers' fetch loops, pollers, batches that do not fill), `perRequest` what each
// request adds. Two processes on the same load each serve half of it and each pay `fixed`.
// Writes bench/results/dispatch-load.json. Not part of `npm run bench`. Needs the local Kafka and
// Postgres (see README).
import { writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { A2A_HEADERS, describeLoad, drained, sendMessageBody } from './dispatch-requests.mjs';
import { startDispatchStack } from './dispatch-stack.mjs';
import { cpuMs, infraCpuMs } from './process-cpu.mjs';
import { median, round3 } from './stats.mjs';
import { machine, measuredCommit } from './run-facts.mjs';
import { integer, integers } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
const connections = integer('BENCH_CONNECTIONS', 32);
const duration = integer('BENCH_DURATION_S', 10);
const warmupS = integer('BENCH_WARMUP_S', 5);
const idleS = integer('BENCH_IDLE_S', 5, { min: 0 });
const rounds = integer('BENCH_ROUNDS', 3);
// Request rates over all processes; 0: unlimited.
const rates = integers('BENCH_LOAD_RATES', [150, 300, 600, 0]);
const processCounts = integers('BENCH_LOAD_PROCESSES', [1, 2], { min: 1 });

/** CPU ms used so far: each dispatcher process serving requests, the cluster primary, the echo worker, Postgres, Kafka. */
function cpuNow(stack, processes) {
  const infra = infraCpuMs();
  const [first, ...children] = stack.serverPids();
  const serving = processes > 1 ? children : [first];
  return {
    serving: serving.map((p) => cpuMs(p) ?? 0),
    primary: processes > 1 ? (cpuMs(first) ?? 0) : 0,
    echoWorker: cpuMs(stack.worker.pid) ?? 0,
    postgres: infra.postgres,
    kafka: infra.kafka,
  };
}

/** Per-process CPU used between two readings, divided by `per` (requests, or seconds). */
function cpuBetween(a, b, per) {
  const serving = b.serving.map((v, i) => (v - a.serving[i]) / per);
  const out = {
    server: round3(serving.reduce((s, v) => s + v, 0) + (b.primary - a.primary) / per),
    servingProcesses: serving.map(round3),
    echoWorker: round3((b.echoWorker - a.echoWorker) / per),
    postgres: round3((b.postgres - a.postgres) / per),
    kafka: round3((b.kafka - a.kafka) / per),
  };
  out.total = round3(out.server + out.echoWorker + out.postgres + out.kafka);
  return out;
}

async function load(stack, processes, rate, seconds) {
  const before = cpuNow(stack, processes);
  const lg = process.cpuUsage();
  let wrong = 0;
  const result = await autocannon({
    url: stack.urls.dispatcher,
    method: 'POST',
    headers: A2A_HEADERS,
    connections,
    duration: seconds,
    ...(rate > 0 ? { overallRate: rate } : {}),
    requests: [{ setupRequest: (req) => ({ ...req, body: sendMessageBody(true) }) }],
    setupClient: (client) => client.on('body', (buf) => void (buf.toString().includes('"result"') || (wrong += 1))),
  });
  const after = cpuNow(stack, processes);
  const used = process.cpuUsage(lg);
  const n = result.requests.total;
  if (n === 0 || wrong > 0 || result.non2xx > 0 || result.errors > 0) {
    throw new Error(`rate ${rate}: ${n} answers, ${wrong} not a result, ${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  return {
    rate: rate || 'unlimited',
    reqPerSec: Math.round(result.requests.average),
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
    cpuMsPerRequest: { ...cpuBetween(before, after, n), loadGenerator: round3((used.user + used.system) / 1000 / n) },
    // The fit's point: per serving process, its req/s and its CPU ms per second.
    perProcess: { reqPerSec: result.requests.average / processes, cpuMsPerS: cpuBetween(before, after, seconds).servingProcesses },
  };
}

/** Least squares y = fixed + perRequest × x. */
function fit(points) {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  const sxy = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const perRequest = sxy / sxx;
  const fixed = my - perRequest * mx;
  const ssRes = points.reduce((s, p) => s + (p.y - fixed - perRequest * p.x) ** 2, 0);
  const ssTot = points.reduce((s, p) => s + (p.y - my) ** 2, 0);
  return { fixedMsPerS: Math.round(fixed), perRequestMs: round3(perRequest), r2: round3(1 - ssRes / ssTot), points: n };
}

const stacks = [];
for (const processes of processCounts.filter((p) => p >= 1)) {
  const stack = await startDispatchStack('bench-load', { dispatcherProcesses: processes, companions: false });
  try {
    console.error(`${processes} process(es): warm-up ${warmupS} s`);
    await load(stack, processes, 0, warmupS);
    await drained(stack);
    const before = cpuNow(stack, processes);
    await new Promise((r) => setTimeout(r, idleS * 1000));
    const idle = cpuBetween(before, cpuNow(stack, processes), idleS);
    console.error(`${processes} process(es): idle CPU ms/s ${JSON.stringify(idle)}`);
    const runs = [];
    for (let round = 1; round <= rounds; round++) {
      for (const rate of rates) {
        const row = await load(stack, processes, rate, duration);
        row.round = round;
        row.backlogDrainedAfterMs = await drained(stack);
        console.error(
          `${processes} process(es), rate ${row.rate}: ${row.reqPerSec} req/s, p99 ${row.latencyMs.p99} ms, CPU ms/request ${JSON.stringify(row.cpuMsPerRequest)}`,
        );
        runs.push(row);
      }
    }
    const points = runs.flatMap((r) => r.perProcess.cpuMsPerS.map((y) => ({ x: r.perProcess.reqPerSec, y })));
    const byRate = rates.map((rate) => {
      const rs = runs.filter((r) => r.rate === (rate || 'unlimited'));
      const med = (pick) => round3(median(rs.map(pick)));
      return {
        rate: rate || 'unlimited',
        reqPerSec: med((r) => r.reqPerSec),
        p99Ms: med((r) => r.latencyMs.p99),
        cpuMsPerRequest: Object.fromEntries(
          ['server', 'echoWorker', 'postgres', 'kafka', 'total', 'loadGenerator'].map((k) => [k, med((r) => r.cpuMsPerRequest[k])]),
        ),
      };
    });
    stacks.push({ dispatcherProcesses: processes, idleCpuMsPerS: idle, byRate, serverFit: fit(points), runs });
  } finally {
    await stack.stop();
  }
}

const out = {
  date: new Date().toISOString(),
  machine: machine(),
  commit: measuredCommit(),
  load: {
    ...describeLoad({ connections, durationSeconds: duration, warmupSeconds: warmupS, rounds }),
    rates,
    binding: 'JSON-RPC SendMessage, returnImmediately',
  },
  stacks,
};
writeFileSync(`${root}bench/results/dispatch-load.json`, `${JSON.stringify(out, null, 2)}\n`);
console.log(
  JSON.stringify(
    stacks.map(({ dispatcherProcesses, idleCpuMsPerS, byRate, serverFit }) => ({ dispatcherProcesses, idleCpuMsPerS, byRate, serverFit })),
    null,
    2,
  ),
);
