import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import { TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { eventually } from '../support/infra.js';
import {
  a2aClient,
  a2aClientWith,
  agentRecord,
  publishAgents,
  startReplicaProcess,
  startTestDispatcher,
  type Binding,
} from '../support/dispatcher-harness.js';
import { artifactText, sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startManualWorker } from '../support/manual-worker.js';
import { openRawSse, type RawSse } from '../support/raw-sse.js';
import { collect, describe, streamingFetch } from '../support/streaming.js';
import { followTaskStream, StreamResumption } from '@mesh/agent-sdk';
import type { TaskRunCommand } from '@mesh/contract';
import { freePort } from '../support/processes.js';

// Two replicas on one database and topic prefix: B in-process, A a separate process (SIGKILLed by
// the last test). Each task's newest 6 stream events are kept, so an expired id is easy to reach.
const KEPT = 6;
const env = await startTestDispatcher(
  'resume',
  {},
  { DISPATCHER_STREAM_EVENTS_KEPT: String(KEPT), PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8' },
);
await publishAgents(env.kafka, env.topics, [agentRecord('resume')]);
const worker = await startManualWorker(env.kafka, env.topics, 'resume');
after(() => worker.stop());
const { url: urlA, proc: procA } = await startReplicaProcess(env, 'resume');
const urlB = env.url;
const cardPath = '/a2a/resume/.well-known/agent-card.json';
await eventually('replica B serves the agent', async () => (await fetch(`${urlB}${cardPath}`)).ok);

const AUTH = { authorization: 'Bearer demo-acme', 'a2a-version': '1.0' };

/** SubscribeToTask as raw SSE on either binding, optionally resuming after `lastEventId`. */
function subscribe(url: string, binding: Binding, taskId: string, lastEventId?: string, query = ''): Promise<RawSse> {
  const resume = lastEventId !== undefined ? { 'last-event-id': lastEventId } : {};
  if (binding === 'HTTP+JSON') {
    return openRawSse(`${url}/a2a/resume/tasks/${taskId}:subscribe${query}`, { headers: { ...AUTH, ...resume } });
  }
  return openRawSse(`${url}/a2a/resume/${query}`, {
    method: 'POST',
    headers: { ...AUTH, ...resume, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
  });
}

/** SendStreamingMessage as raw SSE on either binding. */
function sendStreaming(url: string, binding: Binding, text: string, extra: Record<string, string> = {}): Promise<RawSse> {
  const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
  if (binding === 'HTTP+JSON') {
    return openRawSse(`${url}/a2a/resume/message:stream`, {
      method: 'POST',
      headers: { ...AUTH, ...extra, 'content-type': 'application/json' },
      body: JSON.stringify({ message }),
    });
  }
  return openRawSse(`${url}/a2a/resume/`, {
    method: 'POST',
    headers: { ...AUTH, ...extra, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message } }),
  });
}

type Wire = {
  task?: { id: string; status?: { state: string } };
  statusUpdate?: { status?: { state: string } };
  artifactUpdate?: { artifact?: { parts?: Array<{ text?: string }> } };
};

/** A raw SSE event (REST: a StreamResponse; JSON-RPC: its result) as `task:WORKING`, `status:COMPLETED`, `artifact:<text>`. */
function rawDescribe(events: unknown[]): string[] {
  return events.map((e) => {
    const r = ((e as { result?: Wire }).result ?? e) as Wire;
    const short = (s?: string) => String(s).replace('TASK_STATE_', '');
    if (r.task) return `task:${short(r.task.status?.state)}`;
    if (r.statusUpdate) return `status:${short(r.statusUpdate.status?.state)}`;
    if (r.artifactUpdate) return `artifact:${(r.artifactUpdate.artifact?.parts ?? []).map((p) => p.text ?? '').join('')}`;
    return JSON.stringify(e).slice(0, 200);
  });
}

const taskOf = (e: unknown) => (((e as { result?: Wire }).result ?? e) as Wire).task!;

const within = <T>(p: Promise<T>, what: string, ms = 30000) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms))]);

