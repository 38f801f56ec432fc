import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { DataSource } from 'typeorm';
import type { TaskRow } from './task-db.js';
import { stateName } from './task-state.js';

/**
 * ListTasks of one tenant and agent: newest status first, keyset pagination on (status_timestamp, id).
 * Every writer keeps the column equal to the `status.timestamp` the task shows, so a page is in the
 * order of the timestamps it returns and the cursor ([that timestamp, id]) continues it exactly.
 */
export async function listTasks(ds: DataSource, params: ListTasksRequest, tenant: string, agentId: string): Promise<ListTasksResponse> {
  const pageSize = params.pageSize ?? 50;
  const where = ['tenant = $1', 'agent_id = $2'];
  const args: unknown[] = [tenant, agentId];
  if (params.contextId) {
    args.push(params.contextId);
    where.push(`context_id = $${args.length}`);
  }
  if (params.status) {
    args.push(stateName(params.status));
    where.push(`state = $${args.length}`);
  }
  if (params.statusTimestampAfter) {
    args.push(new Date(params.statusTimestampAfter));
    where.push(`status_timestamp > $${args.length}`);
  }
  const filter = where.join(' AND ');
  const [{ total }] = await ds.query(`SELECT count(*)::int AS total FROM dispatcher.tasks WHERE ${filter}`, args);
  const pageArgs = [...args];
  let cursor = '';
  if (params.pageToken) {
    const [ts, id] = decodeCursor(params.pageToken);
    pageArgs.push(ts, id);
    cursor = ` AND (status_timestamp, id) < ($${pageArgs.length - 1}::timestamptz, $${pageArgs.length})`;
  }
  pageArgs.push(pageSize + 1);
  const rows: Array<TaskRow & { ts: string }> = await ds.query(
    `SELECT id, task, to_char(status_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ts
       FROM dispatcher.tasks WHERE ${filter}${cursor} ORDER BY status_timestamp DESC, id DESC LIMIT $${pageArgs.length}`,
    pageArgs,
  );
  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  return {
    tasks: page.map((r) => {
      const t = Task.fromJSON(r.task);
      if (!params.includeArtifacts) t.artifacts = [];
      return t;
    }),
    nextPageToken: rows.length > pageSize && last ? encodeCursor(last.ts, last.id) : '',
    pageSize,
    totalSize: total,
  };
}

function encodeCursor(ts: string, id: string): string {
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

function decodeCursor(token: string): [string, string] {
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
