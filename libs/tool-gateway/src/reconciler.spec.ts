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
  const r = new Reconciler(ledger, async () => undefined, []);
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
  const r = new Reconciler(ledger, async () => undefined, []);
  await assert.rejects(
    r.waitFor(key, AbortSignal.timeout(50), 5),
    (e: Error) => e.name === 'TimeoutError' || /abort|timeout/i.test(String(e)),
  );
});

test("a pass covers only its gateway's tools and counts only what it settled itself", async () => {
  const ledger = await unknownEffect();
  const other = 'acme:t2:mcp__crm__close_case:def';
  await ledger.claim(
    {
      key: other,
      tenant: 'acme',
      taskId: 't2',
      executionId: 'acme:t2:0',
      tool: 'mcp__crm__close_case',
      argsHash: 'def',
      args: {},
      sideEffect: true,
      owner: 'a1',
    },
    1000,
  );
  await ledger.markUnknown(other, 'a1', 'timeout');
  const asked: string[] = [];
  const counts: number[] = [];
  const resolved: string[] = [];
  const r = new Reconciler(
    ledger,
    async (k) => {
      asked.push(k);
      // Settled meanwhile by another loop: an observation, but not this pass's doing.
      return {
        observation: { status: 'ok', tool: 'mcp__billing__issue_refund', idempotencyKey: k, text: '', replayed: true },
        settledHere: false,
      };
    },
    ['mcp__billing__'],
    { onResolved: (tool) => void resolved.push(tool), onUnknownCount: (n) => void counts.push(n) },
  );
  assert.equal(await r.runOnce(), 0);
  assert.deepEqual(asked, [key], "the crm server's unknown is another gateway's");
  assert.deepEqual(resolved, []);
  assert.deepEqual(counts, [1], 'the count is of its own tools');
});
