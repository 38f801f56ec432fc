import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Kafka } from 'kafkajs';
import { BusAdmin } from './bus-admin.js';

/** A kafkajs client whose admin answers DescribeConfigs with `entries` (pure logic: no broker). */
function kafkaDescribing(entries: Array<{ configName: string; configValue: string }>): Kafka {
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    describeConfigs: async () => ({ resources: [{ configEntries: entries }] }),
  };
  return { admin: () => admin } as unknown as Kafka;
}

test("a topic's retention is read from the broker (-1: forever); a broker that does not say is an error, not a guess", async () => {
  assert.equal(await new BusAdmin(kafkaDescribing([{ configName: 'retention.ms', configValue: '86400000' }])).retentionMs('t'), 86_400_000);
  assert.equal(await new BusAdmin(kafkaDescribing([{ configName: 'retention.ms', configValue: '-1' }])).retentionMs('t'), -1);
  await assert.rejects(new BusAdmin(kafkaDescribing([])).retentionMs('t'), /did not say the retention of topic t/);
});
