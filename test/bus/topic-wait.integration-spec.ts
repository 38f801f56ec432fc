import { test } from 'node:test';
import assert from 'node:assert/strict';
import { awaitTopics, BusAdmin } from '@mesh/bus';
import { MeshError } from '@mesh/contract';
import { uniquePrefix } from '../support/infra.js';
import { cleanup, testKafka } from '../support/bus.js';

const kafka = testKafka('topic-wait');

test('a service waiting for a topic its owner never creates fails with an error naming the topic and the owner', async () => {
  const topic = `${uniquePrefix('topic-wait')}never`;
  const waited: string[] = [];
  const started = Date.now();
  await assert.rejects(
    awaitTopics(kafka, [topic], { owner: 'the directory', timeoutMs: 1000, pollMs: 100, onWait: (t) => void waited.push(t) }),
    (err: unknown) =>
      err instanceof MeshError &&
      err.code === 'UNAVAILABLE' &&
      err.message.includes(topic) &&
      err.message.includes('created by its owner, the directory'),
  );
  assert.ok(Date.now() - started >= 1000, 'it waited the whole timeout');
  assert.deepEqual(waited, [topic], 'told once that it waits');
  const admin = new BusAdmin(kafka);
  cleanup(() => admin.close());
  assert.equal(await admin.topicExists(topic), false, 'waiting never creates the topic');
});

test('a service waiting for a topic goes on as soon as its owner creates it', async () => {
  const topic = `${uniquePrefix('topic-wait')}later`;
  const owner = new BusAdmin(kafka);
  cleanup(() => owner.close());
  let done = false;
  const waiting = awaitTopics(kafka, [topic], { owner: 'the dispatcher', timeoutMs: 30_000, pollMs: 100 }).then(() => (done = true));
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(done, false, 'still waiting while the topic is missing');
  await owner.ensureTopic(topic, { partitions: 2 });
  await waiting;
  assert.equal(done, true);
});
