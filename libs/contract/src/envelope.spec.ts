import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEnvelope, encodeEnvelope, Envelopes, type Identity } from './envelope.js';
import { MeshError } from './errors.js';
import { Headers } from './headers.js';
import { TASK_STATES } from './task-state.js';

const identity: Identity = {
  tenant: 'acme',
  agentId: 'refund-agent',
  taskId: 't1',
  contextId: 'c1',
  messageId: 'm1',
  executionId: 'acme:t1:0',
  subject: 'alice',
  actor: 'console',
  deadlineUnixMs: 1700000000000,
  startByUnixMs: 1700000001000,
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
};

test('encode → decode round-trips every envelope kind', () => {
  const all = [
    Envelopes.run(identity, { turn: 0, message: { role: 'ROLE_USER', parts: [] } }),
    Envelopes.cancel(identity, { reason: 'caller gave up' }),
    Envelopes.status(identity, { seq: 3, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.artifact(identity, { seq: 4, artifact: { artifactId: 'a1', parts: [] } }),
  ];
  for (const env of all) {
    const wire = encodeEnvelope(env);
    assert.equal(wire.headers[Headers.tenant], 'acme');
    assert.equal(wire.headers[Headers.deadlineUnixMs], '1700000000000');
    assert.equal(wire.headers[Headers.startByUnixMs], '1700000001000');
    const headersAsKafka = Object.fromEntries(Object.entries(wire.headers).map(([k, v]) => [k, Buffer.from(v)]));
    assert.deepEqual(decodeEnvelope({ headers: headersAsKafka, value: wire.value }), env);
  }
});

test('missing headers, bad kinds, bad JSON and bad bodies are DECODE_FAILED with a reason', () => {
  const wire = encodeEnvelope(Envelopes.run(identity, { turn: 0, message: {} }));
  const without = (name: string) => Object.fromEntries(Object.entries(wire.headers).filter(([k]) => k !== name));
  assert.throws(() => decodeEnvelope({ headers: without(Headers.tenant), value: wire.value }), /missing headers: tenant/);
  assert.throws(() => decodeEnvelope({ headers: { ...wire.headers, kind: 'task.explode' }, value: wire.value }), /unknown kind/);
  assert.throws(() => decodeEnvelope({ headers: { ...wire.headers, schema_version: '9' }, value: wire.value }), /schema_version/);
  assert.throws(() => decodeEnvelope({ headers: wire.headers, value: Buffer.from('{nope') }), /not JSON/);
  assert.throws(
    () => decodeEnvelope({ headers: wire.headers, value: Buffer.from('{"turn":-1,"message":{}}') }),
    /invalid task.run body: turn/,
  );
  assert.throws(() => decodeEnvelope({ headers: { ...wire.headers, deadline_unix_ms: 'soon' }, value: wire.value }), /deadline_unix_ms/);
  assert.throws(() => decodeEnvelope({ headers: { ...wire.headers, start_by_unix_ms: '-5' }, value: wire.value }), /start_by_unix_ms "-5"/);
  assert.throws(() => decodeEnvelope({ headers: wire.headers, value: null }), /empty/);
  assert.throws(
    () => decodeEnvelope({ headers: { ...wire.headers, execution_id: '9999' }, value: wire.value }),
    /execution_id "9999" does not match \{tenant\}:\{task_id\}:\{turn\} = "acme:t1:0"/,
  );
});

test('a status event carries exactly one of the TaskState names; any other spelling is DECODE_FAILED', () => {
  const wire = encodeEnvelope(Envelopes.status(identity, { seq: 1, state: 'TASK_STATE_COMPLETED', final: true }));
  const withState = (state: unknown) => Buffer.from(JSON.stringify({ seq: 1, state, final: true }));
  for (const state of TASK_STATES) {
    const env = decodeEnvelope({ headers: wire.headers, value: withState(state) });
    assert.equal(env.kind === 'task.status' && env.body.state, state);
  }
  for (const state of ['completed', 'COMPLETED', 'input-required', 'TASK_STATE_UNSPECIFIED', 'TASK_STATE_DONE', '', 5, null]) {
    assert.throws(
      () => decodeEnvelope({ headers: wire.headers, value: withState(state) }),
      (err: unknown) => err instanceof MeshError && err.code === 'DECODE_FAILED' && /invalid task.status body: state/.test(err.message),
      `state ${JSON.stringify(state)}`,
    );
  }
});

test('a run command carries its grant as a header; no other kind does, even when one arrives', () => {
  const run = encodeEnvelope(Envelopes.run(identity, { turn: 0, message: { role: 'ROLE_USER', parts: [] } }, 'g.r.ant'));
  assert.equal(run.headers[Headers.grant], 'g.r.ant');
  assert.equal((decodeEnvelope(run) as { grant?: string }).grant, 'g.r.ant');
  const old = encodeEnvelope(Envelopes.run(identity, { turn: 0, message: { role: 'ROLE_USER', parts: [] } }));
  assert.equal(old.headers[Headers.grant], undefined);
  assert.equal('grant' in decodeEnvelope(old), false);
  const status = encodeEnvelope(Envelopes.status(identity, { seq: 1, state: 'TASK_STATE_WORKING', final: false }));
  assert.equal('grant' in decodeEnvelope({ ...status, headers: { ...status.headers, [Headers.grant]: 'g.r.ant' } }), false);
});
