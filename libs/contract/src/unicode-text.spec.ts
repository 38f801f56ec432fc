import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasControlCharacter, hasLoneSurrogate } from './unicode-text.js';

test('control characters: C0, DEL and C1; line breaks only where allowed', () => {
  for (const s of ['a\u0000b', 'a\u001fb', 'a\u007fb', 'a\u0085b', 'a\u009fb']) {
    assert.equal(hasControlCharacter(s), true, JSON.stringify(s));
    assert.equal(hasControlCharacter(s, { allowLineBreaks: true }), true, JSON.stringify(s));
  }
  for (const s of ['a\tb', 'a\nb', 'a\rb']) {
    assert.equal(hasControlCharacter(s), true);
    assert.equal(hasControlCharacter(s, { allowLineBreaks: true }), false);
  }
  assert.equal(hasControlCharacter('plain text € ✓ 😀'), false);
});

test('lone surrogates are found, pairs are not', () => {
  for (const s of ['\ud800', 'a\ud800b', '\udfff', 'x\udc00', '\ud83d\ud83d\ude00'.slice(0, 2)])
    assert.equal(hasLoneSurrogate(s), true, JSON.stringify(s));
  for (const s of ['', 'plain', '😀', 'a\ud83d\ude00b']) assert.equal(hasLoneSurrogate(s), false, JSON.stringify(s));
});
