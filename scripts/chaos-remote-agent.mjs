// Child process of scripts/chaos.mjs: a team's own A2A agent behind the bridge (apps/bridge), built
// only with the official SDK (DefaultRequestHandler, express handlers). It echoes: each task gets a
// WORKING status, then a `result` artifact `echo: <input text>` and COMPLETED, streamed; it takes
// CHAOS_REMOTE_MIN_MS–CHAOS_REMOTE_MAX_MS (200–800) per task, the first part of it (up to half)
// before it answers with the task at all, so that a bridge killed then has sent a message whose
// task it never learnt (its next owner sends it again: the dedup answers). It deduplicates on messageId (a repeated messageId
// gets the task it created first, never a second one), and keeps what it did in CHAOS_REMOTE_DIR so
// that both survive the SIGKILLs of the run:
// - remote-agent.jsonl: one line per event — `send` (a SendMessage arrived), `created` (messageId →
//   task id, written before the task is answered), `dedup` (a repeat answered with the first task),
//   `recovered` (a task left unfinished by a kill, finished at start);
// - remote-tasks.jsonl: every task snapshot the SDK saved (the task store), read back at start.
// Env: CHAOS_REMOTE_PORT, CHAOS_REMOTE_DIR. Prints "ready" when listening. GET /healthz says how
// many tasks are being worked on (`inFlight`).
import { appendFileSync, mkdirSync } from 'node:fs';
import express from 'express';
import { readJournal } from './chaos/journal.mjs';
import { AgentCard, Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const port = Number(process.env.CHAOS_REMOTE_PORT);
const dir = process.env.CHAOS_REMOTE_DIR;
if (!port || !dir) throw new Error('CHAOS_REMOTE_PORT and CHAOS_REMOTE_DIR are required');
const minMs = Number(process.env.CHAOS_REMOTE_MIN_MS ?? 200);
const maxMs = Number(process.env.CHAOS_REMOTE_MAX_MS ?? 800);
mkdirSync(dir, { recursive: true });
const journal = `${dir}/remote-agent.jsonl`;
const snapshots = `${dir}/remote-tasks.jsonl`;
const base = `http://127.0.0.1:${port}`;
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

// Synchronous appends: a line written before an answer is on disk (page cache) when SIGKILL comes.
const record = (line) => appendFileSync(journal, `${JSON.stringify({ ...line, at: Date.now() })}\n`);

/** The SDK's in-memory store, plus every saved snapshot appended to a file and read back at start. */
class DurableTaskStore extends InMemoryTaskStore {
  durable = new Map();
  constructor() {
    super();
    for (const t of readJournal(snapshots)) this.durable.set(t.id, t);
  }
  // Without a call context (the recovery at start, the dedup in front of the SDK) only the durable
  // map is used: every caller is the bridge, one user.
  async save(task, context) {
    if (context) await super.save(task, context);
    const json = Task.toJSON(task);
    this.durable.set(task.id, json);
    appendFileSync(snapshots, `${JSON.stringify(json)}\n`);
  }
  async load(taskId, context) {
    const t = context ? await super.load(taskId, context) : undefined;
    if (t) return t;
    const json = this.durable.get(taskId);
    return json ? Task.fromJSON(json) : undefined;
  }
}
const store = new DurableTaskStore();

// messageId → the task it created, from earlier lives of this process too.
const firstTaskOf = new Map();
const inputOf = new Map(); // task id → input text
const created = [];
for (const e of readJournal(journal))
  if (e.e === 'created') {
    created.push(e);
    firstTaskOf.set(e.messageId, e.taskId);
    inputOf.set(e.taskId, e.text);
  }

const echo = (text) => `echo: ${text}`;
// A task a kill left unfinished is finished now, before anything is served: a caller that resumes
// it (SubscribeToTask, GetTask) finds it COMPLETED with its artifact. One killed before it answered
// has no snapshot yet: it is made from the journal.
for (const e of created)
  if (!store.durable.has(e.taskId))
    store.durable.set(e.taskId, { id: e.taskId, contextId: e.contextId ?? '', status: { state: 'TASK_STATE_SUBMITTED' }, history: [] });
for (const [id, json] of store.durable) {
  if (TERMINAL.has(json.status?.state)) continue;
  const text = inputOf.get(id) ?? '';
  await store.save(
    Task.fromJSON({
      ...json,
      artifacts: [{ artifactId: 'result-1', name: 'result', parts: [{ text: echo(text) }] }],
      status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
    }),
    undefined,
  );
  record({ e: 'recovered', taskId: id });
}

const canceled = new Set();
let inFlight = 0; // tasks being worked on now: chaos.mjs kills this process while some are
/** messageId → called once the first request's task is recorded (or the request ended without one). */
const creating = new Map();
const executor = {
  async execute(ctx, bus) {
    const m = Message.toJSON(ctx.userMessage);
    const text = (m.parts ?? []).map((p) => p.text ?? '').join(' ');
    const workMs = minMs + Math.random() * (maxMs - minMs);
    const ackMs = Math.random() * (workMs / 2);
    inFlight += 1;
    if (!ctx.task) {
      record({ e: 'created', messageId: m.messageId, taskId: ctx.taskId, contextId: ctx.contextId, text });
      firstTaskOf.set(m.messageId, ctx.taskId);
      inputOf.set(ctx.taskId, text);
    }
    await new Promise((r) => setTimeout(r, ackMs));
    bus.publish(
      AgentEvent.task(
        ctx.task ?? Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_SUBMITTED' }, history: [] }),
      ),
    );
    creating.get(m.messageId)?.();
    const status = (state, final = false) =>
      AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state }, final }));
    bus.publish(status('TASK_STATE_WORKING'));
    await new Promise((r) => setTimeout(r, workMs - ackMs));
    inFlight -= 1;
    if (canceled.has(ctx.taskId)) bus.publish(status('TASK_STATE_CANCELED', true));
    else {
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            artifact: { artifactId: 'result-1', name: 'result', parts: [{ text: echo(text) }] },
          }),
        ),
      );
      bus.publish(status('TASK_STATE_COMPLETED', true));
    }
    bus.finished();
  },
  async cancelTask(taskId) {
    canceled.add(taskId);
  },
};

