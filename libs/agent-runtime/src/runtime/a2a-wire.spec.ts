import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DELEGATION_RESULTS_KEY, INTERRUPTED_TASK_STATES, TaskStates, type JsonObject } from '@mesh/contract';
import { delegationOutcomeOf, fromWireMessage, toWireArtifact, wireStateOf } from './a2a-wire.js';

// What the dispatcher admits as a part (docs/dispatcher.md, "Validation"): exactly one of text, raw
// (base64, empty allowed), url, data (any JSON value but null), and on any of them a media type, a
// file name and metadata. An agent echoing a message must hand back every one of them unchanged.
const jsonNoNull: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n)),
    fc.boolean(),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).value;
const base64 = fc.uint8Array({ maxLength: 32 }).map((b) => Buffer.from(b).toString('base64'));
// Any part kind may name a media type and a file name, and carry metadata.
const attributes = {
  mediaType: fc.constantFrom('text/plain', 'application/pdf', 'application/json'),
  filename: fc.string({ minLength: 1, maxLength: 20 }),
  metadata: fc.dictionary(fc.string({ maxLength: 8 }), jsonNoNull, { minKeys: 1, maxKeys: 3, noNullPrototype: true }),
};
const withAttributes = <K extends string>(key: K, content: fc.Arbitrary<unknown>) =>
  fc.record({ [key]: content, ...attributes } as Record<string, fc.Arbitrary<unknown>>, { requiredKeys: [key], noNullPrototype: true });
const wirePart = fc.oneof(
  withAttributes('text', fc.string()),
  withAttributes('data', jsonNoNull),
  withAttributes('url', fc.webUrl()),
  withAttributes('raw', base64),
) as fc.Arbitrary<JsonObject>;

test('every part content the dispatcher admits reaches the agent and comes back unchanged', () => {
  fc.assert(
    fc.property(fc.array(wirePart, { minLength: 1, maxLength: 8 }), (parts) => {
      const message = fromWireMessage({ messageId: 'm', role: 'ROLE_USER', parts });
      assert.equal(message.parts.length, parts.length, 'no part dropped');
      const echoed = toWireArtifact({ name: 'echo', parts: message.parts }, 'a1');
      assert.deepEqual(echoed.parts, parts);
    }),
    { numRuns: 300 },
  );
});

test('scalar and array data parts and an empty raw part, as found by probing the running stack', () => {
  const parts = [{ data: 'str' }, { data: 42 }, { data: false }, { data: [1, 'x'] }, { raw: '' }];
  const message = fromWireMessage({ messageId: 'm', role: 'ROLE_USER', parts });
  assert.deepEqual(message.parts, [
    { type: 'data', data: 'str' },
    { type: 'data', data: 42 },
    { type: 'data', data: false },
    { type: 'data', data: [1, 'x'] },
    { type: 'file', bytesBase64: '' },
  ]);
  assert.deepEqual(toWireArtifact({ parts: message.parts }, 'a1').parts, parts);
});

test('a child whose artifacts the platform left out reaches task.delegation marked truncated, with its task id', () => {
  const results = {
    reason: 'settled',
    unfinished: [],
    children: [
      { step: 0, taskId: 'kept', agentId: 'a', state: 'TASK_STATE_COMPLETED', artifacts: [{ artifactId: 'x', parts: [{ text: 'hi' }] }] },
      { step: 1, taskId: 'left-out', agentId: 'a', state: 'TASK_STATE_COMPLETED', artifacts: [], truncated: true },
    ],
  };
  const outcome = delegationOutcomeOf({ parts: [{ data: results, metadata: { [DELEGATION_RESULTS_KEY]: true } }] } as JsonObject)!;
  assert.equal(outcome.children[0].truncated, undefined);
  assert.equal(outcome.children[0].artifacts.length, 1);
  assert.deepEqual([outcome.children[1].taskId, outcome.children[1].truncated, outcome.children[1].artifacts], ['left-out', true, []]);
});

test('auth-required is an interrupted outcome on the wire, like input-required', () => {
  assert.equal(wireStateOf('auth-required'), TaskStates.authRequired);
  assert.ok(INTERRUPTED_TASK_STATES.includes(wireStateOf('auth-required')));
  assert.ok(INTERRUPTED_TASK_STATES.includes(wireStateOf('input-required')));
});
