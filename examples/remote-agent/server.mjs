// A team's existing A2A agent, as any stack would serve one — here the official @a2a-js/sdk server
// (DefaultRequestHandler, InMemoryTaskStore, express handlers): it echoes the text it gets as an
// artifact after WORK_MS of "work". Run from the repository (it uses the workspace's packages):
//   PORT=9000 node examples/remote-agent/server.mjs
// The mesh reaches it through a bridge worker (README, "Bring your own agent"; docs/agents.md).
import { randomUUID } from 'node:crypto';
import express from 'express';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const port = Number(process.env.PORT ?? 9000);
const workMs = Number(process.env.WORK_MS ?? 0);
const app = express();
const server = app.listen(port, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
const url = `http://127.0.0.1:${server.address().port}`;
const card = {
  name: 'Remote Echo',
  description: "Another team's A2A agent: echoes the text it is sent",
  version: '1.0.0',
  supportedInterfaces: [
    { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: `${url}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
  ],
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the text', tags: ['echo'], examples: [], inputModes: [], outputModes: [] }],
  signatures: [],
};
const now = () => new Date().toISOString();
const executor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    const status = (state) => ({ state, message: undefined, timestamp: now() });
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TaskState.TASK_STATE_WORKING),
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    if (workMs > 0) await new Promise((r) => setTimeout(r, workMs));
    const part = { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
    const artifact = { artifactId: randomUUID(), name: 'echo', description: '', parts: [part], metadata: undefined, extensions: [] };
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        artifact,
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: status(TaskState.TASK_STATE_COMPLETED),
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
process.stdout.write(`${JSON.stringify({ url })}\n`);
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
