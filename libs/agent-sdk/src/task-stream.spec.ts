import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { isRetryableStreamError, StreamResumption } from './task-stream.js';

test('a dropped connection or an overloaded server is retried; a request the server refuses is not', () => {
  assert.equal(isRetryableStreamError(new TypeError('fetch failed')), true);
  assert.equal(isRetryableStreamError(new Error('terminated')), true);
  assert.equal(isRetryableStreamError(new TaskNotFoundError('Task not found: x')), false);
  assert.equal(isRetryableStreamError(new RequestMalformedError('Last-Event-ID 1 of task x has expired')), false);
});

test('the resumption fetch sends Last-Event-ID while set and keeps one id per data event of a stream', async () => {
  const sent: Array<string | null> = [];
  const sse = 'id: 4\ndata: {"a":1}\n\n: comment\n\ndata: {"b":2}\n\nevent: error\ndata: {"e":1}\n\nid: 6\r\ndata: {"c":3}\r\n\r\n';
  const inner: typeof fetch = async (_input, init) => {
    sent.push(new Headers(init?.headers).get('last-event-id'));
    return new Response(sse, { headers: { 'content-type': 'text/event-stream' } });
  };
  const r = new StreamResumption(inner);
  r.resumeAfter = '3';
  await (await r.fetch('http://x/')).text();
  r.resumeAfter = undefined;
  await (await r.fetch('http://x/')).arrayBuffer();
  assert.deepEqual(sent, ['3', null]);
  r.reset();
  await (await r.fetch('http://x/')).text();
  assert.deepEqual([r.takeId(), r.takeId(), r.takeId(), r.takeId()], ['4', undefined, '6', undefined]);
});
