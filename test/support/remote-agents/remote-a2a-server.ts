/**
 * A team's own A2A server, built only with the official SDK (DefaultRequestHandler, express
 * handlers, InMemoryTaskStore), run as a process of its own by the bridge specs. What it does
 * depends on the message text:
 * - `ask …`: asks for input; the follow-up on the same task completes it with an `answer` artifact.
 * - `wait …`: works until canceled.
 * - `slow …`: an artifact, a pause of REMOTE_SLOW_MS, another artifact, then completes.
 * - `auth …`: asks the caller to authenticate (AUTH_REQUIRED); the follow-up completes it.
 * - `reply …`: answers with a message, no task.
 * - `mute …`: says nothing (not even the task) for REMOTE_SLOW_MS, then completes.
 * - anything else: a progress status, a `result` artifact `echo: <text>`, completed.
 * Env: REMOTE_PORT, REMOTE_STREAMING (true|false: card capability and binding JSONRPC|HTTP+JSON),
 * REMOTE_DEDUP (a repeated messageId returns its first task), REMOTE_BUSY_REQUESTS (that many
 * A2A requests are answered 429 Retry-After: 1). GET /stats says what it saw.
 */
import express from 'express';
import { AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const port = Number(process.env.REMOTE_PORT);
const streaming = process.env.REMOTE_STREAMING !== 'false';
const dedup = process.env.REMOTE_DEDUP === 'true';
let busy = Number(process.env.REMOTE_BUSY_REQUESTS ?? 0);
const slowMs = Number(process.env.REMOTE_SLOW_MS ?? 2000);
const base = `http://127.0.0.1:${port}`;

const stats = {
  tasksCreated: 0,
  messages: [] as Array<{ messageId: string; taskId: string; text: string; metadata: unknown }>,
  cancels: [] as string[],
  authorization: [] as string[],
  refused: 0,
  /** Requests answered from an earlier send of the same messageId. */
  deduplicated: 0,
};
const firstTaskOf = new Map<string, string>();
const waiting = new Map<string, () => void>();

const status = (ctx: RequestContext, state: string, text?: string, final = false) =>
  AgentEvent.statusUpdate(
    TaskStatusUpdateEvent.fromJSON({
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      status: {
        state,
        ...(text ? { message: { messageId: `${ctx.taskId}-${Math.random()}`, role: 'ROLE_AGENT', parts: [{ text }] } } : {}),
      },
      final,
    }),
  );
const artifact = (ctx: RequestContext, id: string, name: string, text: string) =>
  AgentEvent.artifactUpdate(
    TaskArtifactUpdateEvent.fromJSON({
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      artifact: { artifactId: id, name, parts: [{ text }] },
    }),
  );

const executor: AgentExecutor = {
  async execute(ctx: RequestContext, bus: ExecutionEventBus) {
    const m = Message.toJSON(ctx.userMessage) as { messageId: string; parts: Array<{ text?: string }>; metadata?: unknown };
    const text = m.parts.map((p) => p.text ?? '').join(' ');
    stats.messages.push({ messageId: m.messageId, taskId: ctx.taskId, text, metadata: m.metadata });
    if (!ctx.task) {
      stats.tasksCreated++;
      firstTaskOf.set(m.messageId, ctx.taskId);
    }
    if (text.startsWith('mute')) await new Promise((r) => setTimeout(r, slowMs));
    if (text.startsWith('reply')) {
      bus.publish(
        AgentEvent.message(
          Message.fromJSON({
            messageId: `reply-${m.messageId}`,
            contextId: ctx.contextId,
            role: 'ROLE_AGENT',
            parts: [{ text: `re: ${text}` }],
          }),
        ),
      );
      bus.finished();
      return;
    }
    bus.publish(
      AgentEvent.task(
        ctx.task ?? Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_SUBMITTED' }, history: [] }),
      ),
    );
    if (text.startsWith('ask')) {
      if (!ctx.task) bus.publish(status(ctx, 'TASK_STATE_INPUT_REQUIRED', 'Which invoice?', true));
      else {
        bus.publish(artifact(ctx, 'answer-1', 'answer', `answered: ${text}`));
        bus.publish(status(ctx, 'TASK_STATE_COMPLETED', 'done', true));
      }
    } else if (text.startsWith('auth')) {
      if (!ctx.task) bus.publish(status(ctx, 'TASK_STATE_AUTH_REQUIRED', 'Sign in to the quotes system first', true));
      else {
        bus.publish(artifact(ctx, 'quote-1', 'quote', `authorized: ${text}`));
        bus.publish(status(ctx, 'TASK_STATE_COMPLETED', 'done', true));
      }
    } else if (text.startsWith('wait')) {
      bus.publish(status(ctx, 'TASK_STATE_WORKING', 'working until canceled'));
      await new Promise<void>((resolve) => waiting.set(ctx.taskId, resolve));
      bus.publish(status(ctx, 'TASK_STATE_CANCELED', 'canceled by the caller', true));
    } else if (text.startsWith('slow')) {
      bus.publish(status(ctx, 'TASK_STATE_WORKING', 'first half'));
      bus.publish(artifact(ctx, 'part-1', 'part-1', 'one'));
      await new Promise((r) => setTimeout(r, slowMs));
      bus.publish(artifact(ctx, 'part-2', 'part-2', 'two'));
      bus.publish(status(ctx, 'TASK_STATE_COMPLETED', 'done', true));
    } else {
      bus.publish(status(ctx, 'TASK_STATE_WORKING', 'step 1'));
      bus.publish(artifact(ctx, 'result-1', 'result', `echo: ${text}`));
      bus.publish(status(ctx, 'TASK_STATE_COMPLETED', 'done', true));
    }
    bus.finished();
  },
  async cancelTask(taskId: string) {
    stats.cancels.push(taskId);
    waiting.get(taskId)?.();
  },
};

const card = {
  name: `Remote ${streaming ? 'streaming' : 'polled'} agent`,
  description: 'A team-run A2A agent for the bridge specs',
  version: '1.0.0',
  supportedInterfaces: [
    streaming
      ? { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }
      : { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  ],
  capabilities: { streaming },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['remote'] }],
};
const handler = new DefaultRequestHandler(AgentCard.fromJSON(card), new InMemoryTaskStore(), executor);

