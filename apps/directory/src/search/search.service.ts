import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import type { DataSource } from 'typeorm';
import type { Principal } from '@mesh/auth';
import { isAgentId } from '@mesh/contract';
import { DATA_SOURCE } from '../common/tokens.js';
import { DirectoryError } from '../common/directory.exception.js';
import { parseOrThrow } from '../registry/registry.schemas.js';
import { AgentEntity } from '../registry/agent.entity.js';

const one = z.string().min(1).max(200);

/** Query parameters of `GET /v1/agents`. */
export const searchQuerySchema = z.strictObject({
  q: z.string().trim().min(1).max(500, 'at most 500 characters').optional(),
  skill: one.optional(),
  tag: one.optional(),
  inputMode: one.optional(),
  outputMode: one.optional(),
  healthy: z.enum(['true', 'false']).optional(),
  visibility: z.enum(['private', 'tenant', 'public']).optional(),
  includeRetired: z.enum(['true', 'false']).optional(),
  cursor: z.string().max(500).optional(),
  limit: z
    .string()
    .regex(/^[0-9]{1,3}$/, 'expected an integer from 1 to 100')
    .transform(Number)
    .pipe(z.number().int().min(1, 'expected an integer from 1 to 100').max(100, 'expected an integer from 1 to 100'))
    .default(20),
});

export type SearchQuery = z.output<typeof searchQuerySchema>;

/** Opaque cursor: the last row's sort key (rank and id for ranked queries, id otherwise). */
interface Cursor {
  r?: number;
  id: string;
}

// Decoded cursors are validated like any input: the rank is bound as a Postgres real (a value past
// range either way, e.g. 1e39 or 1e-50, is a database error) and the id is compared with text (a NUL is one too).
const agentIdField = z.string().refine(isAgentId, 'not an agent id');
const cursorSchemas = {
  ranked: z.strictObject({
    // A non-zero rank that rounds to zero as a float4 (1e-50) is an underflow error in Postgres.
    r: z
      .number()
      .finite()
      .min(0)
      .max(1e30)
      .refine((r) => r === 0 || Math.fround(r) !== 0, 'not a real'),
    id: agentIdField,
  }),
  plain: z.strictObject({ id: agentIdField }),
};

const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
function decodeCursor(s: string, ranked: boolean): Cursor {
  const invalid = () =>
    new DirectoryError('VALIDATION_FAILED', 'invalid cursor', [{ field: 'cursor', message: 'not a cursor this search returned' }]);
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const parsed = (ranked ? cursorSchemas.ranked : cursorSchemas.plain).safeParse(raw);
  if (!parsed.success) throw invalid();
  return parsed.data;
}

/** Most terms of a free-text query (each term adds operators to Postgres' bounded tsquery stack). */
export const MAX_SEARCH_TERMS = 16;
const WORD = /[\p{L}\p{N}]+(?:[-_.@/'+][\p{L}\p{N}]+)*/gu;

/**
 * Rewrites free text into the subset of `websearch_to_tsquery` syntax it is documented with: words,
 * `"quoted phrases"`, `or` between terms and one leading `-` to exclude a term. Anything else
 * (runs of `-`, brackets, stray operators) is dropped, so any string is safe to search: the raw
 * text could overflow the tsquery stack (`q` of 40 dashes was a 500). At most
 * {@link MAX_SEARCH_TERMS} terms are kept. Returns '' when nothing searchable remains.
 */
export function searchText(q: string): string {
  const out: string[] = [];
  let terms = 0;
  const token = /(-?)"([^"]*)"?|(-?)([^\s"]+)/gu;
  for (const m of q.matchAll(token)) {
    if (terms >= MAX_SEARCH_TERMS) break;
    const negated = (m[1] || m[3]) === '-';
    const words: string[] = (m[2] ?? m[4] ?? '').match(WORD) ?? [];
    if (words.length === 0) continue;
    if (m[4] !== undefined && words.length === 1 && /^or$/i.test(words[0]) && !negated) {
      // `or` joins two terms; leading, doubled or trailing ones are dropped.
      if (out.length > 0 && out.at(-1) !== 'or') out.push('or');
      continue;
    }
    const term = m[2] !== undefined || words.length > 1 ? `"${words.join(' ')}"` : words[0];
    out.push(negated ? `-${term}` : term);
    terms++;
  }
  if (out.at(-1) === 'or') out.pop();
  return out.join(' ');
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
    // Query values are single-line: no control character at all.
    return parseOrThrow(searchQuerySchema, query, 'search query', { allowLineBreaks: false });
  }

  async search(viewer: Principal, q: SearchQuery): Promise<SearchPage> {
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const where: string[] = [];
    // Bound only when a branch uses it: Postgres refuses a statement given a parameter it never reads.
    let tenantParam: string | undefined;
    const tenant = () => (tenantParam ??= p(viewer.tenant));
    if (q.visibility === 'private') where.push(`a.tenant = ${tenant()} AND a.visibility = 'private'`);
    else if (q.visibility === 'tenant') where.push(`a.tenant = ${tenant()} AND a.visibility = 'tenant'`);
    else if (q.visibility === 'public') where.push(`a.visibility = 'public'`);
    else where.push(`((a.tenant = ${tenant()} AND a.visibility = 'tenant') OR a.visibility = 'public')`);
    if (q.includeRetired !== 'true') where.push('a.retired_at IS NULL');
    if (q.skill) where.push(`a.skill_ids @> ARRAY[${p(q.skill)}]::text[]`);
    if (q.tag) where.push(`a.skill_tags @> ARRAY[${p(q.tag.toLowerCase())}]::text[]`);
    if (q.inputMode) where.push(`a.input_modes @> ARRAY[${p(q.inputMode)}]::text[]`);
    if (q.outputMode) where.push(`a.output_modes @> ARRAY[${p(q.outputMode)}]::text[]`);
    if (q.healthy === 'true') where.push(`a.healthy_until > now() AND a.retired_at IS NULL`);
    if (q.healthy === 'false') where.push(`(a.healthy_until IS NULL OR a.healthy_until <= now() OR a.retired_at IS NOT NULL)`);

    const ranked = q.q !== undefined;
    const cursor = q.cursor ? decodeCursor(q.cursor, ranked) : undefined;
    const text = q.q === undefined ? undefined : searchText(q.q);
    // Nothing searchable left (only operators or punctuation): matches nothing, like a stop word.
    if (text === '') return { items: [], nextCursor: null };
    const meta = this.ds.getMetadata(AgentEntity);
    // Every column but the tsvector, which is large and never returned.
    const columns = meta.columns.filter((c) => c.propertyName !== 'searchDocument');
    // Two phases: find the page's ids (and ranks) over narrow rows, then fetch those rows whole.
    let page: string;
    if (ranked) {
      const tsq = p(text);
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
