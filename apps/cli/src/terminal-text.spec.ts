import { test } from 'node:test';
import assert from 'node:assert/strict';
import { terminalSafe } from './terminal-text.js';

test('control characters are shown as escapes, never written raw to the terminal', () => {
  assert.equal(
    terminalSafe('\u001b[2J\u001b]0;title\u0007red\rX\nY\tZ\u0000\u007f'),
    '\\x1b[2J\\x1b]0;title\\x07red\\rX\\nY\\tZ\\x00\\x7f',
  );
  assert.equal(terminalSafe('\u009b31m'), '\\x9b31m', 'C1 CSI');
  assert.equal(terminalSafe('a\u202eb\u2066c\u2028d'), 'a\\u202eb\\u2066c\\u2028d', 'bidi overrides and line separators');
});

test('ordinary text, non-ASCII letters and emoji are unchanged', () => {
  for (const s of ['hello mesh', 'Grüße, 世界 🚀', 'C:\\path\\x1b', '{"a":1}']) assert.equal(terminalSafe(s), s);
});
