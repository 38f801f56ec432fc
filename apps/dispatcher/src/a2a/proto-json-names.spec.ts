import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withJsonNames } from './proto-json-names.js';

test('proto names become JSON names; free-form values and the same-name twins are handled', () => {
  assert.deepEqual(withJsonNames({ message_id: 'm', metadata: { a_b: 1 }, parts: [{ media_type: 'x', data: { c_d: 2 } }] }, ''), {
    messageId: 'm',
    metadata: { a_b: 1 },
    parts: [{ mediaType: 'x', data: { c_d: 2 } }],
  });
  assert.throws(() => withJsonNames({ message_id: 'a', messageId: 'b' }, 'params'), /params\.messageId: given twice/);
});

test('a hostile nesting is not walked past the depth any request field has: no stack overflow', () => {
  let deep: unknown = 'x';
  for (let i = 0; i < 100_000; i++) deep = { a_b: deep };
  const out = withJsonNames({ task_id: deep }, '') as { taskId: unknown };
  assert.ok('taskId' in out);
  let arr: unknown = 'x';
  for (let i = 0; i < 100_000; i++) arr = [arr];
  assert.doesNotThrow(() => withJsonNames({ parts: arr }, ''));
});
