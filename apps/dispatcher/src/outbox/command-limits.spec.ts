import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '@mesh/bus';
import { CommandLimits } from './command-limits.js';

/** A broker whose limits the test sets; `reads` counts what was asked. */
function broker(limits: Record<string, number>, brokerLimit = 2_000_000) {
  const reads: Array<string | undefined> = [];
  return {
    reads,
    limits,
    source: {
      maxMessageBytes: async (topic?: string) => {
        reads.push(topic);
        if (topic === undefined) return brokerLimit;
        if (topic === 'fails') throw new Error('broker unreachable');
        return limits[topic] ?? brokerLimit;
      },
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

test("Kafka's default stands in until the broker answers; then a topic's own limit, read on its first use", async () => {
  const b = broker({ small: 20_000 });
  const limits = new CommandLimits(b.source, { refreshMs: 60_000 });
  assert.equal(limits.limitOf('small'), KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  await settle();
  assert.equal(limits.limitOf('small'), 20_000);
  await limits.refresh();
  assert.equal(limits.limitOf('other'), 2_000_000, "the broker's default for a topic not read yet");
});

test('a refresh and a reread follow a limit an operator changed; a failed read keeps the last known one', async () => {
  const b = broker({ t: 50_000 });
  const limits = new CommandLimits(b.source, { refreshMs: 60_000 });
  limits.limitOf('t');
  await settle();
  b.limits.t = 10_000;
  assert.equal(limits.limitOf('t'), 50_000);
  limits.reread('t');
  await settle();
  assert.equal(limits.limitOf('t'), 10_000);
  b.limits.t = 30_000;
  await limits.refresh();
  assert.equal(limits.limitOf('t'), 30_000);
  limits.limitOf('fails');
  await settle();
  assert.equal(limits.limitOf('fails'), 2_000_000, "the broker's default while its own cannot be read");
  await limits.refresh();
  assert.equal(limits.limitOf('t'), 30_000, 'one unreadable topic does not stop the others');
});
