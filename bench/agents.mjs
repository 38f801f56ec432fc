#!/usr/bin/env node
// npm run bench:agents — end to end with echo-agent: A2A JSON-RPC blocking SendMessage to the
// dispatcher → Kafka → worker process(es) → events → COMPLETED answer. Latency is SendMessage to
// COMPLETED. Scenarios: 1, 2 and 4 worker processes (same 4 partitions), then one worker whose turns
// each await a 50 ms MCP tool with in-flight 256. Then the worker alone with echo: a backlog of
// commands produced straight onto Kafka, turns/s until every final event is back (the worker's own
// cost, without the dispatcher), BENCH_ROUNDS rounds. Last, rounds of the worker alone with the tool
// against the raw MCP SDK pair in the same response mode (bench/agents-tool.mjs). Writes
// bench/results/agents.json (BENCH_ONLY=alone: only the echo backlog, into agents-alone.json;
// BENCH_ONLY=tool: only the tool scenario, into agents-tool.json).
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { BusProducer, createKafka } from '@mesh/bus';
import { decodeEnvelope, newId, TopicNames } from '@mesh/contract';
import { echoCommand, toolScenario } from './agents-tool.mjs';
import { cpuMs, infraCpuMs } from './process-cpu.mjs';
import { startWaitServer } from './mcp-pair.mjs';
import { median } from './stats.mjs';
import { agentsNodeFlags, dispatcherNodeFlags } from '../scripts/node-flags.mjs';
import { A2A_HEADERS } from './dispatch-requests.mjs';
import { machine } from './run-facts.mjs';
import { adminDatabaseUrl, integer, kafkaBrokers, oneOf, text } from './settings.mjs';

const root = new URL('..', import.meta.url).pathname;
// Every setting is read (and checked) before anything starts.
const duration = integer('BENCH_DURATION_S', 10);
const connections = integer('BENCH_CONNECTIONS', 64);
// BENCH_ONLY=alone: only the worker-alone echo backlog; =tool: only the tool scenario (quick
// iterations on the worker's cost).
const only = oneOf('BENCH_ONLY', undefined, ['alone', 'tool']);
const n = integer('BENCH_BACKLOG', 10000);
const rounds = integer('BENCH_ROUNDS', 3);
const toolRounds = integer('BENCH_TOOL_ROUNDS', 3);
const toolBacklog = integer('BENCH_TOOL_BACKLOG', 3000);
const mcpSessions = integer('BENCH_MCP_SESSIONS', 1);
// BENCH_ECHO_IN_FLIGHT: the worker's AGENTS_MAX_IN_FLIGHT for the echo backlog (default: the agent's channel setting).
const echoInFlight = integer('BENCH_ECHO_IN_FLIGHT', undefined);
// The MCP tool server's answers: JSON (`enableJsonResponse`) or one SSE stream per call.
const toolJson = oneOf('BENCH_MCP_RESPONSE', 'json', ['json', 'sse']) === 'json';
const workerNodeArgs = text('BENCH_WORKER_NODE_ARGS', '').split(' ').filter(Boolean);
const run = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const adminUrl = adminDatabaseUrl().toString();
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/mesh_bench_agents_${run}`;
const baseEnv = {
  ...process.env,
  DATABASE_URL: dbUrl.toString(),
  TOPIC_PREFIX: `bench${run}.`,
  KAFKA_BROKERS: kafkaBrokers().join(','),
};

const servers = spawn(process.execPath, [...dispatcherNodeFlags, `${root}bench/agents-servers.mjs`], {
  cwd: root,
  env: baseEnv,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const urls = await new Promise((resolve, reject) => {
  servers.once('exit', (code) => reject(new Error(`servers exited with ${code}`)));
  createInterface({ input: servers.stdout }).once('line', (line) => resolve(JSON.parse(line)));
});
const agentUrl = `${urls.dispatcher}/a2a/echo-agent`;
// The MCP tool server, a process of its own.
const toolServer = await startWaitServer({ json: toolJson });
urls.tools = toolServer.url;

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

async function startWorkers(n, extraEnv = {}) {
  const workers = [];
  for (let i = 0; i < n; i++) {
    const port = await freePort();
    // The flags npm start runs a worker with; BENCH_WORKER_NODE_ARGS: extra ones (later flags win),
    // e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
    const nodeArgs = [...agentsNodeFlags, ...workerNodeArgs];
    const child = spawn(process.execPath, [...nodeArgs, `${root}bench/agents-worker.mjs`], {
      cwd: root,
      env: {
        ...baseEnv,
        AGENTS_PORT: String(port),
        AGENTS_RUN: 'echo-agent',
        AGENTS_WORKER_ID: `bench-${i}`,
        BENCH_TOOLS_URL: urls.tools,
        ...extraEnv,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    workers.push({ child, port });
  }
  for (const w of workers) {
    for (let i = 0; ; i++) {
      if (i > 300) throw new Error('worker did not become ready');
      const ok = await fetch(`http://127.0.0.1:${w.port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return workers;
}

