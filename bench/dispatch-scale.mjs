#!/usr/bin/env node
// npm run bench:dispatch-scale — what a second dispatcher process costs per request: the
// dispatcher as `npm start` runs it (apps/dispatcher/dist/main.js) with DISPATCHER_PROCESSES=1 and
// with N (BENCH_DISPATCHER_PROCESSES, 2), each on a stack of its own (database, topics, echo
// worker), JSON-RPC SendMessage with returnImmediately (BENCH_SCALE_SCENARIO=blocking: blocking
// sends), autocannon at BENCH_CONNECTIONS (32), unlimited rate (BENCH_RATE: a set one),
// BENCH_DURATION_S (10) after BENCH_WARMUP_S (30), BENCH_ROUNDS (3) rounds in alternating order.
// Every round starts fresh processes, and each of N processes compiles its hot paths on 1/N of the
// requests: the warm-up is long enough for both set-ups to reach their steady cost, which is what a
// long-running replica pays (with 3 s, server CPU per request was 40–50% higher in both).
// Per request: CPU of every process (the primary and each worker, the echo worker, Postgres,
// Kafka), what Postgres did for it (transactions, rows written and read: what a process
// duplicates shows there), the latency, how busy the cores were and the machine's context
// switches. The ratio is N processes / one, total CPU per request, median over the rounds
// (target ≤ 1.15). Writes bench/results/dispatch-scale.json.
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { startDispatchStack } from './dispatch-stack.mjs';
import { cpuMs, infraCpuMs, machineCpuMs } from './process-cpu.mjs';
import { sendMessageLoad } from './dispatch-requests.mjs';
import { machine } from './run-facts.mjs';
import { median, round3 } from './stats.mjs';
import { integer, oneOf, text } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
const connections = integer('BENCH_CONNECTIONS', 32);
const duration = integer('BENCH_DURATION_S', 10);
const warmupS = integer('BENCH_WARMUP_S', 30);
const rounds = integer('BENCH_ROUNDS', 3);
const processes = integer('BENCH_DISPATCHER_PROCESSES', 2, { min: 2 });
const resultFile = text('BENCH_SCALE_FILE', `${root}bench/results/dispatch-scale.json`);

const rate = integer('BENCH_RATE', 0);
// accept: (a) returnImmediately; blocking: (b), each answer waits for the echo worker's COMPLETED.
const scenario = oneOf('BENCH_SCALE_SCENARIO', 'accept', ['accept', 'blocking']);
const load = (url, seconds) => sendMessageLoad(url, seconds, { connections, returnImmediately: scenario === 'accept', rate });

/** One measured run against a fresh stack of `count` dispatcher processes. */
async function measure(count) {
  const stack = await startDispatchStack('scale', { dispatcherProcesses: count, companions: false, asStarted: true });
  const db = new pg.Client({ connectionString: stack.dbUrl.toString() });
  await db.connect();
  try {
    const dbStat = async () =>
      (
        await db.query(
          `SELECT xact_commit::bigint AS transactions, (tup_inserted + tup_updated + tup_deleted)::bigint AS rows_written,
                  (tup_returned + tup_fetched)::bigint AS rows_read
           FROM pg_stat_database WHERE datname = current_database()`,
        )
      ).rows[0];
    await load(stack.urls.dispatcher, warmupS);
    const pids = stack.serverPids();
    const snap = async () => ({
      servers: pids.map((p) => cpuMs(p) ?? 0),
      worker: cpuMs(stack.worker.pid) ?? 0,
      infra: infraCpuMs(),
      machine: machineCpuMs(),
      db: await dbStat(),
    });
    const before = await snap();
    const result = await load(stack.urls.dispatcher, duration);
    const after = await snap();
    const n = result.requests.total;
    const per = (a, b) => round3((Number(a) - Number(b)) / n);
    const byProcess = pids.map((_, i) => per(after.servers[i], before.servers[i]));
    const cpu = {
      server: round3(byProcess.reduce((a, b) => a + b, 0)),
      echoWorker: per(after.worker, before.worker),
      postgres: per(after.infra.postgres, before.infra.postgres),
      kafka: per(after.infra.kafka, before.infra.kafka),
    };
    cpu.total = round3(cpu.server + cpu.echoWorker + cpu.postgres + cpu.kafka);
    return {
      processes: count,
      requests: n,
      reqPerSec: result.requests.average,
      errors: result.errors + result.non2xx,
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
      // The primary first (with one process, there is none: the process serves itself).
      cpuMsPerRequestByServerProcess: byProcess,
      cpuMsPerRequest: cpu,
      postgresPerRequest: Object.fromEntries(Object.keys(after.db).map((k) => [k, per(after.db[k], before.db[k])])),
      // Whether the cores were the limit (share of both busy, load generator included), and how
      // often they switched between processes: contention a second process adds shows here.
      machineBusyShare:
        after.machine && before.machine
          ? round3((after.machine.busy - before.machine.busy) / (after.machine.all - before.machine.all))
          : null,
      contextSwitchesPerRequest:
        after.machine?.contextSwitches !== undefined ? per(after.machine.contextSwitches, before.machine.contextSwitches) : null,
    };
  } finally {
    await db.end();
    await stack.stop();
  }
}

const runs = [];
for (let r = 0; r < rounds; r++) {
  // Alternating order: whatever the machine does over time falls on both alike.
  const order = r % 2 === 0 ? [1, processes] : [processes, 1];
  const round = {};
  for (const count of order) {
    round[count === 1 ? 'one' : 'many'] = await measure(count);
    console.error(`round ${r + 1}: ${count} process(es): ${JSON.stringify(round[count === 1 ? 'one' : 'many'].cpuMsPerRequest)}`);
  }
  round.cpuPerRequestRatio = round3(round.many.cpuMsPerRequest.total / round.one.cpuMsPerRequest.total);
  runs.push(round);
}
const summary = {
  date: new Date().toISOString(),
  machine: machine(),
  command: 'npm run bench:dispatch-scale',
  scenario,
  load: {
    tool: 'autocannon',
    connections,
    durationSeconds: duration,
    warmupSeconds: warmupS,
    rounds,
    processes,
    rate: rate || 'unlimited',
  },
  cpuPerRequestRatio: median(runs.map((r) => r.cpuPerRequestRatio)),
  target: 1.15,
  rounds: runs,
};
writeFileSync(resultFile, `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify({ cpuPerRequestRatio: summary.cpuPerRequestRatio, ratios: runs.map((r) => r.cpuPerRequestRatio) }));
