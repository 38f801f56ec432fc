import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bearerToken } from './bearer.js';

test('the Bearer scheme in any case, then the token68', () => {
  for (const h of ['Bearer abc.DEF-_~+/=', 'bearer abc.DEF-_~+/=', 'BEARER abc.DEF-_~+/=', 'Bearer   abc.DEF-_~+/='])
    assert.equal(bearerToken(h), 'abc.DEF-_~+/=', h);
});

test('no token: another scheme, a missing or split token, an oversized one, no header', () => {
  for (const h of [undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearerabc', 'Bearer a b', 'Bearer a\tb', `Bearer ${'a'.repeat(8193)}`])
    assert.equal(bearerToken(h), undefined, JSON.stringify(h)?.slice(0, 40));
});
