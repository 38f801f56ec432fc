import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Json, TaskListPage, TaskListQuery } from './task.repository.js';
import { stateName } from './task-state.js';

/*
 * ListTasks of one tenant and agent: newest status first, keyset pagination on (status_timestamp, id).
 * Every writer keeps the column equal to the `status.timestamp` the task shows, so a page is in the
 * order of the timestamps it returns and the cursor ([that timestamp, id]) continues it exactly.
 */

const DEFAULT_PAGE_SIZE = 50;

/**
 * Byte budget of a ListTasks page (its tasks as JSON text, artifacts counted only when included):
 * a page ends with the task that reaches it and says with its nextPageToken that more follow; a
 * single task larger than the budget comes alone. Bounds what one small request makes the
 * dispatcher read, hold and send.
 */
export const LIST_PAGE_MAX_BYTES = 1024 * 1024;

/** The rows a ListTasks request asks for: one more than a page, to tell whether another follows. A foreign pageToken is refused. */
export function listQuery(params: ListTasksRequest, tenant: string, agentId: string): TaskListQuery {
  return {
    tenant,
    agentId,
    ...(params.contextId ? { contextId: params.contextId } : {}),
    ...(params.status ? { state: stateName(params.status) } : {}),
    ...(params.statusTimestampAfter ? { statusAfter: new Date(params.statusTimestampAfter) } : {}),
    ...(params.pageToken ? { after: decodeCursor(params.pageToken) } : {}),
    limit: (params.pageSize ?? DEFAULT_PAGE_SIZE) + 1,
    withArtifacts: params.includeArtifacts === true,
    maxBytes: LIST_PAGE_MAX_BYTES,
  };
}

/**
 * The ListTasks answer for the rows {@link listQuery} asked for. Its `pageSize` is the number of
 * tasks this page holds (0 for an empty one), as the A2A TCK checks — not the size asked for.
 */
export function listResponse(params: ListTasksRequest, { total, rows }: TaskListPage): ListTasksResponse {
  const limit = params.pageSize ?? DEFAULT_PAGE_SIZE;
  // Rows past the byte budget come without their task: the page ends before them.
  const fits = rows.findIndex((r) => r.task === null);
  const page = rows.slice(0, Math.min(limit, fits === -1 ? rows.length : fits)) as Array<{ id: string; task: Json; ts: string }>;
  const last = page[page.length - 1];
  return {
    tasks: page.map((r) => {
      const t = Task.fromJSON(r.task);
      if (!params.includeArtifacts) t.artifacts = [];
      return t;
    }),
    nextPageToken: rows.length > page.length && last ? encodeCursor(last.ts, last.id) : '',
    pageSize: page.length,
    totalSize: total,
  };
}

/** A page token: the last row's status timestamp (microseconds, UTC) and id. */
export function encodeCursor(ts: string, id: string): string {
  return Buffer.from(JSON.stringify([ts, id]), 'utf8').toString('base64url');
}

const CURSOR_TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
// A real instant in both JS and Postgres: no 2025-02-30, no year 0.
const isCursorTs = (v: unknown) =>
  typeof v === 'string' &&
  CURSOR_TS.test(v) &&
  !v.startsWith('0000') &&
  !Number.isNaN(Date.parse(v)) &&
  new Date(v).toISOString().slice(0, 19) === v.slice(0, 19);
// eslint-disable-next-line no-control-regex
const isCursorId = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= 256 && !/[\u0000-\u001f\ud800-\udfff]/.test(v);

/** The [timestamp, id] of a page token {@link encodeCursor} wrote; anything else is a malformed request. */
export function decodeCursor(token: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    // Exactly what encodeCursor writes (to_char's format, a task id): `["1","x"]` parses as a
    // date in JS but not in Postgres, and must be refused here, not by the database.
    if (Array.isArray(v) && v.length === 2 && isCursorTs(v[0]) && isCursorId(v[1])) {
      return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw new RequestMalformedError('pageToken is not a token this server issued');
}