const card = {
  name: 'Chaos remote echo agent',
  description: 'A team-run A2A agent: echoes its input, deduplicating on messageId',
  version: '1.0.0',
  supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes the message', tags: ['chaos'] }],
};
const handler = new DefaultRequestHandler(AgentCard.fromJSON(card), store, executor);

const app = express();
// Deduplication on messageId, in front of the SDK: a repeated SendMessage/SendStreamingMessage gets
// the task the first one created. A repeat arriving while the first is still being created waits
// for it, so two concurrent sends of one messageId never create two tasks.
app.use('/a2a/jsonrpc', express.json(), async (req, res, next) => {
  const body = req.body;
  const method = body?.method;
  const messageId = body?.params?.message?.messageId;
  if ((method !== 'SendMessage' && method !== 'SendStreamingMessage') || typeof messageId !== 'string' || body.params.message.taskId)
    return next();
  record({ e: 'send', messageId, method });
  while (creating.has(messageId)) await creating.get(messageId).promise;
  const first = firstTaskOf.get(messageId);
  if (!first) {
    let done;
    const promise = new Promise((r) => (done = r));
    const release = () => {
      if (creating.get(messageId)?.promise !== promise) return;
      creating.delete(messageId);
      done();
    };
    release.promise = promise;
    creating.set(messageId, release);
    res.on('close', release);
    return next();
  }
  record({ e: 'dedup', messageId, taskId: first, method });
  // The first task is saved by the SDK right after it is created: wait for that snapshot.
  let task;
  for (let i = 0; i < 100 && !(task = await store.load(first, undefined)); i++) await new Promise((r) => setTimeout(r, 20));
  if (task && !TERMINAL.has(Task.toJSON(task).status?.state) && method === 'SendStreamingMessage') {
    // Still running: the repeat follows the first task's stream.
    req.body = { jsonrpc: '2.0', id: body.id ?? null, method: 'SubscribeToTask', params: { id: first } };
    return next();
  }
  if (!task) {
    res.json({ jsonrpc: '2.0', id: body.id ?? null, error: { code: -32001, message: `task ${first} of message ${messageId} not found` } });
    return;
  }
  const result = StreamResponse.toJSON({ payload: { $case: 'task', value: task } });
  if (method === 'SendMessage') {
    res.json({ jsonrpc: '2.0', id: body.id ?? null, result });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id ?? null, result })}\n\n`);
});
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => AgentCard.fromJSON(card) }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.get('/healthz', (_req, res) => res.json({ ok: true, inFlight }));
const server = app.listen(port, '127.0.0.1', () => process.stdout.write(`ready ${base}\n`));
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
