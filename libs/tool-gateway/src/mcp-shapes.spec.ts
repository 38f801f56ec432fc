import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normaliseCallResult, normaliseInputSchema } from './mcp-shapes.js';

test('a 2020-12 input schema becomes draft-07 without $schema; a draft-07 one only loses $schema', () => {
  assert.deepEqual(
    normaliseInputSchema({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { at: { $ref: '#/$defs/point' }, pair: { type: 'array', prefixItems: [{ type: 'string' }], items: false } },
      $defs: { point: { type: 'object' } },
    }),
    {
      type: 'object',
      properties: { at: { $ref: '#/definitions/point' }, pair: { type: 'array', items: [{ type: 'string' }], additionalItems: false } },
      definitions: { point: { type: 'object' } },
    },
  );
  const draft07 = { type: 'object', properties: { id: { type: 'string' } }, definitions: { x: { type: 'string' } } };
  assert.deepEqual(normaliseInputSchema({ $schema: 'http://json-schema.org/draft-07/schema#', ...draft07 }), draft07);
  assert.deepEqual(normaliseInputSchema(undefined), { type: 'object' });
});

test("a newer revision's result fields are dropped and non-object structured content is wrapped", () => {
  const content = [{ type: 'text', text: 'ok' }];
  assert.deepEqual(
    normaliseCallResult({ content, structuredContent: { a: 1 }, resultType: 'complete', ttlMs: 0, _meta: { x: 1 } } as never),
    { content, structuredContent: { a: 1 } },
  );
  assert.deepEqual(normaliseCallResult({ content, structuredContent: [1, 2], isError: true }), {
    content,
    structuredContent: { value: [1, 2] },
    isError: true,
  });
  assert.deepEqual(normaliseCallResult({ content, isError: false }), { content });
});
