import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState, type ListTasksRequest } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { decodeCursor, encodeCursor, LIST_PAGE_MAX_BYTES, listQuery, listResponse } from './task-list.js';

const request = (over: Partial<ListTasksRequest> = {}): ListTasksRequest =>
  ({
    tenant: '',
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageToken: '',
    includeArtifacts: false,
    ...over,
  }) as ListTasksRequest;

test('a page token round-trips, and anything the server did not issue is a malformed request', () => {
  const token = encodeCursor('2026-01-02T03:04:05.678901Z', 'task-1');
  assert.deepEqual(decodeCursor(token), ['2026-01-02T03:04:05.678901Z', 'task-1']);
  for (const bad of [
    'not base64 json',
    Buffer.from('["1","x"]').toString('base64url'),
    encodeCursor('2025-02-30T00:00:00.000000Z', 'x'),
    encodeCursor('0000-01-01T00:00:00.000000Z', 'x'),
    encodeCursor('2026-01-02T03:04:05.678Z', 'x'),
    encodeCursor('2026-01-02T03:04:05.678901Z', ''),
    encodeCursor('2026-01-02T03:04:05.678901Z', 'a\u0000b'),
  ]) {
    assert.throws(() => decodeCursor(bad), RequestMalformedError, bad);
  }
});

test('a request asks for one row more than its page, narrowed by what it names', () => {
  assert.deepEqual(listQuery(request(), 'acme', 'a'), {
    tenant: 'acme',
    agentId: 'a',
    limit: 51,
    withArtifacts: false,
    maxBytes: LIST_PAGE_MAX_BYTES,
  });
  const token = encodeCursor('2026-01-02T03:04:05.678901Z', 'task-1');
  assert.deepEqual(
    listQuery(
      request({
        contextId: 'c',
        status: TaskState.TASK_STATE_WORKING,
        statusTimestampAfter: '1970-01-01T00:00:00.005Z',
        pageSize: 3,
        pageToken: token,
      }),
      'acme',
      'a',
    ),
    {
      tenant: 'acme',
      agentId: 'a',
      contextId: 'c',
      state: 'TASK_STATE_WORKING',
      statusAfter: new Date(5),
      after: ['2026-01-02T03:04:05.678901Z', 'task-1'],
      limit: 4,
      withArtifacts: false,
      maxBytes: LIST_PAGE_MAX_BYTES,
    },
  );
});

test('the extra row only says another page follows; its token continues after the last row shown', () => {
  const rows = ['3', '2', '1'].map((id) => ({
    id,
    task: { id, contextId: 'c', artifacts: [{ artifactId: 'x' }] },
    ts: `2026-01-0${id}T00:00:00.000000Z`,
  }));
  const page = listResponse(request({ pageSize: 2 }), { total: 7, rows });
  assert.deepEqual(
    page.tasks.map((t) => t.id),
    ['3', '2'],
  );
  assert.deepEqual(decodeCursor(page.nextPageToken), ['2026-01-02T00:00:00.000000Z', '2']);
  assert.equal(page.totalSize, 7);
  assert.equal(page.pageSize, 2);
  assert.deepEqual(page.tasks[0].artifacts, [], 'artifacts only when asked for');
  const last = listResponse(request({ pageSize: 3, includeArtifacts: true }), { total: 3, rows });
  assert.equal(last.nextPageToken, '');
  assert.equal(last.tasks[0].artifacts.length, 1);
});

test('pageSize is the number of tasks the page holds: fewer than asked for, 0 when empty', () => {
  const rows = ['2', '1'].map((id) => ({ id, task: { id, contextId: 'c' }, ts: `2026-01-0${id}T00:00:00.000000Z` }));
  assert.equal(listResponse(request({ pageSize: 10 }), { total: 2, rows }).pageSize, 2);
  assert.equal(listResponse(request({}), { total: 2, rows }).pageSize, 2, 'default page size 50, two tasks');
  const empty = listResponse(request({ pageSize: 10 }), { total: 0, rows: [] });
  assert.deepEqual([empty.tasks.length, empty.pageSize, empty.totalSize, empty.nextPageToken], [0, 0, 0, '']);
});

test('a row past the byte budget ends the page: the token continues after the last row shown', () => {
  const row = (id: string, task: boolean) => ({
    id,
    task: task ? { id, contextId: 'c' } : null,
    ts: `2026-01-0${id}T00:00:00.000000Z`,
  });
  const page = listResponse(request({ pageSize: 5 }), {
    total: 4,
    rows: [row('4', true), row('3', true), row('2', false), row('1', false)],
  });
  assert.deepEqual(
    page.tasks.map((t) => t.id),
    ['4', '3'],
  );
  assert.deepEqual(decodeCursor(page.nextPageToken), ['2026-01-03T00:00:00.000000Z', '3']);
});
