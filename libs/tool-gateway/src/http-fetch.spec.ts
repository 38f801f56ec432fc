import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { httpFetch } from './http-fetch.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const srv: Server = createServer(handler);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => {
    srv.closeAllConnections();
    srv.close();
  });
  return `http://127.0.0.1:${(srv.address() as { port: number }).port}/mcp`;
}

test('a JSON answer is read whole; request headers and body reach the server', async () => {
  const url = await serve((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' });
      res.end(JSON.stringify({ got: JSON.parse(body), accept: req.headers.accept }));
    });
  });
  const f = httpFetch();
  after(() => f.close());
  const res = await f(url, { method: 'POST', headers: new Headers({ accept: 'application/json' }), body: '{"a":1}' });
  assert.equal(res.ok, true);
  assert.equal(res.headers.get('mcp-session-id'), 's-1');
  assert.deepEqual(await res.json(), { got: { a: 1 }, accept: 'application/json' });
});

test('an SSE answer is handed over as a stream; an error status keeps its body', async () => {
  const url = await serve((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      return void setTimeout(() => res.end('data: two\n\n'), 20);
    }
    if (req.method === 'DELETE') {
      // A null-body status with a stream's content type: read whole, never wrapped as a stream.
      res.writeHead(204, { 'content-type': 'text/event-stream' });
      return void res.end();
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"unknown session"}');
  });
  const f = httpFetch();
  after(() => f.close());
  const stream = await f(url);
  assert.equal(await stream.text(), 'data: one\n\ndata: two\n\n');
  const accepted = await f(url, { method: 'DELETE' });
  assert.equal(accepted.status, 204);
  assert.equal(await accepted.text(), '');
  const missing = await f(url, { method: 'POST', body: '{}' });
  assert.equal(missing.status, 404);
  assert.equal(missing.ok, false);
  assert.equal(await missing.text(), '{"error":"unknown session"}');
});

test('no server is a TypeError as from fetch; an abort rejects with its reason', async () => {
  const f = httpFetch();
  after(() => f.close());
  await assert.rejects(f('http://127.0.0.1:1/mcp', { method: 'POST', body: '{}' }), (e: unknown) => e instanceof TypeError);
  const url = await serve(() => undefined); // never answers
  const ac = new AbortController();
  const pending = f(url, { method: 'POST', body: '{}', signal: ac.signal });
  ac.abort(new Error('turn cancelled'));
  await assert.rejects(pending, /turn cancelled/);
  await assert.rejects(f(url, { signal: ac.signal }), /turn cancelled/);
});
