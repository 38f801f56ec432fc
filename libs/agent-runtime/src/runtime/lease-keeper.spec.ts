import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from '@mesh/contract';
import type { RenewOutcome } from './execution-ledger.js';
import { LeaseKeeper, LeaseRenewals } from './lease-keeper.js';
import { TurnSignal } from './turn-signal.js';

/** A ledger whose renewals answer from a script (the last answer repeats); counts the calls. */
function scripted(...answers: Array<RenewOutcome | Error>) {
  const calls: Array<{ executionId: string; owner: string; leaseMs: number }> = [];
  return {
    calls,
    renew: async (executionId: string, owner: string, leaseMs: number): Promise<RenewOutcome> => {
      calls.push({ executionId, owner, leaseMs });
      const a = answers[Math.min(calls.length - 1, answers.length - 1)]!;
      if (a instanceof Error) throw a;
      return a;
    },
  };
}

test('the lease is renewed every third of its length with the owner, until stop()', async () => {
  const ledger = scripted('renewed');
  const keeper = new LeaseKeeper({ ledger, executionId: 'e1', owner: 'w1/a', leaseMs: 150 });
  await sleep(175); // ticks at 50, 100, 150
  keeper.stop();
  const n = ledger.calls.length;
  assert.ok(n >= 2 && n <= 4, `renewals: ${n}`);
  assert.deepEqual(ledger.calls[0], { executionId: 'e1', owner: 'w1/a', leaseMs: 150 });
  await sleep(120);
  assert.equal(ledger.calls.length, n, 'no renewal after stop()');
  assert.equal(keeper.lost.aborted, false);
  assert.equal(keeper.canceled.aborted, false);
});

test('a renewal that finds another owner aborts lost with LEASE_LOST; a failed renewal does not', async () => {
  const ledger = scripted(new Error('connection terminated'), 'renewed', 'lost');
  const keeper = new LeaseKeeper({ ledger, executionId: 'e1', owner: 'w1/a', leaseMs: 60 });
  const lost = new Promise((r) => keeper.lost.addEventListener('abort', r, { once: true }));
  await sleep(70);
  assert.equal(keeper.lost.aborted, false, 'a failed renewal is retried, not a loss');
  await lost;
  keeper.stop();
  assert.ok(ledger.calls.length >= 3);
  assert.equal((keeper.lost.reason as { code?: string }).code, 'LEASE_LOST');
});

test('a renewal that finds a cancel aborts canceled, and the lease is still held', async () => {
  const ledger = scripted('canceled');
  const keeper = new LeaseKeeper({ ledger, executionId: 'e1', owner: 'w1/a', leaseMs: 60 });
  await new Promise((r) => keeper.canceled.addEventListener('abort', r, { once: true }));
  const before = ledger.calls.length;
  await sleep(60);
  keeper.stop();
  assert.equal(keeper.lost.aborted, false);
  assert.ok(ledger.calls.length > before, 'renewals go on after a cancel');
});

test('giving the lease up aborts lost with REVOKED; a later loss keeps that reason', async () => {
  const ledger = scripted('lost');
  const keeper = new LeaseKeeper({ ledger, executionId: 'e1', owner: 'w1/a', leaseMs: 60 });
  keeper.giveUp();
  await sleep(40);
  keeper.stop();
  assert.equal((keeper.lost.reason as { code?: string }).code, 'REVOKED');
});

test('a watcher hears the first loss once, also one found before it watched; the signals say the same when asked later', async () => {
  const heard: string[] = [];
  const watcher = { lost: (r: { code: string }) => heard.push(r.code), canceled: () => heard.push('canceled') };
  const early = new LeaseKeeper({ ledger: scripted('lost'), executionId: 'e1', owner: 'w1/a', leaseMs: 60 });
  await sleep(75); // the renewal at 50 ms found another owner
  early.watch(watcher);
  early.giveUp(); // a second loss changes nothing
  early.stop();
  assert.deepEqual(heard, ['LEASE_LOST']);
  assert.equal(early.isLost, true);
  assert.equal((early.lost.reason as { code?: string }).code, 'LEASE_LOST', 'a signal made after the loss is aborted');

  heard.length = 0;
  const late = new LeaseKeeper({ ledger: scripted('renewed', 'canceled', 'lost'), executionId: 'e2', owner: 'w1/a', leaseMs: 60 });
  late.watch(watcher);
  await sleep(175); // renewals at 50, 100 and 150 ms: renewed, canceled, lost
  late.stop();
  assert.deepEqual(heard, ['canceled', 'LEASE_LOST']);
  assert.equal(late.canceled.aborted, true);
});

