#!/usr/bin/env node
// npm run bench:dispatch-stages — where a blocking SendMessage's time goes under bench:dispatch's
// load (b): the dispatcher (one process) and the echo worker, BENCH_CONNECTIONS (32) connections
// for BENCH_DURATION_S, BENCH_ROUNDS rounds. Each task of a round's steady part (its first and last
// second left out) is followed through four timestamps on this one machine's clock:
//   accepted   dispatcher.tasks.created_at — when the accept statement that wrote it began
//   commanded  the command record's timestamp — when the outbox relay handed it to its producer
//   finished   the final status event's timestamp — when the worker handed it to its producer
//   projected  dispatcher.tasks.updated_at — when the projection statement of that event began
// and how busy the machine's cores were (/proc/stat) while the load ran, with the machine's CPU per
// request (every process, the load generator's too). The rest of a request's
// time (its HTTP exchange, waiting for and running the accept statement, the waiter's wake-up and
// the answer) is the client's latency less accepted → projected. Writes
// bench/results/dispatch-stages.json (dispatch-stages-c<N>.json with other than 32 connections).
// Not part of `npm run bench`. Needs the local Kafka and Postgres (see README).
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { createKafka } from '@mesh/bus';
import { decodeEnvelope, TopicNames } from '@mesh/contract';
import { describeLoad, drained, sendMessageLoad } from './dispatch-requests.mjs';
import { startDispatchStack } from './dispatch-stack.mjs';
import { machineCpuMs } from './process-cpu.mjs';
import { median, quantile, round3, spread } from './stats.mjs';
import { machine, measuredCommit } from './run-facts.mjs';
import { integer } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
const connections = integer('BENCH_CONNECTIONS', 32);
// At least 3: the first and last second of each round are left out.
const duration = integer('BENCH_DURATION_S', 10, { min: 3 });
const warmupS = integer('BENCH_WARMUP_S', 3);
const rounds = integer('BENCH_ROUNDS', 3);
const commit = measuredCommit();

const summary = (xs) => ({ p50: round3(quantile(xs, 0.5)), p90: round3(quantile(xs, 0.9)), p99: round3(quantile(xs, 0.99)) });

/** (b) for `seconds`; `onAnswer` sees every answer's body. */
const load = (url, seconds, onAnswer) => sendMessageLoad(url, seconds, { connections, returnImmediately: false, onAnswer });

/** Every task id's command and final-event timestamps (ms), read from the start of both topics. */
async function recordTimes(brokers, topics, wanted) {
  const kafka = createKafka({ brokers, clientId: 'bench-stages' });
  const consumer = kafka.consumer({ groupId: `bench-stages-${Date.now()}`, maxWaitTimeInMs: 100 });
  const commanded = new Map();
  const finished = new Map();
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topics.commands('echo-agent'), topics.events()], fromBeginning: true });
    let lastRecordAt = Date.now();
    void consumer.run({
      eachMessage: async ({ topic, message }) => {
        lastRecordAt = Date.now();
        let env;
        try {
          env = decodeEnvelope({ headers: message.headers, value: message.value });
        } catch {
          return; // not an envelope: no stage of a task
        }
        const at = Number(message.timestamp);
        if (topic === topics.events()) {
          if (env.kind === 'task.status' && env.body.final) finished.set(env.identity.taskId, at);
        } else if (env.kind === 'task.run' && !commanded.has(env.identity.taskId)) commanded.set(env.identity.taskId, at);
      },
    });
    const complete = () => wanted.every((id) => commanded.has(id) && finished.has(id));
    while (!complete() && Date.now() - lastRecordAt < 15_000) await new Promise((r) => setTimeout(r, 250));
  } finally {
    await consumer.disconnect();
  }
  return { commanded, finished };
}

