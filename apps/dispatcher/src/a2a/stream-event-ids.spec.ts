import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Response } from 'express';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { resumePointOf, StreamEventIds } from './stream-event-ids.js';

test('the resume point: the header, else the query parameter; non-negative integers only', () => {
  assert.equal(resumePointOf(undefined, undefined), undefined);
  assert.equal(resumePointOf('', undefined), undefined);
  assert.equal(resumePointOf('7', '9'), 7);
  assert.equal(resumePointOf(undefined, '9'), 9);
  assert.equal(resumePointOf(' 0 ', undefined), 0);
  for (const bad of ['-1', 'abc', '1.5', '1e3', '9999999999999999']) {
    const r = resumePointOf(bad, undefined);
    assert.ok(r instanceof RequestMalformedError, bad);
    assert.match(r.message, /Last-Event-ID must be an event id/);
  }
  assert.ok(resumePointOf(undefined, ['1', '2']) instanceof RequestMalformedError, 'a repeated parameter');
});

test('each data event written gets the id its event was yielded with; error events get none', () => {
  const written: string[] = [];
  const res = { write: (chunk: string) => written.push(chunk) > 0 } as unknown as Response;
  const ids = new StreamEventIds(3);
  ids.attach(res);
  ids.next(4);
  res.write('data: {"a":1}\n\n');
  res.write('event: error\ndata: {"e":1}\n\n');
  ids.next(5);
  res.write('data: {"b":2}\n\n');
  assert.deepEqual(written, ['id: 4\ndata: {"a":1}\n\n', 'event: error\ndata: {"e":1}\n\n', 'id: 5\ndata: {"b":2}\n\n']);
  assert.equal(ids.resumeAfter, 3);
});

/** An express app whose one route opens its stream early, then answers as `then` says. */
async function earlyStream(then: (res: Response) => void): Promise<{ status: number; type: string; body: string }> {
  const express = (await import('express')).default;
  const app = express();
  app.get('/', (_req, res) => {
    const ids = new StreamEventIds(1);
    ids.attach(res);
    ids.open();
    ids.open(); // a second call changes nothing
    then(res);
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const { port } = server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  } finally {
    server.close();
  }
}

test('open sends the SSE headers before any event; the headers the SDK sets with its first event change nothing', async () => {
  const r = await earlyStream((res) => {
    // What the SDK's writer does with the first event.
    res.setHeader('Content-Type', 'text/event-stream');
    res.flushHeaders();
    res.write('data: {"a":1}\n\n');
    res.end();
  });
  assert.deepEqual([r.status, r.type, r.body], [200, 'text/event-stream', 'data: {"a":1}\n\n']);
});

test('an error answered after open, which the SDK sends as a JSON body, goes as an SSE error event', async () => {
  const r = await earlyStream((res) => res.status(500).json({ jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'internal error' } }));
  assert.deepEqual(
    [r.status, r.type, r.body],
    [200, 'text/event-stream', 'event: error\ndata: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}\n\n'],
  );
});