/** A task started on B without waiting, its run command received by the worker. */
async function startTask(text: string) {
  const client = await a2aClient(urlB, 'resume', 'HTTP+JSON');
  const sent = (await client.sendMessage(sendRequest(userMessage(text), { returnImmediately: true }))) as Task;
  return { client, taskId: sent.id, cmd: await worker.run(sent.id) };
}

test('the served cards declare the resumable-streams extension (optional for clients)', async () => {
  for (const url of [urlA, urlB]) {
    const card = (await (await fetch(`${url}${cardPath}`)).json()) as {
      capabilities: { extensions?: Array<{ uri: string; required?: boolean }> };
    };
    const ext = card.capabilities.extensions?.find((e) => e.uri === 'https://agent-mesh.dev/extensions/resumable-streams/v1');
    assert.ok(ext, 'the extension is declared');
    assert.notEqual(ext.required, true);
  }
});

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  test(`${binding}: every event of SendStreamingMessage carries the task's next number as its id`, async () => {
    // A Last-Event-ID means nothing to a message (it may start a new task): the stream starts at the snapshot.
    const s = await sendStreaming(urlA, binding, 'numbered', { 'last-event-id': '5' });
    assert.equal(s.status, 200);
    await eventually('the task is streamed', () => s.events.length >= 1);
    const taskId = taskOf(s.events[0]).id;
    await worker.emit(await worker.run(taskId), [
      { seq: 0, state: 'WORKING' },
      { seq: 1, artifact: 'a' },
      { seq: 2, artifact: 'b' },
      { seq: 3, state: 'COMPLETED' },
    ]);
    await within(s.ended, 'the stream ends');
    assert.deepEqual(rawDescribe(s.events), ['task:SUBMITTED', 'status:WORKING', 'artifact:a', 'artifact:b', 'status:COMPLETED']);
    assert.deepEqual(s.ids, ['0', '1', '2', '3', '4']);
  });

  const [first, second] = binding === 'JSONRPC' ? [urlA, urlB] : [urlB, urlA];
  test(`${binding}: a stream dropped after its first event resumes on the other replica with Last-Event-ID, nothing missed or repeated`, async () => {
    const { client, taskId, cmd } = await startTask(`drop ${binding}`);
    await worker.emit(cmd, [
      { seq: 0, state: 'WORKING' },
      { seq: 1, artifact: 'one' },
    ]);
    await eventually(
      'part one stored',
      async () => artifactText(await client.getTask({ tenant: '', id: taskId, historyLength: 0 })) === 'one',
    );

    const dropped = await subscribe(first, binding, taskId);
    await eventually('the snapshot arrives', () => dropped.events.length >= 1);
    dropped.close();
    assert.deepEqual(rawDescribe(dropped.events), ['task:WORKING']);
    const lastId = dropped.ids[0]!;
    assert.equal(lastId, '2', 'the snapshot includes WORKING (1) and part one (2)');

    // Missed while disconnected.
    await worker.emit(cmd, [{ seq: 2, artifact: 'two' }]);
    await eventually(
      'part two stored',
      async () => artifactText(await client.getTask({ tenant: '', id: taskId, historyLength: 0 })) === 'onetwo',
    );

    const resumed = await subscribe(second, binding, taskId, lastId);
    assert.equal(resumed.status, 200);
    await eventually('the missed event is replayed', () => resumed.events.length >= 1);
    // Live after the replay.
    await worker.emit(cmd, [
      { seq: 3, artifact: 'three' },
      { seq: 4, state: 'COMPLETED' },
    ]);
    await within(resumed.ended, 'the resumed stream ends');
    assert.deepEqual(rawDescribe(resumed.events), ['artifact:two', 'artifact:three', 'status:COMPLETED']);
    assert.deepEqual(resumed.ids, ['3', '4', '5']);
  });
}

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  test(`${binding}: a resumed stream of a quiet task answers with its headers at once, before any event`, async () => {
    const { client, taskId, cmd } = await startTask(`quiet ${binding}`);
    await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
    await eventually(
      'WORKING stored',
      async () => (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state === TaskState.TASK_STATE_WORKING,
    );
    // Nothing after event 1 is missed and nothing new comes until the headers are in: the caller
    // must not wait for the task's next change to learn its stream was accepted.
    const resumed = await within(subscribe(urlB, binding, taskId, '1'), 'the headers of the resumed stream', 5000);
    assert.equal(resumed.status, 200);
    assert.match(String(resumed.headers['content-type']), /^text\/event-stream/);
    assert.deepEqual(resumed.events, []);
    await worker.emit(cmd, [
      { seq: 1, artifact: 'late' },
      { seq: 2, state: 'COMPLETED' },
    ]);
    await within(resumed.ended, 'the resumed stream ends');
    assert.deepEqual(rawDescribe(resumed.events), ['artifact:late', 'status:COMPLETED']);
    assert.deepEqual(resumed.ids, ['2', '3']);
  });
}

