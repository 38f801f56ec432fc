import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemoryEffectLedger } from './effect-ledger.js';
import { Reconciler } from './reconciler.js';

const key = 'acme:t1:mcp__billing__issue_refund:abc';

async function unknownEffect(): Promise<InMemoryEffectLedger> {
  const l = new InMemoryEffectLedger();
  await l.claim(
    {
      key,
      tenant: 'acme',
      taskId: 't1',
      executionId: 'acme:t1:0',
      tool: 'mcp__billing__issue_refund',
      argsHash: 'abc',
      args: {},
      sideEffect: true,
      owner: 'a1',
    },
    1000,
  );
  await l.markUnknown(key, 'a1', 'timeout');
  return l;
}

test('waitFor waits out failed ledger reads and returns the outcome settled meanwhile', async () => {
  const ledger = await unknownEffect();
  let failures = 3;
  const get = ledger.get.bind(ledger);
  ledger.get = async (k: string) => {
    if (failures-- > 0) throw new Error('Connection terminated unexpectedly');
    return get(k);
  };
  const r = new Reconciler(ledger, () => []);
  setTimeout(() => void ledger.resolve(key, 'ok', { text: 'refund r-1' }), 30);
  const obs = await r.waitFor(key, AbortSignal.timeout(5000), 5);
  assert.equal(obs?.status, 'ok');
  assert.equal(obs?.text, 'refund r-1');
  assert.ok(failures < 0, 'the failed reads were retried');
});

test('waitFor still ends with the budget when the ledger stays unreadable', async () => {
  const ledger = await unknownEffect();
  ledger.get = async () => {
    throw new Error('the database is down');
  };
  const r = new Reconciler(ledger, () => []);
  await assert.rejects(
    r.waitFor(key, AbortSignal.timeout(50), 5),
    (e: Error) => e.name === 'TimeoutError' || /abort|timeout/i.test(String(e)),
  );
});
