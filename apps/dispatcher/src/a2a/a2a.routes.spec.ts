import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routeOf } from './a2a.routes.js';

const at = (method: string, path: string) => routeOf({ method, path });

test('exact spellings are classified by the route table, with and without the tenant prefix, 1.0 and 0.3', () => {
  assert.deepEqual(at('POST', '/message:send'), { kind: 'route', startsWork: true, opensStream: false });
  assert.deepEqual(at('POST', '/acme/message:stream'), { kind: 'route', startsWork: true, opensStream: true });
  assert.deepEqual(at('GET', '/tasks/t-1:subscribe'), { kind: 'route', startsWork: false, opensStream: true });
  assert.deepEqual(at('HEAD', '/tasks/t-1:subscribe'), { kind: 'route', startsWork: false, opensStream: true });
  assert.deepEqual(at('POST', '/v1/tasks/t-1:subscribe'), { kind: 'route', startsWork: false, opensStream: true });
  assert.deepEqual(at('POST', '/v1/message:send'), { kind: 'route', startsWork: true, opensStream: false });
  assert.deepEqual(at('GET', '/tasks/t-1'), { kind: 'route', startsWork: false, opensStream: false });
  assert.deepEqual(at('GET', '/Acme/tasks'), { kind: 'route', startsWork: false, opensStream: false });
  assert.deepEqual(at('GET', '/.well-known/agent-card.json'), { kind: 'route', startsWork: false, opensStream: false });
});

test('spellings express would match to a route but that are not exactly it are refused', () => {
  for (const [method, path] of [
    ['POST', '/MESSAGE:SEND'],
    ['POST', '/message:send/'],
    ['POST', '/Message:Stream'],
    ['POST', '/acme/message:SEND'],
    ['POST', '/V1/message:send'],
    ['GET', '/tasks/t-1:SUBSCRIBE'],
    ['POST', '/tasks/t-1:subscribe/'],
    ['GET', '/v1/tasks/t-1:Subscribe'],
    ['GET', '/TASKS'],
    ['GET', '/tasks/t-1/'],
    ['GET', '/.WELL-KNOWN/agent-card.json'],
    ['GET', '/.well-known/agent-card.json/'],
  ]) {
    assert.deepEqual(at(method, path), { kind: 'misspelled' }, `${method} ${path}`);
  }
});

test('paths of no route, and methods a route does not take, are left to the routers behind', () => {
  assert.deepEqual(at('POST', '/'), { kind: 'other' });
  assert.deepEqual(at('GET', '/message:send'), { kind: 'other' });
  assert.deepEqual(at('POST', '/message%3Asend'), { kind: 'other' });
  assert.deepEqual(at('GET', '/nothing/here/at/all'), { kind: 'other' });
});
