import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemoryEffectLedger, type NewEffect } from './effect-ledger.js';

const effect = (patch: Partial<NewEffect> = {}): NewEffect => ({
  key: 'acme:t1:mcp__billing__issue_refund:abc',
  tenant: 'acme',
  taskId: 't1',
  executionId: 'acme:t1:0',
  tool: 'mcp__billing__issue_refund',
  argsHash: 'abc',
  args: {},
  sideEffect: true,
  owner: 'attempt-1',
  ...patch,
});

test('a recorded outcome is returned to every later claim', async () => {
  const l = new InMemoryEffectLedger();
  assert.deepEqual(await l.claim(effect(), 1000), { kind: 'claimed' });
  await l.complete(effect().key, 'attempt-1', 'ok', { text: 'r1' });
  const again = await l.claim(effect({ owner: 'attempt-2' }), 1000);
  assert.equal(again.kind, 'recorded');
  assert.equal(again.kind === 'recorded' && again.entry.result?.text, 'r1');
});

test('a side effect whose owner is gone becomes unknown and is never re-claimed; reconciled absent it may run again', async () => {
  const l = new InMemoryEffectLedger();
  await l.claim(effect(), 1000);
  // Same execution, another attempt: the first attempt died during the call.
  const takeover = await l.claim(effect({ owner: 'attempt-2' }), 1000);
  assert.equal(takeover.kind === 'recorded' && takeover.entry.state, 'unknown');
  assert.equal(await l.countUnknown(), 1);
  // Only an unknown entry can be resolved; a late answer from the dead owner is ignored.
  await l.complete(effect().key, 'attempt-1', 'ok', { text: 'late' });
  assert.equal((await l.get(effect().key))?.state, 'unknown');
  assert.equal(await l.resolve(effect().key, 'absent'), true);
  assert.equal(await l.resolve(effect().key, 'ok'), false);
  assert.deepEqual(await l.claim(effect({ owner: 'attempt-3' }), 1000), { kind: 'claimed' });
});

test('a read-only call whose owner is gone is simply claimed again; a live one is busy', async () => {
  const l = new InMemoryEffectLedger();
  const read = effect({ key: 'acme:t1:mcp__billing__get_invoice:x', sideEffect: false });
  await l.claim(read, 1000);
  assert.equal((await l.claim(read, 1000)).kind, 'busy', 'same owner, still in flight');
  assert.deepEqual(await l.claim({ ...read, owner: 'attempt-2' }, 1000), { kind: 'claimed' });
  await l.release(read.key, 'attempt-2');
  assert.equal(await l.get(read.key), undefined);
});
