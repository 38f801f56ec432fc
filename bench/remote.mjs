#!/usr/bin/env node
// npm run bench:remote — a blocking SendMessage to a remote A2A agent (another team's server, built
// with the official @a2a-js/sdk server, examples/remote-agent/server.mjs) called two ways in one run:
//   (direct) the official client's request straight to the remote agent, as a caller would without the mesh;
//   (mesh)   the same request to the dispatcher, through Kafka to the bridge worker (apps/bridge),
//            which calls the remote agent with the official A2A client, and back.
// The remote agent works BENCH_REMOTE_WORK_MS (100) per task, as an agent does: throughput is then
// bound by how many calls are in flight, and the mesh's cost shows as latency and CPU. BENCH_ROUNDS
// rounds (3), each (direct) then (mesh) at BENCH_CONNECTIONS (32) for BENCH_DURATION_S (10); figures
// are medians of the per-round ratios. CPU per request is by process: remote agent, dispatcher,
// bridge, directory, Postgres, Kafka. Writes bench/results/remote.json. Needs the local Kafka and
// Postgres (see README).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { DEMO_API_KEYS } from '@mesh/auth';
import { A2A_HEADERS, describeLoad, sendMessageBody } from './dispatch-requests.mjs';
import { BENCH_ADMISSION, benchRun, freePort } from './dispatch-stack.mjs';
import { cpuMs, infraCpuMs } from './process-cpu.mjs';
import { machine, measuredCommit } from './run-facts.mjs';
import { integer } from './settings.mjs';
import { median } from './stats.mjs';

const root = new URL('..', import.meta.url).pathname;
const connections = integer('BENCH_CONNECTIONS', 32);
const duration = integer('BENCH_DURATION_S', 10);
const warmupS = integer('BENCH_WARMUP_S', 3);
const rounds = integer('BENCH_ROUNDS', 3);
const workMs = integer('BENCH_REMOTE_WORK_MS', 100);
const commit = measuredCommit();

const { env: base, dropDatabase } = benchRun('bench-remote');
const children = [];

