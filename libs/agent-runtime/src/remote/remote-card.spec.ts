import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { MeshError } from '@mesh/contract';
import { createLogger } from '@mesh/telemetry';
import { EgressPolicy } from '@mesh/egress';
import { cardContentKey, RemoteCardRefresher, type RefreshTimers, type RemoteAgentCard } from './remote-card.js';

const egress = new EgressPolicy();

const card = (version: string, extra: Partial<RemoteAgentCard> = {}): RemoteAgentCard => ({
  name: 'weather',
  description: 'Forecasts',
  version,
  supportedInterfaces: [{ url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  skills: [{ id: 'forecast', name: 'Forecast' }],
  ...extra,
});

/** Timers run by the test: `fire()` runs the one pending timer. */
class ManualTimers implements RefreshTimers {
  pending: { fn: () => void; ms: number; handle: number } | undefined;
  private next = 0;
  setTimeout(fn: () => void, ms: number): unknown {
    assert.equal(this.pending, undefined, 'one refresh is scheduled at a time');
    this.pending = { fn, ms, handle: ++this.next };
    return this.next;
  }
  clearTimeout(handle: unknown): void {
    if (this.pending?.handle === handle) this.pending = undefined;
  }
  fire(): void {
    const p = this.pending;
    assert.ok(p, 'a refresh is scheduled');
    this.pending = undefined;
    p.fn();
  }
}

function captureLogs() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger('test', 'info', stream), lines };
}

const settle = () => new Promise((r) => setImmediate(r));

/** A card source the test answers by hand. */
function cardSource() {
  const answers: Array<RemoteAgentCard | Error> = [];
  let calls = 0;
  let lastSignal: AbortSignal | undefined;
  const fetchCard = async (signal: AbortSignal) => {
    calls += 1;
    lastSignal = signal;
    const a = answers.shift();
    assert.ok(a, 'an answer is queued');
    if (a instanceof Error) throw a;
    return a;
  };
  return {
    fetchCard,
    answers,
    get calls() {
      return calls;
    },
    get signal() {
      return lastSignal;
    },
  };
}

test('the content key ignores signatures (a re-signed card is the same card) and sees skill changes', () => {
  const sig = { protected: 'e30', signature: 'abc' };
  assert.equal(cardContentKey(card('1')), cardContentKey(card('1', { signatures: [sig] })));
  assert.notEqual(cardContentKey(card('1')), cardContentKey(card('2')));
  assert.notEqual(cardContentKey(card('1')), cardContentKey(card('1', { skills: [{ id: 'alerts', name: 'Alerts' }] })));
});

test('the first card is fetched at once, then every interval after the previous fetch ends; onChange only on change', async () => {
  const timers = new ManualTimers();
  const src = cardSource();
  const changes: RemoteAgentCard[] = [];
  const r = new RemoteCardRefresher({
    cardUrl: 'https://agent.example.com/.well-known/agent-card.json',
    intervalMs: 60_000,
    egress,
    timers,
    fetchCard: src.fetchCard,
    onChange: (c) => {
      changes.push(c);
    },
  });
  src.answers.push(card('1'));
  r.start();
  await settle();
  assert.equal(src.calls, 1);
  assert.deepEqual(changes, [card('1')]);
  assert.equal(timers.pending?.ms, 60_000);

  src.answers.push(card('1', { signatures: [{ protected: 'e30', signature: 'new' }] }));
  timers.fire();
  await settle();
  assert.equal(changes.length, 1, 'same content: no change');
  assert.equal(r.card?.signatures?.[0].signature, 'new', 'the latest good card is kept');

  src.answers.push(card('2'));
  timers.fire();
  await settle();
  assert.deepEqual(changes, [card('1'), card('2')]);
  assert.equal(timers.pending?.ms, 60_000);
  r.stop();
  assert.equal(timers.pending, undefined);
});

