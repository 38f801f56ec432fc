import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusAdmin, createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { testRun, uniquePrefix } from '../support/infra.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

// Found through an intermittent apps-start failure ("topic …cards has no leaders after 60000 ms"):
// the dispatcher's catalog had created the cards topic with 1 partition before the directory
// started, and the directory waited for the leader of a 3rd partition that would never exist.
// Whichever service creates the directory's topics first, and with whatever partition count, the
// directory starts and works on them.
const prefix = uniquePrefix('shared-topics');
const topics = new TopicNames(prefix);
const admin = new BusAdmin(createKafka({ brokers: testRun().brokers, clientId: 'shared-topics-test' }));
await admin.ensureTopic(topics.cards(), { partitions: 1, compacted: true });
await admin.ensureTopic(topics.heartbeats(), { partitions: 1 });
await admin.close();
const { dir } = await startTestDirectory('shared-topics', { TOPIC_PREFIX: prefix });

test('the directory starts and registers agents on cards and heartbeats topics another service created with fewer partitions', async () => {
  assert.equal((await fetch(`${dir.url}/healthz`)).status, 200);
  const r = await client(dir.url)(KEYS.acme, 'POST', '/v1/agents', { id: 'shared-topics-agent', card: card('Shared') });
  assert.equal(r.status, 201, JSON.stringify(r.body));
});