/** Starts a process; resolves once `ready(line)` accepts a stdout line (or once HTTP answers on `port`). */
async function start(name, script, env, { firstLine = false, port } = {}) {
  const c = spawn(process.execPath, [`${root}${script}`], { cwd: root, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(c);
  const exited = new Promise((_, reject) => c.once('exit', (code) => reject(new Error(`${name} exited with ${code}`))));
  exited.catch(() => undefined);
  if (firstLine) {
    const line = await Promise.race([new Promise((r) => createInterface({ input: c.stdout }).once('line', r)), exited]);
    return { c, line };
  }
  c.stdout.resume();
  for (let i = 0; ; i++) {
    const up = await Promise.race([
      fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
      exited,
    ]);
    if (up) return { c };
    if (i === 600) throw new Error(`${name} did not answer /healthz within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopAll() {
  for (const c of children.reverse()) {
    if (c.exitCode !== null) continue;
    c.kill('SIGTERM');
    await new Promise((r) => c.once('exit', r));
  }
  await dropDatabase();
}

const ports = { directory: await freePort(), dispatcher: await freePort(), bridge: await freePort() };
let remote, directory, dispatcher, bridge;
const perRound = [];
try {
  remote = await start('remote agent', 'examples/remote-agent/server.mjs', { PORT: '0', WORK_MS: String(workMs) }, { firstLine: true });
  const remoteUrl = JSON.parse(remote.line).url;
  directory = await start(
    'directory',
    'apps/directory/dist/main.js',
    { DEMO: 'true', DIRECTORY_PORT: String(ports.directory) },
    { port: ports.directory },
  );
  dispatcher = await start(
    'dispatcher',
    'apps/dispatcher/dist/main.js',
    { ...BENCH_ADMISSION, AUTH_API_KEYS: DEMO_API_KEYS, DISPATCHER_PORT: String(ports.dispatcher) },
    { port: ports.dispatcher },
  );
  bridge = await start(
    'bridge',
    'apps/bridge/dist/main.js',
    {
      AGENTS_PORT: String(ports.bridge),
      AGENTS_DIRECTORY_URL: `http://127.0.0.1:${ports.directory}`,
      AGENTS_DIRECTORY_TOKEN: 'demo-acme',
      BRIDGE_REMOTE_AGENTS: JSON.stringify([
        {
          id: 'remote-echo',
          cardUrl: `${remoteUrl}/.well-known/agent-card.json`,
          allowLoopback: true,
          maxInFlight: Math.max(64, connections * 2),
        },
      ]),
    },
    { port: ports.bridge },
  );
  const urls = { direct: `${remoteUrl}/a2a/jsonrpc`, mesh: `http://127.0.0.1:${ports.dispatcher}/a2a/remote-echo` };

  /** One blocking SendMessage; its final state (the mesh admits the agent once the bridge heartbeats). */
  const stateOf = async (url) => {
    const res = await fetch(url, { method: 'POST', headers: A2A_HEADERS, body: sendMessageBody(false) });
    const json = await res.json().catch(() => ({}));
    return json.result?.task?.status?.state ?? JSON.stringify(json).slice(0, 200);
  };
  for (let i = 0; (await stateOf(urls.mesh)) !== 'TASK_STATE_COMPLETED'; i++) {
    if (i === 120) throw new Error(`the mesh did not complete a task to remote-echo within 60 s: ${await stateOf(urls.mesh)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const direct = await stateOf(urls.direct);
  if (direct !== 'TASK_STATE_COMPLETED') throw new Error(`the remote agent answered ${direct}`);

  const pids = {
    remote: remote.c.pid,
    dispatcher: dispatcher.c.pid,
    bridge: bridge.c.pid,
    directory: directory.c.pid,
  };
  const cpuNow = () => ({ ...Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuMs(p) ?? 0])), ...infraCpuMs() });
  const load = async (name, url, seconds = duration, record = true) => {
    const before = cpuNow();
    let wrong = 0;
    const result = await autocannon({
      url,
      method: 'POST',
      headers: A2A_HEADERS,
      connections,
      duration: seconds,
      requests: [{ setupRequest: (req) => ({ ...req, body: sendMessageBody(false) }) }],
      setupClient: (client) =>
        client.on('body', (buf) => {
          if (!buf.toString().includes('TASK_STATE_COMPLETED')) wrong += 1;
        }),
    });
    if (!record) return undefined;
    const after = cpuNow();
    const n = result.requests.total;
    const cpuMsPerCall = Object.fromEntries(Object.keys(after).map((k) => [k, Math.round(((after[k] - before[k]) / n) * 1000) / 1000]));
    // The direct call's cost is the remote agent's own; the mesh's every process of the path.
    const path = name === 'direct' ? ['remote'] : Object.keys(after);
    cpuMsPerCall.total = Math.round(path.reduce((s, k) => s + cpuMsPerCall[k], 0) * 1000) / 1000;
    const row = {
      scenario: name,
      requests: n,
      reqPerSec: result.requests.average,
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      wrongAnswers: wrong,
      cpuMsPerCall,
    };
    console.error(
      `${name}: ${row.reqPerSec.toFixed(0)} calls/s, p50 ${row.latencyMs.p50} ms, p99 ${row.latencyMs.p99} ms, wrong ${wrong}, errors ${row.errors}, CPU ms/call ${JSON.stringify(cpuMsPerCall)}`,
    );
    return row;
  };
  await load('direct', urls.direct, warmupS, false);
  await load('mesh', urls.mesh, warmupS, false);
  for (let r = 1; r <= rounds; r++) {
    console.error(`round ${r} of ${rounds}`);
    perRound.push({ direct: await load('direct', urls.direct), mesh: await load('mesh', urls.mesh) });
  }
} finally {
  await stopAll();
}

const round2 = (x) => Math.round(x * 100) / 100;
const ratio = (pick) => {
  const each = perRound.map((r) => round2(pick(r.mesh) / pick(r.direct)));
  return { median: round2(median(each)), min: Math.min(...each), max: Math.max(...each), perRound: each };
};
const summary = {
  remote_mesh_throughput_ratio: ratio((row) => row.reqPerSec),
  remote_mesh_p50_ratio: ratio((row) => row.latencyMs.p50),
  remote_direct_cpu_ms_per_call: median(perRound.map((r) => r.direct.cpuMsPerCall.total)),
  remote_mesh_cpu_ms_per_call: median(perRound.map((r) => r.mesh.cpuMsPerCall.total)),
  target: { remote_mesh_throughput_ratio: '>= 0.8' },
};
const out = {
  benchmark: 'remote',
  at: new Date().toISOString(),
  commit,
  machine: machine(),
  load: { ...describeLoad({ connections, durationSeconds: duration, warmupSeconds: warmupS, rounds }), remoteWorkMs: workMs },
  summary,
  rounds: perRound,
};
writeFileSync(process.env.BENCH_REMOTE_FILE ?? `${root}bench/results/remote.json`, `${JSON.stringify(out, null, 2)}\n`);
console.error(JSON.stringify(summary));
