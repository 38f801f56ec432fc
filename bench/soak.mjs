#!/usr/bin/env node
// npm run bench:soak — blocking SendMessage through the dispatcher, Kafka and an echo worker (each
// in its own process, as bench:dispatch starts them) at a FIXED rate for a long time: default
// 10 minutes at 50% of the blocking throughput last measured by bench:dispatch. Reports
// throughput, p50/p99, errors and the RSS of every process at start and end (the issue asks for
// no growth beyond 10%). Writes bench/results/soak.json.
// Env: SOAK_DURATION_S (600), SOAK_RATE (req/s; default half of bench/results/dispatch.json (b)),
//      BENCH_CONNECTIONS (32). Flag: --short = 60 s.
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import autocannon from 'autocannon';
import { startDispatchStack } from './dispatch-stack.mjs';

const root = new URL('..', import.meta.url).pathname;
const short = process.argv.includes('--short');
const duration = Number(process.env.SOAK_DURATION_S ?? (short ? 60 : 600));
let measured;
try {
  // (b)'s median over the dispatch bench's rounds.
  const b = JSON.parse(readFileSync(`${root}bench/results/dispatch.json`, 'utf8')).rounds.map((r) => r.b_dispatcher.reqPerSec);
  measured = b.sort((x, y) => x - y)[Math.floor(b.length / 2)];
} catch {
  measured = 100;
}
const rate = Number(process.env.SOAK_RATE ?? Math.max(1, Math.round(measured / 2)));
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Resident set size of a process in MiB, from /proc (Linux). */
const rssMiB = (pid) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : undefined;
};

const stack = await startDispatchStack('soak');
const { urls } = stack;
const procs = { dispatcher: stack.servers.pid, echoWorker: stack.worker.pid };
const headers = { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer demo-acme' };
const body = () =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'soak' }] } },
  });
let summary;
try {
  // Warm-up at the same rate so the start RSS is taken from a process that has served this load.
  await autocannon({
    url: urls.dispatcher,
    method: 'POST',
    headers,
    connections,
    overallRate: rate,
    duration: 10,
    requests: [{ setupRequest: (r) => ({ ...r, body: body() }) }],
  });
  const rssStart = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, rssMiB(pid)]));
  console.error(`soak: ${duration} s at ${rate} req/s (50% of ${measured}), RSS at start ${JSON.stringify(rssStart)}`);
  let wrong = 0;
  const result = await autocannon({
    url: urls.dispatcher,
    method: 'POST',
    headers,
    connections,
    overallRate: rate,
    duration,
    requests: [{ setupRequest: (r) => ({ ...r, body: body() }) }],
    setupClient: (client) => client.on('body', (b) => void (b.toString().includes('TASK_STATE_COMPLETED') || (wrong += 1))),
  });
  const rssEnd = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, rssMiB(pid)]));
  const growth = Object.fromEntries(Object.keys(procs).map((k) => [k, Math.round(((rssEnd[k] - rssStart[k]) / rssStart[k]) * 1000) / 10]));
  summary = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      loadavgAtEnd: loadavg(),
    },
    load: {
      tool: 'autocannon',
      scenario: 'blocking SendMessage via Kafka',
      connections,
      durationSeconds: duration,
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
    rssMiB: { start: rssStart, end: rssEnd, growthPercent: growth },
    rssWithin10Percent: Object.values(growth).every((g) => g <= 10),
  };
} finally {
  await stack.stop();
}
writeFileSync(`${root}bench/results/soak.json`, `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary, null, 2));
process.exit(summary.rssWithin10Percent && summary.result.errors === 0 ? 0 : 1);
