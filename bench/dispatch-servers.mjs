// Child process of bench/dispatch.mjs, run once per server: `dispatcher` starts the dispatcher (the
// demo echo-agent is registered and served by bench/dispatch-worker.mjs), `reference` a reference A2A
// server built from the SDK's own sample pattern, `bare` the floor of an HTTP exchange in Node (see
// serveBare); each prints its URL as one JSON line. Each in a
// process of its own, apart from the load generator, so neither shares an event loop, and the
// dispatcher's telemetry (AsyncLocalStorage context, the kafkajs instrumentation) costs the
// reference nothing.
import express from 'express';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { TaskState, Role } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { DEMO_API_KEYS, loadAuthOptions } from '@mesh/auth';
import { loadDispatcherConfig, startDispatcher } from '@mesh/app-dispatcher';
import { startTelemetry } from '@mesh/telemetry';
import { BENCH_ADMISSION } from './dispatch-stack.mjs';

const role = process.argv[2];
const serve = { dispatcher: serveDispatcher, reference: serveReference, bare: serveBare }[role];
if (!serve) throw new Error(`usage: dispatch-servers.mjs dispatcher|reference|bare (got ${role})`);

/** The dispatcher, with telemetry as `apps/dispatcher/dist/main.js` runs it (runMain): trace context and the kafkajs instrumentation on, no exporter unless OTEL_* asks for one. */
async function serveDispatcher() {
  startTelemetry({ serviceName: 'agent-mesh-dispatcher' });
  const config = {
    ...loadDispatcherConfig({ ...process.env, ...BENCH_ADMISSION }),
    DISPATCHER_PORT: 0,
  };
  const dispatcher = await startDispatcher(config, { auth: loadAuthOptions({ AUTH_API_KEYS: DEMO_API_KEYS }) });
  return { url: `${dispatcher.url}/a2a/echo-agent`, stop: () => dispatcher.stop() };
}

// Reference: DefaultRequestHandler + InMemoryTaskStore + an executor that completes at once.
async function serveReference() {
  const card = {
    name: 'Reference Echo',
    description: 'SDK sample pattern',
    version: '1.0.0',
    supportedInterfaces: [
      { url: 'http://localhost/', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: 'http://localhost/', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    ],
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  const executor = {
    async execute(ctx, bus) {
      const now = () => new Date().toISOString();
      const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
      bus.publish(
        AgentEvent.task({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
          artifacts: [],
          history: [ctx.userMessage],
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: {
            artifactId: randomUUID(),
            name: 'echo',
            description: '',
            parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    async cancelTask() {},
  };
  void Role;
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.post('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use(restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = app.listen(0);
  await new Promise((r) => server.once('listening', r));
  return { url: `http://localhost:${server.address().port}`, stop: async () => void server.close() };
}

/**
 * Not an A2A server: the least a Node process does to answer a JSON-RPC SendMessage over HTTP —
 * node:http, the body read and parsed, a task of the reference's shape (SUBMITTED, the message in
 * its history) serialised and written. No framework, validation, store or work: what a front door
 * costs with nothing but the exchange, the floor any design of one pays.
 */
async function serveBare() {
  const answer = (res, out) => {
    const json = JSON.stringify(out);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let rpc;
      try {
        rpc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return answer(res, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      }
      const message = rpc?.params?.message;
      if (rpc?.method !== 'SendMessage' || !message) {
        return answer(res, { jsonrpc: '2.0', id: rpc?.id ?? null, error: { code: -32601, message: 'Method not found' } });
      }
      const [id, contextId] = [randomUUID(), message.contextId ?? randomUUID()];
      const status = { state: 'TASK_STATE_SUBMITTED', timestamp: new Date().toISOString() };
      answer(res, {
        jsonrpc: '2.0',
        id: rpc.id,
        result: { task: { id, contextId, status, artifacts: [], history: [{ ...message, taskId: id, contextId }] } },
      });
    });
  });
  server.listen(0);
  await new Promise((r) => server.once('listening', r));
  return { url: `http://localhost:${server.address().port}`, stop: async () => void server.close() };
}

const served = await serve();
process.stdout.write(`${JSON.stringify({ [role]: served.url })}\n`);
// The event loop's utilization, twice a second, one JSON line each: whether the server's one thread
// is what bounds a scenario.
let elu = performance.eventLoopUtilization();
const sampling = setInterval(() => {
  const now = performance.eventLoopUtilization();
  process.stdout.write(`${JSON.stringify({ atMs: Date.now(), elu: performance.eventLoopUtilization(now, elu).utilization })}\n`);
  elu = now;
}, 500);
sampling.unref();
const stop = async () => {
  clearInterval(sampling);
  await served.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