test('with a known card the first refresh waits one interval, and an unchanged card is no change', async () => {
  const timers = new ManualTimers();
  const src = cardSource();
  let changes = 0;
  const r = new RemoteCardRefresher({
    cardUrl: 'https://agent.example.com/card',
    intervalMs: 5_000,
    egress,
    timers,
    initial: card('1'),
    fetchCard: src.fetchCard,
    onChange: () => {
      changes += 1;
    },
  });
  r.start();
  assert.equal(src.calls, 0);
  assert.equal(timers.pending?.ms, 5_000);
  src.answers.push(card('1'));
  timers.fire();
  await settle();
  assert.equal(src.calls, 1);
  assert.equal(changes, 0);
  r.stop();
});

test('a failed fetch keeps the last good card, logs, and tries again at the next interval', async () => {
  const timers = new ManualTimers();
  const src = cardSource();
  const { logger, lines } = captureLogs();
  const changes: string[] = [];
  const r = new RemoteCardRefresher({
    cardUrl: 'https://agent.example.com/card',
    intervalMs: 1_000,
    egress,
    timers,
    logger,
    fetchCard: src.fetchCard,
    onChange: (c) => {
      changes.push(c.version ?? '');
    },
  });
  src.answers.push(card('1'));
  r.start();
  await settle();
  src.answers.push(new MeshError('UNAVAILABLE', 'agent card at https://agent.example.com/card: HTTP 503', { retryable: true }));
  timers.fire();
  await settle();
  assert.equal(r.card?.version, '1');
  const warn = lines.find((l) => l.level === 'warn');
  assert.ok(warn, 'the failure is logged');
  assert.equal(warn.code, 'UNAVAILABLE');
  assert.match(String(warn.err), /HTTP 503/);
  assert.equal(warn.cardUrl, 'https://agent.example.com/card');
  assert.equal(timers.pending?.ms, 1_000, 'the next refresh is still scheduled');
  src.answers.push(card('2'));
  timers.fire();
  await settle();
  assert.deepEqual(changes, ['1', '2']);
  r.stop();
});

test('a change whose handler failed is offered again at the next refresh', async () => {
  const timers = new ManualTimers();
  const src = cardSource();
  const { logger, lines } = captureLogs();
  let attempts = 0;
  const r = new RemoteCardRefresher({
    cardUrl: 'https://agent.example.com/card',
    intervalMs: 1_000,
    egress,
    timers,
    logger,
    initial: card('1'),
    fetchCard: src.fetchCard,
    onChange: () => {
      attempts += 1;
      if (attempts === 1) throw new Error('catalog write failed');
    },
  });
  r.start();
  src.answers.push(card('2'));
  timers.fire();
  await settle();
  assert.equal(attempts, 1);
  assert.ok(lines.some((l) => l.level === 'error' && /catalog write failed/.test(String(l.err))));
  src.answers.push(card('2'));
  timers.fire();
  await settle();
  assert.equal(attempts, 2);
  src.answers.push(card('2'));
  timers.fire();
  await settle();
  assert.equal(attempts, 2, 'handled once it succeeded');
  r.stop();
});

test('stop abandons a fetch in flight: no onChange after it, nothing scheduled', async () => {
  const timers = new ManualTimers();
  let release!: (c: RemoteAgentCard) => void;
  let signal: AbortSignal | undefined;
  let changes = 0;
  const r = new RemoteCardRefresher({
    cardUrl: 'https://agent.example.com/card',
    intervalMs: 1_000,
    egress,
    timers,
    fetchCard: (s) => {
      signal = s;
      return new Promise((resolve) => (release = resolve));
    },
    onChange: () => {
      changes += 1;
    },
  });
  r.start();
  await settle();
  r.stop();
  assert.equal(signal?.aborted, true);
  release(card('1'));
  await settle();
  assert.equal(changes, 0);
  assert.equal(timers.pending, undefined);
});

test('a refresh interval that is not a positive number is a configuration error', () => {
  for (const intervalMs of [0, -1, Number.NaN, Infinity]) {
    assert.throws(
      () => new RemoteCardRefresher({ cardUrl: 'https://a.example/card', intervalMs, egress, onChange: () => undefined }),
      (err: unknown) => err instanceof MeshError && err.code === 'CONFIG_INVALID' && /positive number of ms/.test(err.message),
    );
  }
});
