import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusAdmin } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { uniquePrefix } from '../support/infra.js';
import { startTestDispatcher } from '../support/dispatcher-harness.js';
import { cleanup, testKafka } from '../support/bus.js';

test('the dispatcher creates the events topic when missing but never grows it (keyed by task: growing splits a task)', async () => {
  const prefix = uniquePrefix('topics');
  const events = new TopicNames(prefix).events();
  const kafka = testKafka('dispatcher-topics');
  const admin = new BusAdmin(kafka);
  cleanup(() => admin.close());
  await admin.ensureTopic(events, { partitions: 2 });
  await startTestDispatcher('topics', {}, { TOPIC_PREFIX: prefix, EVENTS_TOPIC_PARTITIONS: '4' });
  const raw = kafka.admin();
  await raw.connect();
  try {
    const [meta] = (await raw.fetchTopicMetadata({ topics: [events] })).topics;
    assert.equal(meta.partitions.length, 2);
  } finally {
    await raw.disconnect();
  }
});
