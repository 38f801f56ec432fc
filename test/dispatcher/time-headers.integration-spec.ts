import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventually } from '../support/infra.js';
import { agentRecord, publishAgents, rawRequest, startTestDispatcher } from '../support/dispatcher-harness.js';
import { jsonMessage } from '../support/a2a-fixtures.js';

// A2A-Deadline-Ms and x-request-timeout-ms are parsed once, at the edge, for all four ways of
// sending (JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3); the handler uses the parsed values. No worker
// serves the agent: a blocking send waits until its timeout (the default is 30 s).
const env = await startTestDispatcher('time-headers');
await publishAgents(env.kafka, env.topics, [agentRecord('clock')]);
await eventually('agent served', async () => (await fetch(`${env.url}/a2a/clock/.well-known/agent-card.json`)).ok);

const base = `${env.url}/a2a/clock`;
const MAX = 24 * 86_400_000;

type Send = (headers: Record<string, string>, blocking?: boolean) => Promise<{ status: number; body: string }>;
const post = (url: string, headers: Record<string, string>, body: unknown) =>
  rawRequest(url, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-acme', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    timeoutMs: 10_000,
  });
const SENDS: Record<string, Send> = {
  'JSON-RPC 1.0': (h, blocking = false) =>
    post(
      base,
      { 'a2a-version': '1.0', ...h },
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: jsonMessage('t'), configuration: { returnImmediately: !blocking } },
      },
    ),
  'HTTP+JSON 1.0': (h, blocking = false) =>
    post(
      `${base}/message:send`,
      { 'a2a-version': '1.0', ...h },
      { message: jsonMessage('t'), configuration: { returnImmediately: !blocking } },
    ),
  'JSON-RPC 0.3': (h, blocking = false) =>
    post(base, h, {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 't' }] },
        configuration: { blocking },
      },
    }),
  'HTTP+JSON 0.3': (h, blocking = false) =>
    post(`${base}/v1/message:send`, h, {
      message: { messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 't' }] },
      configuration: { blocking },
    }),
};

/** The refusal's message, whatever the binding's error shape. */
function errorMessage(body: string): string | undefined {
  const b = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
  if (typeof b.error === 'object') return b.error.message;
  return b.message;
}

test('an odd time header is refused the same way on every binding and version, naming the header and what it takes', async () => {
  for (const [header, name] of [
    ['a2a-deadline-ms', 'A2A-Deadline-Ms'],
    ['x-request-timeout-ms', 'x-request-timeout-ms'],
  ]) {
    for (const bad of ['+5', '5.0', '1e3', '0x10', 'soon', '5, 5', String(MAX + 1), '9'.repeat(20)]) {
      for (const [binding, send] of Object.entries(SENDS)) {
        const r = await send({ [header!]: bad });
        assert.ok(r.status === 200 || r.status === 400, `${binding} ${name}: ${bad} → ${r.status}`);
        assert.equal(
          errorMessage(r.body),
          `${name}: must be one integer from 0 to ${MAX} (milliseconds; at most 24 days)`,
          `${binding} ${name}: ${JSON.stringify(bad)} → ${r.body.slice(0, 300)}`,
        );
      }
    }
  }
});

test('a time header with leading zeros or blanks is read as its integer everywhere, never refused further in or ignored', async () => {
  for (const [binding, send] of Object.entries(SENDS)) {
    // 13 digits, 5 s: the edge took it, and the handler must take the same value.
    const ok = await send({ 'a2a-deadline-ms': '0000000005000' });
    assert.ok(ok.status === 200 || ok.status === 201, `${binding}: ${ok.status} ${ok.body.slice(0, 300)}`);
    assert.equal(errorMessage(ok.body), undefined, `${binding}: ${ok.body.slice(0, 300)}`);
    assert.ok((await send({ 'x-request-timeout-ms': '  0  ' })).status < 300, `${binding}: blanks`);
    // A blocking send that asks to wait 50 ms as `0000000050` waits 50 ms, not the 30 s default.
    const started = Date.now();
    const waited = await send({ 'x-request-timeout-ms': '0000000050' }, true);
    assert.ok(waited.status < 300, `${binding}: ${waited.status} ${waited.body.slice(0, 300)}`);
    assert.ok(Date.now() - started < 5000, `${binding}: waited ${Date.now() - started} ms`);
  }
});
