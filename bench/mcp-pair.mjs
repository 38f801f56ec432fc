#!/usr/bin/env node
// The raw MCP SDK pair: the official SDK's Streamable HTTP client (@modelcontextprotocol/client,
// the one the tool gateway uses, negotiating the same way) calling the bench `wait` tool
// (bench/mcp-wait-server.mjs) on one session with `concurrency` calls in flight. It is the
// baseline of the tool scenario of bench/agents.mjs, which imports startWaitServer/runPair; run
// alone, `node bench/mcp-pair.mjs [--json] [--concurrency=256] [--ms=50] [--duration=10]` prints
// one result line. The client runs in a child process of its own (`--client=URL`) so that the
// CPU per call of client and server are counted apart. PAIR_FETCH=http gives the SDK transport the
// tool gateway's node:http fetch instead of the global one: what the transport alone costs.
import { spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { cpuMs } from './process-cpu.mjs';
import { integerOption, oneOf, option } from './settings.mjs';

const here = new URL('.', import.meta.url).pathname;

function spawnLines(args, env = {}) {
  const child = spawn(process.execPath, args, { cwd: `${here}..`, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const r = await lines.next();
    if (r.done) throw new Error(`${args[0]} ended without an answer`);
    return JSON.parse(r.value);
  };
  return { child, next };
}

const stop = (child) =>
  new Promise((r) => {
    if (child.exitCode !== null) return r();
    child.once('exit', r);
    child.kill('SIGTERM');
  });

/** Starts the wait server in its own process; `json` selects `enableJsonResponse`. */
export async function startWaitServer({ json }) {
  const { child, next } = spawnLines([`${here}mcp-wait-server.mjs`], { MCP_JSON_RESPONSE: json ? '1' : '0' });
  const { url } = await next();
  return { url, pid: child.pid, stop: () => stop(child) };
}

/**
 * Runs the SDK client against `server` (from startWaitServer); returns calls/s and the CPU per
 * call (ms) of the client and of the server process.
 */
export async function runPair(server, { concurrency = 256, ms = 50, durationS = 10 } = {}) {
  const { child, next } = spawnLines([
    `${here}mcp-pair.mjs`,
    `--client=${server.url}`,
    `--concurrency=${concurrency}`,
    `--ms=${ms}`,
    `--duration=${durationS}`,
  ]);
  try {
    await next(); // connected and warmed up
    const serverBefore = cpuMs(server.pid);
    child.stdin.write('go\n');
    const result = await next();
    const serverAfter = cpuMs(server.pid);
    const toolServer = serverBefore === undefined ? undefined : Math.round(((serverAfter - serverBefore) / result.calls) * 1000) / 1000;
    return { ...result, cpuMsPerCall: { ...result.cpuMsPerCall, toolServer } };
  } finally {
    await stop(child);
  }
}

/** The client side: one session, `concurrency` loops each calling `wait` back to back. */
async function client(url) {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const concurrency = integerOption('concurrency', 256);
  const ms = integerOption('ms', 50, { min: 0 });
  const durationS = integerOption('duration', 10);
  const c = new Client({ name: 'bench-pair', version: '0.1.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  const transport = new StreamableHTTPClientTransport(
    new URL(url),
    oneOf('PAIR_FETCH', undefined, ['http']) === 'http' ? { fetch: (await import('@mesh/tool-gateway')).httpFetch() } : {},
  );
  await c.connect(transport);
  // Calls without a signal of their own all pass the transport's signal to fetch, which adds a
  // listener per call and removes it only when the request is collected: past fetch's limit of
  // 1,500 every call prints a MaxListenersExceededWarning, which is not the SDK's cost to measure.
  setMaxListeners(0, transport._abortController.signal);
  await c.listTools();
  const call = () => c.callTool({ name: 'wait', arguments: { ms } });
  const loops = async (until, counter) => {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < until) {
          const r = await call();
          if (r.isError) throw new Error(`wait failed: ${JSON.stringify(r)}`);
          counter.n++;
        }
      }),
    );
  };
  await loops(Date.now() + 2000, { n: 0 }); // warm-up: JIT, connections
  process.stdout.write(`${JSON.stringify({ ready: true, protocol: c.getNegotiatedProtocolVersion() })}\n`);
  await new Promise((r) => process.stdin.once('data', r));
  const counter = { n: 0 };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await loops(Date.now() + durationS * 1000, counter);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const out = {
    concurrency,
    toolMs: ms,
    protocol: c.getNegotiatedProtocolVersion(),
    calls: counter.n,
    seconds: Math.round(seconds * 100) / 100,
    callsPerSec: Math.round(counter.n / seconds),
    cpuMsPerCall: { client: Math.round(((cpu.user + cpu.system) / 1000 / counter.n) * 1000) / 1000 },
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  await c.close();
}

const clientUrl = option('client');
if (clientUrl) {
  await client(clientUrl);
  process.exit(0);
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const load = {
    concurrency: integerOption('concurrency', 256),
    ms: integerOption('ms', 50, { min: 0 }),
    durationS: integerOption('duration', 10),
  };
  const server = await startWaitServer({ json: process.argv.includes('--json') });
  try {
    const r = await runPair(server, load);
    console.log(JSON.stringify({ enableJsonResponse: process.argv.includes('--json'), ...r }));
  } finally {
    await server.stop();
  }
}