async function stopWorkers(workers) {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise((r) => {
          w.child.once('exit', r);
          w.child.kill('SIGTERM');
        }),
    ),
  );
}

const headers = A2A_HEADERS;
const body = (text) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately: false } },
  });

/** Sends until answers come back COMPLETED (group joined, partitions assigned). */
async function warmUp(text) {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(agentUrl, { method: 'POST', headers, body: body(text) }).then(
      (r) => r.json(),
      () => ({}),
    );
    if (res.result?.task?.status?.state === 'TASK_STATE_COMPLETED') {
      // A few more in parallel so every worker's partitions are warm.
      await Promise.all(
        Array.from({ length: 32 }, () => fetch(agentUrl, { method: 'POST', headers, body: body(text) }).then((r) => r.text())),
      );
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('echo-agent never answered COMPLETED');
}

async function scenario(name, { workers: n, text, conns, env }) {
  const workers = await startWorkers(n, env);
  try {
    await warmUp(text);
    let wrong = 0;
    const result = await autocannon({
      url: agentUrl,
      method: 'POST',
      headers,
      connections: conns,
      duration,
      timeout: 30,
      requests: [{ setupRequest: (req) => ({ ...req, body: body(text) }) }],
      setupClient: (client) =>
        client.on('body', (buf) => {
          if (!buf.toString().includes('TASK_STATE_COMPLETED')) wrong += 1;
        }),
    });
    const completedPerSec = (result.requests.total - wrong - result.non2xx) / duration;
    const out = {
      scenario: name,
      workers: n,
      connections: conns,
      completed: result.requests.total - wrong - result.non2xx,
      completedPerSec: Math.round(completedPerSec),
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, avg: result.latency.average },
      notCompleted: wrong,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
    };
    console.error(
      `${name}: ${out.completedPerSec} completed/s, p50 ${out.latencyMs.p50} ms, p99 ${out.latencyMs.p99} ms, not completed ${wrong}, errors ${out.errors}`,
    );
    return out;
  } finally {
    await stopWorkers(workers);
  }
}

/**
 * Runs `fn` with the dispatcher process stopped (SIGSTOP), for the worker-alone runs: its projector
 * would otherwise read every event of the backlog and look each task up in Postgres, on the same
 * two cores as the worker it is meant to leave alone.
 */
async function withDispatcherPaused(fn) {
  servers.kill('SIGSTOP');
  try {
    return await fn();
  } finally {
    servers.kill('SIGCONT');
  }
}

/**
 * Worker alone: one worker process; per round `n` commands produced straight onto its command
 * topic at once (keyed as the dispatcher keys them for the bench card's channel), and the time
 * until every final event is back. A first small round (discarded) joins the group and warms the
 * JIT. CPU per turn of the worker, Postgres and the Kafka broker from /proc, as bench:dispatch reads it.
 */
async function backlog(name, { text, n, rounds = 1, env }) {
  const workers = await startWorkers(1, env);
  const kafka = createKafka({ brokers: baseEnv.KAFKA_BROKERS.split(','), clientId: 'bench-backlog' });
  const topics = new TopicNames(baseEnv.TOPIC_PREFIX);
  const consumer = kafka.consumer({ groupId: `bench-backlog-${newId()}`, maxWaitTimeInMs: 50 });
  const producer = new BusProducer(kafka);
  let waiting = new Set();
  let onAll = () => undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: topics.events(), fromBeginning: false });
    // A fresh group read once: committing its offsets would only add broker work to the measured window.
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          const e = decodeEnvelope({ headers: message.headers, value: message.value });
          if (e.kind === 'task.status' && e.body.final && waiting.delete(e.identity.taskId) && waiting.size === 0) onAll();
        }
      },
    });
    await new Promise((r) => setTimeout(r, 3000)); // group join
    await producer.connect();
    const round = async (count) => {
      const all = new Promise((r) => (onAll = r));
      const envelopes = Array.from({ length: count }, () => echoCommand(text));
      waiting = new Set(envelopes.map((e) => e.taskId));
      const before = infraCpuMs();
      const pid = workers[0].child.pid;
      const ownBefore = [cpuMs(pid), cpuMs(process.pid)];
      const started = Date.now();
      await Promise.all(envelopes.map((e) => producer.send(topics.commands('echo-agent'), e.key, e.env)));
      await all;
      const seconds = (Date.now() - started) / 1000;
      const after = infraCpuMs();
      const spent = [
        cpuMs(pid) - ownBefore[0],
        after.postgres - before.postgres,
        after.kafka - before.kafka,
        cpuMs(process.pid) - ownBefore[1],
      ];
      const per = (i) => Math.round((spent[i] / count) * 1000) / 1000;
      return {
        seconds,
        turnsPerSec: Math.round(count / seconds),
        cpuMsPerTurn: { worker: per(0), postgres: per(1), kafka: per(2), loadGenerator: per(3) },
      };
    };
    const measured = [];
    await withDispatcherPaused(async () => {
      await round(Math.min(n, 500)); // discarded: group join, JIT, pools
      for (let i = 0; i < rounds; i++) {
        const r = await round(n);
        console.error(
          `${name}, round ${i + 1}: ${r.turnsPerSec} turns/s (${n} in ${r.seconds.toFixed(1)} s), CPU ms/turn ${JSON.stringify(r.cpuMsPerTurn)}`,
        );
        measured.push(r);
      }
    });
    const tps = measured.map((r) => r.turnsPerSec);
    const cpu = (k) => Math.round(median(measured.map((r) => r.cpuMsPerTurn[k])) * 1000) / 1000;
    const out = {
      scenario: name,
      workers: 1,
      backlog: n,
      rounds: measured,
      turnsPerSec: Math.round(median(tps)),
      spread: { min: Math.min(...tps), max: Math.max(...tps) },
      cpuMsPerTurn: { worker: cpu('worker'), postgres: cpu('postgres'), kafka: cpu('kafka'), loadGenerator: cpu('loadGenerator') },
    };
    console.error(
      `${name}: median ${out.turnsPerSec} turns/s (min ${out.spread.min}, max ${out.spread.max}), CPU ms/turn ${JSON.stringify(out.cpuMsPerTurn)}`,
    );
    return out;
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await stopWorkers(workers);
  }
}

