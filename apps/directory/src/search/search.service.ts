import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import type { DataSource } from 'typeorm';
import type { Principal } from '@mesh/auth';
import { DATA_SOURCE } from '../common/tokens.js';
import { DirectoryError } from '../common/directory.exception.js';
import { parseOrThrow } from '../registry/registry.schemas.js';
import { AgentEntity } from '../registry/agent.entity.js';

const one = z.string().min(1).max(200);

/** Query parameters of `GET /v1/agents`. */
export const searchQuerySchema = z.strictObject({
  q: z.string().trim().min(1).max(500).optional(),
  skill: one.optional(),
  tag: one.optional(),
  inputMode: one.optional(),
  outputMode: one.optional(),
  healthy: z.enum(['true', 'false']).optional(),
  visibility: z.enum(['private', 'tenant', 'public']).optional(),
  includeRetired: z.enum(['true', 'false']).optional(),
  cursor: z.string().max(500).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export type SearchQuery = z.output<typeof searchQuerySchema>;

/** Opaque cursor: the last row's sort key (rank and id for ranked queries, id otherwise). */
interface Cursor {
  r?: number;
  id: string;
}

const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
function decodeCursor(s: string, ranked: boolean): Cursor {
  try {
    const c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.id !== 'string' || (ranked && typeof c.r !== 'number')) throw new Error('shape');
    return c;
  } catch {
    throw new DirectoryError('VALIDATION_FAILED', 'invalid cursor', [{ field: 'cursor', message: 'not a cursor this search returned' }]);
  }
}

/** One page of results. */
export interface SearchPage {
  items: Array<{ agent: AgentEntity; rank?: number }>;
  nextCursor: string | null;
}

type Row = Record<string, unknown> & { rank?: number };

/**
 * Search over what the caller's tenant may see: its own `tenant` agents, every `public` one, and
 * its own `private` ones only when asked for with `visibility=private` (private agents are unlisted).
 * Free text is Postgres full-text search (`websearch_to_tsquery`), ranked by `ts_rank` over the
 * weighted document; keyset pagination on (rank, id).
 */
@Injectable()
export class SearchService {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  parse(query: unknown): SearchQuery {
    return parseOrThrow(searchQuerySchema, query, 'search query');
  }

  async search(viewer: Principal, q: SearchQuery): Promise<SearchPage> {
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const where: string[] = [];
    const tenant = p(viewer.tenant);
    if (q.visibility === 'private') where.push(`a.tenant = ${tenant} AND a.visibility = 'private'`);
    else if (q.visibility === 'tenant') where.push(`a.tenant = ${tenant} AND a.visibility = 'tenant'`);
    else if (q.visibility === 'public') where.push(`a.visibility = 'public'`);
    else where.push(`((a.tenant = ${tenant} AND a.visibility = 'tenant') OR a.visibility = 'public')`);
    if (q.includeRetired !== 'true') where.push('a.retired_at IS NULL');
    if (q.skill) where.push(`a.skill_ids @> ARRAY[${p(q.skill)}]::text[]`);
    if (q.tag) where.push(`a.skill_tags @> ARRAY[${p(q.tag.toLowerCase())}]::text[]`);
    if (q.inputMode) where.push(`a.input_modes @> ARRAY[${p(q.inputMode)}]::text[]`);
    if (q.outputMode) where.push(`a.output_modes @> ARRAY[${p(q.outputMode)}]::text[]`);
    if (q.healthy === 'true') where.push(`a.healthy_until > now() AND a.retired_at IS NULL`);
    if (q.healthy === 'false') where.push(`(a.healthy_until IS NULL OR a.healthy_until <= now() OR a.retired_at IS NOT NULL)`);

    const ranked = q.q !== undefined;
    const cursor = q.cursor ? decodeCursor(q.cursor, ranked) : undefined;
    const meta = this.ds.getMetadata(AgentEntity);
    // Every column but the tsvector, which is large and never returned.
    const columns = meta.columns.filter((c) => c.propertyName !== 'searchDocument');
    // Two phases: find the page's ids (and ranks) over narrow rows, then fetch those rows whole.
    let page: string;
    if (ranked) {
      const tsq = p(q.q);
      where.push(`a.search_document @@ websearch_to_tsquery('english', ${tsq})`);
      page = `SELECT h.id, h.rank FROM (
          SELECT a.id, ts_rank(a.search_document, websearch_to_tsquery('english', ${tsq})) AS rank
          FROM directory.agent a WHERE ${where.join(' AND ')}) h`;
      // rank is float4; the cursor carries it as the same float4 value, so equality is exact.
      if (cursor) page += ` WHERE (h.rank < ${p(cursor.r)}::real OR (h.rank = ${p(cursor.r)}::real AND h.id > ${p(cursor.id)}))`;
      page += ` ORDER BY h.rank DESC, h.id ASC LIMIT ${p(q.limit + 1)}`;
    } else {
      if (cursor) where.push(`a.id > ${p(cursor.id)}`);
      page = `SELECT a.id, NULL::real AS rank FROM directory.agent a WHERE ${where.join(' AND ')} ORDER BY a.id ASC LIMIT ${p(q.limit + 1)}`;
    }
    const sql = `WITH page AS (${page})
      SELECT ${columns.map((c) => `a.${c.databaseName}`).join(', ')}, page.rank
      FROM page JOIN directory.agent a ON a.id = page.id
      ORDER BY ${ranked ? 'page.rank DESC, ' : ''}a.id ASC`;

    const rows: Row[] = await this.ds.query(sql, params);
    const more = rows.length > q.limit;
    const pageRows = rows.slice(0, q.limit);
    const items = pageRows.map((row) => {
      const agent = this.ds.manager.create(AgentEntity, {}) as AgentEntity;
      for (const col of columns) (agent as unknown as Record<string, unknown>)[col.propertyName] = row[col.databaseName];
      return ranked ? { agent, rank: Number(row.rank) } : { agent };
    });
    const last = pageRows.at(-1);
    const nextCursor = more && last ? encodeCursor(ranked ? { r: Number(last.rank), id: String(last.id) } : { id: String(last.id) }) : null;
    return { items, nextCursor };
  }
}
