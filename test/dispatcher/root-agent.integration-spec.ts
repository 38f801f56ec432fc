import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { startEchoWorker } from '../support/echo-worker.js';

// DISPATCHER_ROOT_AGENT: one agent also served at the host root (the A2A TCK takes a host, reads
// /.well-known/agent-card.json there and posts JSON-RPC to /).
const env = await startTestDispatcher('root-agent', {}, { DISPATCHER_ROOT_AGENT: 'echo' });
await publishAgents(env.kafka, env.topics, [agentRecord('echo'), agentRecord('other')]);
const worker = await startEchoWorker(env.kafka, env.topics, 'echo');
after(() => worker.stop());
await eventually('echo served', async () => (await fetch(`${env.url}/a2a/echo/.well-known/agent-card.json`)).ok);

const auth = { authorization: 'Bearer demo-acme' };
const json = { 'content-type': 'application/json' };
const message = (text: string) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });
type TaskJson = { id: string; status: { state: string } };

test("the root serves the agent card without a token: the agent's own card, naming its base URL", async () => {
  const atRoot = await rawRequest(`${env.url}/.well-known/agent-card.json`);
  const atBase = await rawRequest(`${env.url}/a2a/echo/.well-known/agent-card.json`);
  assert.equal(atRoot.status, 200);
  assert.deepEqual(JSON.parse(atRoot.body), JSON.parse(atBase.body));
  const card = JSON.parse(atRoot.body) as { name: string; supportedInterfaces: Array<{ url: string }> };
  assert.equal(card.name, 'Agent echo');
  assert.ok(card.supportedInterfaces.every((i) => i.url.endsWith('/a2a/echo')));
});

test('JSON-RPC at / and the HTTP+JSON routes at the root reach the agent, with or without A2A-Version', async () => {
  for (const version of [{ 'a2a-version': '1.0' }, {}]) {
    const r = await rawRequest(`${env.url}/`, {
      method: 'POST',
      headers: { ...auth, ...json, ...version },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('at the root') } }),
    });
    const task = (JSON.parse(r.body) as { result?: { task?: TaskJson } }).result?.task;
    assert.equal(task?.status.state, 'TASK_STATE_COMPLETED', r.body);
    const s = await rawRequest(`${env.url}/message:send`, {
      method: 'POST',
      headers: { ...auth, ...json, ...version },
      body: JSON.stringify({ message: message('rest at the root') }),
    });
    assert.equal(s.status, 200, s.body);
    const sent = (JSON.parse(s.body) as { task: TaskJson }).task;
    // The same task through the root and through the agent's base URL.
    const viaRoot = await rawRequest(`${env.url}/tasks/${sent.id}`, { headers: { ...auth, ...version } });
    const viaBase = await rawRequest(`${env.url}/a2a/echo/tasks/${sent.id}`, { headers: { ...auth, ...version } });
    assert.equal((JSON.parse(viaRoot.body) as TaskJson).id, sent.id);
    assert.deepEqual(JSON.parse(viaRoot.body), JSON.parse(viaBase.body));
    const list = await rawRequest(`${env.url}/tasks?pageSize=1`, { headers: { ...auth, ...version } });
    assert.equal((JSON.parse(list.body) as { tasks: TaskJson[] }).tasks.length, 1);
  }
});

test("at the root, every call but the card needs a token, and errors are the binding's own", async () => {
  const rpc = await rawRequest(`${env.url}/`, {
    method: 'POST',
    headers: { ...json, 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('no token') } }),
  });
  assert.equal(rpc.status, 401);
  assert.equal((JSON.parse(rpc.body) as { error: { code: number } }).error.code, -32600);
  for (const path of ['/tasks', `/tasks/${randomUUID()}`]) {
    const r = await rawRequest(`${env.url}${path}`, { headers: { 'a2a-version': '1.0' } });
    assert.equal(r.status, 401, path);
    assert.equal(r.headers['www-authenticate'], 'Bearer');
  }
  // A body the app-wide parser refuses, at the root: JSON-RPC's parse error, not a bare 400.
  const bad = await rawRequest(`${env.url}/`, { method: 'POST', headers: { ...auth, ...json }, body: '{"jsonrpc": ' });
  assert.equal(bad.status, 200);
  assert.equal((JSON.parse(bad.body) as { error: { code: number } }).error.code, -32700);
  const badRest = await rawRequest(`${env.url}/message:send`, { method: 'POST', headers: { ...auth, ...json }, body: '{' });
  assert.equal(badRest.status, 400);
  assert.equal((JSON.parse(badRest.body) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
});

test("the root serves only that agent's A2A paths: the dispatcher's own routes and other agents are unchanged", async () => {
  assert.equal((await rawRequest(`${env.url}/healthz`)).status, 200);
  assert.equal((await rawRequest(`${env.url}/livez`)).status, 200);
  assert.equal((await rawRequest(`${env.url}/nothing-here`, { headers: auth })).status, 404);
  const other = await rawRequest(`${env.url}/a2a/other/.well-known/agent-card.json`);
  assert.equal((JSON.parse(other.body) as { name: string }).name, 'Agent other');
  // GET / is not JSON-RPC (a POST): not the agent.
  assert.equal((await rawRequest(`${env.url}/`, { headers: auth })).status, 404);
});