test('a resume refused before its stream opens is still a plain error, not a stream', async () => {
  const { taskId, cmd } = await startTask('refused resume');
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  const ahead = await subscribe(urlB, 'HTTP+JSON', taskId, '99');
  assert.equal(ahead.status, 400);
  assert.doesNotMatch(String(ahead.headers['content-type']), /event-stream/);
  await worker.emit(cmd, [{ seq: 1, state: 'COMPLETED' }]);
});

/** A fetch adding the bearer token (and a Last-Event-ID) that records the SSE ids of the responses it hands through. */
function recordingFetch(ids: string[], lastEventId?: string): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', 'Bearer demo-acme');
    if (lastEventId !== undefined) headers.set('last-event-id', lastEventId);
    const res = await fetch(input, { ...init, headers });
    if (!res.body || !res.headers.get('content-type')?.includes('text/event-stream')) return res;
    let pending = '';
    const decoder = new TextDecoder();
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        pending += decoder.decode(chunk, { stream: true });
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const l of lines) if (l.startsWith('id:')) ids.push(l.slice(3).trim());
        out.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(tap), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  test(`${binding}: the official client resumes a broken stream on the other replica, each event once`, async () => {
    const idsA: string[] = [];
    const onA = (await a2aClientWith(recordingFetch(idsA), urlA, 'resume', binding)).sendMessageStream(
      sendRequest(userMessage(`sdk ${binding}`)),
    );
    const firstEvent = (await onA.next()).value as StreamResponse;
    await onA.return(undefined); // the caller's connection breaks after the first event
    assert.equal(firstEvent.payload?.$case, 'task');
    const taskId = firstEvent.payload?.$case === 'task' ? firstEvent.payload.value.id : '';
    assert.deepEqual(idsA, ['0']);

    const cmd = await worker.run(taskId);
    await worker.emit(cmd, [
      { seq: 0, state: 'WORKING' },
      { seq: 1, artifact: 'x' },
    ]);
    const idsB: string[] = [];
    const clientB = await a2aClientWith(recordingFetch(idsB, idsA[0]), urlB, 'resume', binding);
    const onB = collect(clientB.resubscribeTask({ tenant: '', id: taskId }));
    await eventually('B replays', () => onB.events.length >= 1);
    await worker.emit(cmd, [
      { seq: 2, artifact: 'y' },
      { seq: 3, state: 'COMPLETED' },
    ]);
    await within(onB.done, 'the resumed stream ends');
    assert.deepEqual(describe(onB.events), ['status:WORKING', 'artifact:x', 'artifact:y', 'status:COMPLETED']);
    assert.deepEqual(idsB, ['1', '2', '3', '4']);
  });
}

