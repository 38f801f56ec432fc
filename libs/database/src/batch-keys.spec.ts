import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchKeys } from './batch-keys.js';

test('the keys of a JSON batch parameter as an array expression', () => {
  assert.equal(batchKeys('$1', 'execution_id'), `ARRAY(SELECT jsonb_array_elements($1::jsonb) ->> 'execution_id')`);
  assert.equal(batchKeys('$12', 'k'), `ARRAY(SELECT jsonb_array_elements($12::jsonb) ->> 'k')`);
});

test('anything but a placeholder and a plain field name is refused, never spliced into SQL', () => {
  for (const param of ['1', '$0', '$', '$1; DROP TABLE x', 'v.id', '$1::text'])
    assert.throws(() => batchKeys(param, 'id'), /not a parameter placeholder/, param);
  for (const field of ["id'; --", 'Id', 'a-b', '', '1id', 'id ', 'ключ'])
    assert.throws(() => batchKeys('$1', field), /not a field name/, field);
});
