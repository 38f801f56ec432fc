import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemoryCardStream } from '@mesh/app-directory';
import { eventually } from '../support/infra.js';
import { card, client, KEYS, startTestDirectory } from './directory-fixtures.js';

/** A card stream whose Kafka side can be made to fail on demand. */
class FlakyStream extends InMemoryCardStream {
  topicsDown = false;
  override async ensureCommandTopic(agentId: string, partitions: number): Promise<void> {
    if (this.topicsDown) throw new Error('injected: broker refused CreateTopics');
    return super.ensureCommandTopic(agentId, partitions);
  }
}

const stream = new FlakyStream();
const { dir } = await startTestDirectory('failures', {}, { cardStream: stream });
const api = client(dir.url);

test('when the command topic cannot be created, registration is 503 and nothing is stored', async () => {
  stream.topicsDown = true;
  try {
    const r = await api(KEYS.acme, 'POST', '/v1/agents', { id: 'no-topic', card: card('No Topic') });
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'UNAVAILABLE');
    assert.ok(Number(r.headers.get('retry-after')) > 0);
  } finally {
    stream.topicsDown = false;
  }
  assert.equal((await api(KEYS.acme, 'GET', '/v1/agents/no-topic')).status, 404);
  assert.equal(stream.published.filter((p) => p.id === 'no-topic').length, 0, 'no record for a change that never happened');
  assert.equal((await api(KEYS.acme, 'POST', '/v1/agents', { id: 'no-topic', card: card('No Topic') })).status, 201, 'the id is free');
});

test('a failed publish does not fail the committed change; the outbox retries it', async () => {
  stream.failNext = 3;
  const r = await api(KEYS.acme, 'POST', '/v1/agents', { id: 'late-record', card: card('Late Record') });
  assert.equal(r.status, 201);
  await eventually('record published after retries', () => stream.published.some((p) => p.id === 'late-record'));
  assert.equal(stream.failNext, 0);
  await eventually('outbox drained', async () => (await dir.pendingCardRecords()) === 0);
});