test('the turn signal carries the first reason: lease lost, renewal cancel, cancel, revocation, deadline', async () => {
  const reasonOf = (s: TurnSignal) => s.reason?.code;

  const lostLease = new LeaseKeeper({ ledger: scripted('lost'), executionId: 'e', owner: 'o', leaseMs: 60 });
  const a = new TurnSignal(lostLease);
  await new Promise((r) => a.signal.addEventListener('abort', r, { once: true }));
  lostLease.stop();
  assert.equal(reasonOf(a), 'LEASE_LOST');
  assert.equal(a.reason?.message, 'another worker took this execution over');

  const canceledLease = new LeaseKeeper({ ledger: scripted('canceled'), executionId: 'e', owner: 'o', leaseMs: 60 });
  const b = new TurnSignal(canceledLease);
  await new Promise((r) => b.signal.addEventListener('abort', r, { once: true }));
  canceledLease.stop();
  assert.equal(reasonOf(b), 'CANCELLED');
  assert.equal(canceledLease.lost.aborted, false);

  const lease = () => new LeaseKeeper({ ledger: scripted('renewed'), executionId: 'e', owner: 'o', leaseMs: 60_000 });
  const cancel = new AbortController();
  const l3 = lease();
  const c = new TurnSignal(l3);
  const unwatch = c.watch(cancel.signal, new AbortController().signal, undefined);
  cancel.abort();
  unwatch();
  l3.stop();
  assert.equal(reasonOf(c), 'CANCELLED');

  // A revocation that happened before watch() counts, gives the lease up, and wins over a later cancel.
  const l4 = lease();
  const d = new TurnSignal(l4);
  const unwatchD = d.watch(cancel.signal, AbortSignal.abort(), undefined);
  unwatchD();
  l4.stop();
  assert.equal(reasonOf(d), 'REVOKED');
  assert.equal((l4.lost.reason as { code?: string }).code, 'REVOKED');

  const l5 = lease();
  const e = new TurnSignal(l5);
  const unwatchE = e.watch(new AbortController().signal, new AbortController().signal, Date.now() + 20);
  await new Promise((r) => e.signal.addEventListener('abort', r, { once: true }));
  unwatchE();
  l5.stop();
  assert.equal(reasonOf(e), 'DEADLINE_EXCEEDED');
});

test('after unwatch, a cancel, a revocation or the deadline no longer abort the turn', async () => {
  const keeper = new LeaseKeeper({ ledger: scripted('renewed'), executionId: 'e', owner: 'o', leaseMs: 60_000 });
  const s = new TurnSignal(keeper);
  const cancel = new AbortController();
  const revoked = new AbortController();
  s.watch(cancel.signal, revoked.signal, Date.now() + 10)();
  cancel.abort();
  revoked.abort();
  await sleep(30);
  keeper.stop();
  assert.equal(s.signal.aborted, false);
  assert.equal(keeper.lost.aborted, false);
});

test('a shared renewal loop renews every lease it holds on each tick, reports each loss to its own keeper, and stops when empty', async () => {
  const calls: string[] = [];
  const ledger = {
    renew: async (executionId: string): Promise<RenewOutcome> => {
      calls.push(executionId);
      return executionId === 'taken' ? 'lost' : 'renewed';
    },
  };
  const loop = new LeaseRenewals(40);
  const a = new LeaseKeeper({ ledger, executionId: 'a', owner: 'o', leaseMs: 120, renewals: loop });
  const taken = new LeaseKeeper({ ledger, executionId: 'taken', owner: 'o', leaseMs: 120, renewals: loop });
  assert.equal(loop.size, 2);
  await new Promise((r) => taken.lost.addEventListener('abort', r, { once: true }));
  assert.equal(a.lost.aborted, false);
  assert.ok(calls.includes('a') && calls.includes('taken'), 'both renewed by the same tick');
  taken.stop();
  a.stop();
  assert.equal(loop.size, 0);
  const n = calls.length;
  await sleep(100);
  assert.equal(calls.length, n, 'no renewal after every keeper stopped');
});