const app = express();
app.get('/stats', (_req, res) => res.json(stats));
app.use('/a2a', express.json(), (req, res, next) => {
  stats.authorization.push(req.headers.authorization ?? '');
  if (busy > 0) {
    busy--;
    stats.refused++;
    res.setHeader('retry-after', '1');
    res.status(429).json({ error: 'busy' });
    return;
  }
  // Deduplication on messageId: a repeated message gets the task it created, not a new one.
  const body = req.body as { method?: string; params?: { message?: { messageId?: string } }; message?: { messageId?: string } };
  const messageId = body?.params?.message?.messageId ?? body?.message?.messageId;
  const first = messageId && dedup ? firstTaskOf.get(messageId) : undefined;
  if (first) stats.deduplicated++;
  if (first && body.method === 'SendStreamingMessage')
    req.body = { jsonrpc: '2.0', id: (body as { id?: unknown }).id, method: 'SubscribeToTask', params: { id: first } };
  else if (first && body.method === 'SendMessage') {
    req.body = { jsonrpc: '2.0', id: (body as { id?: unknown }).id, method: 'GetTask', params: { id: first } };
    // Answered as SendMessage answers: the task under `result.task`.
    const json = res.json.bind(res);
    res.json = (out: { result?: unknown }) => json(out.result ? { ...out, result: { task: out.result } } : out);
  }
  next();
});
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => AgentCard.fromJSON(card) }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1', () => console.log(`remote agent on ${base}`));