test('a task that ended meanwhile: the missed events up to the terminal one, then the stream ends', async () => {
  const { client, taskId, cmd } = await startTask('ends while away');
  await worker.emit(cmd, [
    { seq: 0, state: 'WORKING' },
    { seq: 1, artifact: 'r' },
    { seq: 2, state: 'COMPLETED' },
  ]);
  await eventually(
    'completed',
    async () => (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state === TaskState.TASK_STATE_COMPLETED,
  );
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    const s = await subscribe(urlA, binding, taskId, '1');
    await within(s.ended, 'the replay ends');
    assert.deepEqual(rawDescribe(s.events), ['artifact:r', 'status:COMPLETED']);
    assert.deepEqual(s.ids, ['2', '3']);
    // Already at the end: nothing to replay, the stream ends at once.
    const atEnd = await subscribe(urlB, binding, taskId, '3');
    await within(atEnd.ended, 'the empty replay ends');
    assert.equal(atEnd.status, 200);
    assert.deepEqual(atEnd.events, []);
  }
  // A2A 0.3 (no A2A-Version): tasks/resubscribe numbers and resumes the same way.
  const legacy = await openRawSse(`${urlA}/a2a/resume/`, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-acme', 'content-type': 'application/json', 'last-event-id': '1' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: taskId } }),
  });
  await within(legacy.ended, 'the 0.3 replay ends');
  assert.deepEqual(legacy.ids, ['2', '3']);
  assert.deepEqual(
    legacy.events.map((e) => (e as { result: { kind: string } }).result.kind),
    ['artifact-update', 'status-update'],
  );
  // The parameter stands in for the header.
  const byParam = await subscribe(urlB, 'HTTP+JSON', taskId, undefined, '?lastEventId=2');
  await within(byParam.ended, 'the replay ends');
  assert.deepEqual(rawDescribe(byParam.events), ['status:COMPLETED']);
  // Without Last-Event-ID, a terminal task still cannot be subscribed to (nothing would follow).
  const plain = await subscribe(urlB, 'HTTP+JSON', taskId);
  await plain.ended;
  assert.notEqual(plain.status, 200);
  assert.match(plain.body(), /terminal state/);
});

test('a resumed stream goes past a settled status its task has moved on from, and ends at the current one', async () => {
  const { client, taskId, cmd } = await startTask('needs input');
  await worker.emit(cmd, [
    { seq: 0, state: 'WORKING' },
    { seq: 1, state: 'INPUT_REQUIRED', message: 'which invoice?' },
  ]);
  const stateIs = (state: TaskState) => async () =>
    (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state === state;
  await eventually('input required', stateIs(TaskState.TASK_STATE_INPUT_REQUIRED));
  // While the task waits for input, that is its state: a resume from 0 ends there.
  const waiting = await subscribe(urlB, 'HTTP+JSON', taskId, '0');
  await within(waiting.ended, 'the replay ends');
  assert.deepEqual(rawDescribe(waiting.events).slice(-1), ['status:INPUT_REQUIRED']);
  // The answer starts the next turn, which completes: the INPUT_REQUIRED in the log is history now.
  await client.sendMessage(sendRequest(userMessage('INV-1', { taskId }), { returnImmediately: true }));
  const next = await eventually('run command of the next turn', () =>
    worker.commands.find(
      (c): c is TaskRunCommand => c.kind === 'task.run' && c.identity.taskId === taskId && c.body.turn === cmd.body.turn + 1,
    ),
  );
  await worker.emit(next, [
    { seq: 0, state: 'WORKING' },
    { seq: 1, artifact: 'refunded' },
    { seq: 2, state: 'COMPLETED' },
  ]);
  await eventually('completed', stateIs(TaskState.TASK_STATE_COMPLETED));
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    const s = await subscribe(urlA, binding, taskId, '0');
    await within(s.ended, 'the replay ends');
    const seen = rawDescribe(s.events);
    assert.ok(seen.includes('status:INPUT_REQUIRED'), `${binding}: the first turn replayed: ${seen.join(' ')}`);
    assert.deepEqual(seen.slice(-2), ['artifact:refunded', 'status:COMPLETED'], `${binding}: ${seen.join(' ')}`);
    assert.deepEqual(
      s.ids,
      s.ids.map((_, i) => String(i + 1)),
      'every event after 0, once, in order',
    );
  }
});

