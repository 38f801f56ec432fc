import { test } from 'node:test';
import assert from 'node:assert/strict';
import { supportAsks } from './triage-agent.js';

test('a support message becomes one ask per invoice: a double charge is a refund, anything else a question', () => {
  assert.deepEqual(supportAsks('I was charged twice on INV-2291. Also, what is the total of INV-2292?'), [
    { invoiceId: 'INV-2291', kind: 'refund' },
    { invoiceId: 'INV-2292', kind: 'question' },
  ]);
  assert.deepEqual(supportAsks('Charged twice on inv-7, and what is on INV-8?'), [
    { invoiceId: 'INV-7', kind: 'refund' },
    { invoiceId: 'INV-8', kind: 'question' },
  ]);
  // A refund ask wins over a question about the same invoice.
  assert.deepEqual(supportAsks('What is INV-1? Please refund the duplicate on INV-1.'), [{ invoiceId: 'INV-1', kind: 'refund' }]);
  assert.deepEqual(supportAsks('hello'), []);
});
