import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { argsHash, canonicalJson } from './canonical-json.js';

test('RFC 8785: keys sorted, no whitespace, numbers in shortest form', () => {
  assert.equal(
    canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 1e21, y: 0.1 } }),
    '{"a":[true,null,"x"],"b":1,"c":{"y":0.1,"z":1e+21}}',
  );
  // RFC 8785 sorts by UTF-16 code units.
  assert.equal(canonicalJson({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3 }), '{"\\r":2,"€":1,"😀":3}');
});

test('args hash ignores key order and differs for different args', () => {
  assert.equal(argsHash({ invoice: 'INV-1', amount: 10 }), argsHash({ amount: 10, invoice: 'INV-1' }));
  assert.notEqual(argsHash({ invoice: 'INV-1' }), argsHash({ invoice: 'INV-2' }));
  assert.match(argsHash({}), /^[0-9a-f]{64}$/);
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
      const reversed = Object.fromEntries(Object.entries(obj).reverse());
      return argsHash(obj) === argsHash(reversed);
    }),
  );
});

test('values without a JSON form are refused', () => {
  assert.throws(() => canonicalJson(Number.NaN), /no canonical JSON form/);
});
