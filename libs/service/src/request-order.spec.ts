import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Request, Response } from 'express';
import { setTimeout as sleep } from 'node:timers/promises';
import { HealthModule } from './health.js';
import { startHttpService } from './http-service.js';

/** Sends `raw` in one write; resolves with what came back once the server closed, or after `waitMs`. */
function exchange(port: number, raw: string, waitMs = 2000): Promise<{ answer: string; statuses: number[]; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    let closedByServer = false;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answer, statuses: [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), closedByServer });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('error', () => undefined);
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    socket.on('end', () => (closedByServer = true));
    socket.on('close', finish);
    socket.write(raw);
  });
}

const get = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nhost: localhost\r\n${headers}\r\n`;
const post = (path: string, body: string) =>
  `POST ${path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;

/** A service whose routes record when each request started and ended running. */
async function startService() {
  const events: string[] = [];
  const app = await startHttpService({
    module: HealthModule.forProbes([]),
    port: 0,
    configure: (a) => {
      // Answered later, the connection closed (as a refusal of an unauthenticated body is).
      a.use('/refuse', (req: Request, res: Response) => {
        events.push(`start ${req.originalUrl}`);
        setTimeout(() => res.status(401).set('Connection', 'close').json({ error: 'refused' }), 100);
      });
      a.use('/slow', (req: Request, res: Response) => {
        events.push(`start ${req.originalUrl}`);
        setTimeout(() => {
          events.push(`end ${req.originalUrl}`);
          res.json({ slow: true });
        }, 200);
      });
      a.use('/effect', (req: Request, res: Response) => {
        events.push(`start ${req.originalUrl}`);
        res.json({ effect: true });
      });
    },
  });
  const port = ((app.getHttpServer() as Server).address() as AddressInfo).port;
  return { app, port, events };
}

test('a request pipelined behind an answer that closes the connection is never run', async () => {
  const { app, port, events } = await startService();
  try {
    const r = await exchange(port, post('/refuse', '{}') + post('/effect', '{"a":1}') + get('/effect?third'));
    assert.deepEqual(r.statuses, [401], r.answer);
    assert.ok(r.closedByServer);
    await sleep(200);
    assert.deepEqual(events, ['start /refuse'], 'nothing after the refusal ran');
  } finally {
    await app.close();
  }
});

test('pipelined requests on a kept-alive connection all run, one at a time and in order', async () => {
  const { app, port, events } = await startService();
  try {
    const r = await exchange(port, get('/slow?1') + post('/effect?2', '{}') + get('/slow?3') + get('/effect?4'), 1500);
    assert.deepEqual(r.statuses, [200, 200, 200, 200], r.answer);
    assert.equal(r.closedByServer, false);
    assert.deepEqual(events, ['start /slow?1', 'end /slow?1', 'start /effect?2', 'start /slow?3', 'end /slow?3', 'start /effect?4']);
  } finally {
    await app.close();
  }
});