const stack = await startDispatchStack('bench-stages', { companions: false });
const db = new pg.Client({ connectionString: stack.dbUrl.toString() });
const runs = [];
try {
  await db.connect();
  const url = stack.urls.dispatcher;
  await load(url, warmupS);
  await drained(stack);
  for (let r = 1; r <= rounds; r++) {
    const cpuBefore = machineCpuMs();
    const startedAt = Date.now();
    let wrong = 0;
    const result = await load(url, duration, (buf) => {
      if (!buf.toString().includes('TASK_STATE_COMPLETED')) wrong += 1;
    });
    const endedAt = Date.now();
    const cpuAfter = machineCpuMs();
    await drained(stack);
    const tasks = (
      await db.query(
        `SELECT id, extract(epoch FROM created_at) * 1000 AS accepted, extract(epoch FROM updated_at) * 1000 AS projected
         FROM dispatcher.tasks WHERE created_at BETWEEN to_timestamp($1 / 1000.0) AND to_timestamp($2 / 1000.0)`,
        [startedAt + 1000, endedAt - 1000],
      )
    ).rows.map((t) => ({ id: t.id, accepted: Number(t.accepted), projected: Number(t.projected) }));
    runs.push({
      round: r,
      result,
      wrong,
      tasks,
      busy: cpuBefore && cpuAfter ? (cpuAfter.busy - cpuBefore.busy) / (cpuAfter.all - cpuBefore.all) : undefined,
      // Every process's CPU, the load generator's too: what a request costs the whole machine.
      machineMs: cpuBefore && cpuAfter ? (cpuAfter.busy - cpuBefore.busy) / result.requests.total : undefined,
    });
    console.error(
      `round ${r}/${rounds}: ${result.requests.average.toFixed(0)} req/s, p50 ${result.latency.p50} ms, ${tasks.length} tasks in the steady part`,
    );
  }
  const { commanded, finished } = await recordTimes(
    stack.kafkaBrokers,
    new TopicNames(stack.topicPrefix),
    runs.flatMap((run) => run.tasks.map((t) => t.id)),
  );
  const perRound = runs.map(({ round, result, wrong, tasks, busy, machineMs }) => {
    const seen = tasks.filter((t) => commanded.has(t.id) && finished.has(t.id));
    if (seen.length < tasks.length)
      throw new Error(`round ${round}: ${tasks.length - seen.length} tasks without their command or final event`);
    if (wrong > 0 || result.non2xx > 0 || result.errors > 0)
      throw new Error(`round ${round}: ${wrong} wrong answers, ${result.non2xx} non-2xx, ${result.errors} errors`);
    const stage = (f) => summary(seen.map(f));
    return {
      round,
      reqPerSec: round3(result.requests.average),
      clientLatencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99 },
      machineBusy: busy === undefined ? undefined : round3(busy),
      machineCpuMsPerRequest: machineMs === undefined ? undefined : round3(machineMs),
      tasks: seen.length,
      stagesMs: {
        acceptedToCommanded: stage((t) => commanded.get(t.id) - t.accepted),
        commandedToFinished: stage((t) => finished.get(t.id) - commanded.get(t.id)),
        finishedToProjected: stage((t) => t.projected - finished.get(t.id)),
        acceptedToProjected: stage((t) => t.projected - t.accepted),
      },
    };
  });
  const med = (f) => round3(median(perRound.map(f)));
  const out = {
    benchmark: 'dispatch-stages',
    date: new Date().toISOString(),
    machine: machine(),
    commit,
    load: {
      ...describeLoad({ connections, durationSeconds: duration, warmupSeconds: warmupS, rounds }),
      scenario: '(b) blocking SendMessage',
    },
    method:
      'tasks accepted in the steady part of each round (first and last second left out); stage times from tasks.created_at, ' +
      "the command and final event records' timestamps and tasks.updated_at; medians over rounds of each round's quantiles",
    summary: {
      reqPerSec: spread(perRound.map((p) => p.reqPerSec)),
      clientLatencyP50Ms: spread(perRound.map((p) => p.clientLatencyMs.p50)),
      machineBusy: perRound.every((p) => p.machineBusy !== undefined) ? spread(perRound.map((p) => p.machineBusy)) : undefined,
      machineCpuMsPerRequest: perRound.every((p) => p.machineCpuMsPerRequest !== undefined)
        ? spread(perRound.map((p) => p.machineCpuMsPerRequest))
        : undefined,
      stagesP50Ms: {
        acceptedToCommanded: med((p) => p.stagesMs.acceptedToCommanded.p50),
        commandedToFinished: med((p) => p.stagesMs.commandedToFinished.p50),
        finishedToProjected: med((p) => p.stagesMs.finishedToProjected.p50),
        acceptedToProjected: med((p) => p.stagesMs.acceptedToProjected.p50),
        outsideAcceptedToProjected: med((p) => p.clientLatencyMs.p50 - p.stagesMs.acceptedToProjected.p50),
      },
    },
    rounds: perRound,
  };
  writeFileSync(
    `${root}bench/results/dispatch-stages${connections === 32 ? '' : `-c${connections}`}.json`,
    JSON.stringify(out, null, 2) + '\n',
  );
  console.log(JSON.stringify(out.summary, null, 2));
} finally {
  await db.end().catch(() => undefined);
  await stack.stop();
}