const results = [];
const alone = [];
let tool;
try {
  if (only === undefined) {
    // Discarded: warms the dispatcher, Postgres and the JIT so the first measured scenario is not penalised.
    await scenario('warm-up (discarded)', { workers: 1, text: 'bench', conns: connections });
    for (const w of [1, 2, 4]) results.push(await scenario(`echo, ${w} worker(s)`, { workers: w, text: 'bench', conns: connections }));
    results.push(
      await scenario('50 ms tool, 1 worker, in-flight 256', {
        workers: 1,
        text: '/wait 50',
        conns: 256,
        env: { AGENTS_MAX_IN_FLIGHT: '256' },
      }),
    );
  }
  const echoEnv = echoInFlight !== undefined ? { AGENTS_MAX_IN_FLIGHT: String(echoInFlight) } : {};
  if (only !== 'tool') alone.push(await backlog('worker alone, echo', { text: 'bench', n, rounds, env: echoEnv }));
  if (only !== 'alone') {
    tool = await toolScenario(
      { baseEnv, startWorkers, stopWorkers, warmUp, withDispatcherPaused },
      {
        server: toolServer,
        rounds: toolRounds,
        n: toolBacklog,
        inFlight: 256,
        durationS: duration,
        json: toolJson,
        sessions: mcpSessions,
      },
    );
  }
} finally {
  await toolServer.stop();
  servers.kill('SIGTERM');
  await new Promise((r) => servers.once('exit', r));
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(`mesh_bench_agents_${run}`)} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
}

const summary = {
  date: new Date().toISOString(),
  machine: machine(),
  load: { tool: 'autocannon', durationSeconds: duration, binding: 'JSON-RPC SendMessage (blocking)', tenant: 'acme' },
  results,
  workerAlone: alone,
  // Worker alone with the 50 ms tool vs the raw MCP SDK pair, same run, concurrency and response mode.
  ...(tool ? { tool } : {}),
  summary: {
    ...(alone.length ? { agents_worker_echo_turns_per_s: alone[0].turnsPerSec } : {}),
    ...(tool
      ? {
          agents_tool_vs_mcp_ratio: tool.ratio.median,
          agents_tool_vs_mcp_ratio_spread: { min: tool.ratio.min, max: tool.ratio.max, rounds: tool.rounds.length },
          agents_tool_worker_turns_per_s: tool.workerTurnsPerSec,
          agents_tool_mcp_pair_calls_per_s: tool.pairCallsPerSec,
          agents_tool_cpu_ms_per_turn: tool.cpuMsPerTurn,
          agents_tool_mcp_pair_cpu_ms_per_call: tool.pairCpuMsPerCall,
          agents_tool_vs_mcp_cpu_bound_ratio: tool.cpuBound.ratio,
          agents_tool_vs_mcp_ratio_whole_round: tool.ratioWholeRound,
        }
      : {}),
  },
};
mkdirSync(`${root}bench/results`, { recursive: true });
// A partial run (BENCH_ONLY) does not replace the full run's file.
writeFileSync(`${root}bench/results/${only ? `agents-${only}` : 'agents'}.json`, `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary.summary, null, 2));