test('an id older than the events kept is refused, naming the oldest id available', async () => {
  const { client, taskId, cmd } = await startTask('many events');
  // 10 artifacts and COMPLETED: events 1..11, of which the newest 6 (6..11) are kept.
  await worker.emit(cmd, [
    ...Array.from({ length: 10 }, (_, i) => ({ seq: i, artifact: `p${i}` })),
    { seq: 10, state: 'COMPLETED' as const },
  ]);
  await eventually(
    'completed',
    async () => (await client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state === TaskState.TASK_STATE_COMPLETED,
  );
  const rest = await subscribe(urlA, 'HTTP+JSON', taskId, '1');
  await rest.ended;
  assert.equal(rest.status, 400);
  const error = JSON.parse(rest.body()) as { error: { message: string; details: Array<{ metadata?: Record<string, string> }> } };
  assert.match(error.error.message, /Last-Event-ID 1 .* has expired: the oldest event kept is 6/);
  assert.ok(error.error.details.some((d) => d.metadata?.eventId === 'EXPIRED' && d.metadata.oldestEventId === '6'));

  const rpc = await subscribe(urlB, 'JSONRPC', taskId, '4');
  await rpc.ended;
  const rpcError = JSON.parse(rpc.body()) as { error: { code: number; message: string } };
  assert.equal(rpcError.error.code, -32602);
  assert.match(rpcError.error.message, /oldest event kept is 6/);

  // From just before the oldest kept event, everything kept is replayed.
  const fromOldest = await subscribe(urlB, 'HTTP+JSON', taskId, String(KEPT - 1));
  await within(fromOldest.ended, 'the replay ends');
  assert.deepEqual(fromOldest.ids, ['6', '7', '8', '9', '10', '11']);
  assert.deepEqual(rawDescribe(fromOldest.events).slice(-2), ['artifact:p9', 'status:COMPLETED']);
});

test('a Last-Event-ID that is no id of the task is refused with a clear error', async () => {
  const { taskId } = await startTask('bad ids');
  const notNumber = await subscribe(urlB, 'HTTP+JSON', taskId, 'abc');
  await notNumber.ended;
  assert.equal(notNumber.status, 400);
  assert.match(notNumber.body(), /Last-Event-ID must be an event id of this task's stream/);
  const rpc = await subscribe(urlB, 'JSONRPC', taskId, '-1');
  await rpc.ended;
  assert.equal((JSON.parse(rpc.body()) as { error: { code: number } }).error.code, -32602);
  const ahead = await subscribe(urlA, 'HTTP+JSON', taskId, '99');
  await ahead.ended;
  assert.equal(ahead.status, 400);
  assert.match(ahead.body(), /Last-Event-ID 99 is not an event of task .*: its last event is 0/);
});

test('push deliveries carry the number the stream shows for the same event', async () => {
  const got: Array<{ id: string; body: unknown }> = [];
  const port = await freePort();
  const server: Server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      got.push({ id: String(req.headers['x-a2a-stream-event-id']), body: JSON.parse(data) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  after(() => server.close());
  const client = await a2aClient(urlB, 'resume', 'HTTP+JSON');
  const request = sendRequest(userMessage('pushed'), { returnImmediately: true });
  request.configuration!.taskPushNotificationConfig = {
    tenant: '',
    id: 'hook',
    taskId: '',
    url: `http://127.0.0.1:${port}/hook`,
    token: 't',
    authentication: undefined,
  };
  const taskId = ((await client.sendMessage(request)) as Task).id;
  await worker.emit(await worker.run(taskId), [
    { seq: 0, state: 'WORKING' },
    { seq: 1, artifact: 'p' },
    { seq: 2, state: 'COMPLETED' },
  ]);
  await eventually('three deliveries', () => got.length >= 3);
  const replay = await subscribe(urlA, 'HTTP+JSON', taskId, '0');
  await within(replay.ended, 'the replay ends');
  assert.deepEqual(
    got.map((g) => g.id),
    replay.ids,
  );
  assert.deepEqual(
    got.map((g) => g.body),
    replay.events,
  );
});

/**
 * An HTTP proxy to one replica or the other (`target`), which can cut every open response at once
 * (a dropped connection mid-stream). Cards are rewritten to name the proxy, so the client's
 * requests all go through it.
 */
async function cuttingProxy(target: { url: string }) {
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const to = new URL(req.url ?? '/', target.url);
    const upstream = httpRequest(to, { method: req.method, headers: { ...req.headers, host: to.host } }, (up) => {
      if (req.url?.endsWith('agent-card.json')) {
        let body = '';
        up.setEncoding('utf8');
        up.on('data', (c: string) => (body += c));
        up.on('end', () =>
          res.writeHead(up.statusCode ?? 502, { 'content-type': 'application/json' }).end(body.replaceAll(target.url, url)),
        );
        return;
      }
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
    open.add(res);
    res.on('close', () => {
      open.delete(res);
      upstream.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  after(() => server.close());
  return { url, cut: () => open.forEach((r) => r.destroy()) };
}

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  test(`${binding}: the agent SDK's followTaskStream reconnects after a dropped connection and resumes on the other replica`, async () => {
    const { cmd, taskId } = await startTask(`helper ${binding}`);
    const target = { url: urlB };
    const proxy = await cuttingProxy(target);
    const resumption = new StreamResumption(streamingFetch('demo-acme'));
    const client = await a2aClientWith(resumption.fetch, proxy.url, 'resume', binding);
    const retries: Array<{ attempt: number; lastEventId?: string }> = [];
    const s = collect(followTaskStream(client, taskId, resumption, { firstDelayMs: 50, onRetry: (r) => retries.push(r) }));
    await eventually('the snapshot arrives', () => s.events.length >= 1);
    await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
    await eventually('WORKING arrives', () => s.events.length >= 2);

    // The connection drops; the next one reaches the other replica, after more events were stored.
    target.url = urlA;
    proxy.cut();
    await worker.emit(cmd, [{ seq: 1, artifact: 'while away' }]);
    await eventually('the helper resumed', () => s.events.length >= 3);
    await worker.emit(cmd, [{ seq: 2, state: 'COMPLETED' }]);
    await within(s.done, 'the followed stream ends');
    assert.deepEqual(describe(s.events), ['task:SUBMITTED', 'status:WORKING', 'artifact:while away', 'status:COMPLETED']);
    assert.ok(retries.length >= 1, 'it reconnected');
    assert.equal(retries[0].lastEventId, '1', 'after the last event it had');
  });
}

test('across a SIGKILL of the replica serving the stream: resume on the other one, each event once', { timeout: 120000 }, async () => {
  const { cmd, taskId } = await startTask('kill the server');
  const onA = await subscribe(urlA, 'JSONRPC', taskId);
  await eventually('A streams the snapshot', () => onA.events.length >= 1);
  await worker.emit(cmd, [{ seq: 0, state: 'WORKING' }]);
  await eventually('A streams WORKING', () => onA.events.length >= 2);
  assert.deepEqual(onA.ids, ['0', '1']);

  procA.child.kill('SIGKILL');
  await procA.exited;
  await onA.ended;
  await worker.emit(cmd, [
    { seq: 1, artifact: 'after the kill' },
    { seq: 2, state: 'WORKING' },
  ]);
  const onB = await subscribe(urlB, 'JSONRPC', taskId, onA.ids.at(-1));
  await eventually('B replays what A never sent', () => onB.events.length >= 2);
  await worker.emit(cmd, [{ seq: 3, state: 'COMPLETED' }]);
  await within(onB.ended, 'the resumed stream ends', 60000);
  assert.deepEqual(rawDescribe(onB.events), ['artifact:after the kill', 'status:WORKING', 'status:COMPLETED']);
  assert.deepEqual(onB.ids, ['2', '3', '4']);
});
