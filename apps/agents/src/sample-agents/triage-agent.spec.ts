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

test('a message naming more invoices than one turn may delegate is refused up front, not failed', async () => {
  const { triageAgent } = await import('./triage-agent.js');
  const { Outcomes } = await import('@mesh/agent-sdk');
  const names = Array.from({ length: 17 }, (_, i) => `INV-${i + 1}`).join(', ');
  const ctx = { reject: (r: string) => Outcomes.rejected(r), askForInput: (q: string) => Outcomes.inputRequired(q) };
  const outcome = await triageAgent.handler({ parts: [{ type: 'text', text: `What is on ${names}?` }] } as never, ctx as never);
  assert.equal(outcome.state, 'rejected');
  assert.match(
    outcome.state === 'rejected' ? outcome.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('') : '',
    /at most 16 invoices in one message; this one names 17/,
  );
});
