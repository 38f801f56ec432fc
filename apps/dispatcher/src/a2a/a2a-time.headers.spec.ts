import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { parseTimeHeaders } from './a2a-time.headers.js';

const MAX = 24 * 86_400_000;

test('time headers: one integer of digits, read as such whatever its leading zeros or surrounding blanks', () => {
  assert.deepEqual(parseTimeHeaders({}), {});
  assert.deepEqual(parseTimeHeaders({ 'a2a-deadline-ms': '5000', 'x-request-timeout-ms': '0' }), { deadlineMs: 5000, timeoutMs: 0 });
  assert.deepEqual(parseTimeHeaders({ 'x-request-timeout-ms': '0000000005' }), { timeoutMs: 5 });
  assert.deepEqual(parseTimeHeaders({ 'a2a-deadline-ms': '0000000000005000' }), { deadlineMs: 5000 });
  assert.deepEqual(parseTimeHeaders({ 'a2a-deadline-ms': '  42 ' }), { deadlineMs: 42 });
  assert.deepEqual(parseTimeHeaders({ 'a2a-deadline-ms': String(MAX) }), { deadlineMs: MAX });
});

test('time headers: a sign, fraction, exponent, repeat, other text or a value over 24 days is refused naming the header', () => {
  for (const [header, name] of [
    ['a2a-deadline-ms', 'A2A-Deadline-Ms'],
    ['x-request-timeout-ms', 'x-request-timeout-ms'],
  ] as const) {
    for (const bad of [
      '+5',
      '-5',
      '5.0',
      '1e3',
      '0x10',
      '',
      ' ',
      'soon',
      '5 5',
      String(MAX + 1),
      '9'.repeat(17),
      '0'.repeat(17),
      '1'.repeat(400),
      ['5', '5'],
    ]) {
      const r = parseTimeHeaders({ [header]: bad });
      assert.ok(r instanceof RequestMalformedError, `${header}: ${JSON.stringify(bad)}`);
      assert.equal(r.message, `${name}: must be one integer from 0 to ${MAX} (milliseconds; at most 24 days)`);
    }
  }
});
