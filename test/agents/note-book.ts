import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { McpServer as LegacyMcpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServer } from '@modelcontextprotocol/server';

/**
 * A small notebook served as MCP tools by either SDK generation, so the same calls can be made
 * against servers of both protocol revisions: `get_note` reads, `add_note` has a side effect
 * (its result says how many times the note was added), and tests can slow or count calls.
 */
export class NoteBook {
  private readonly notes = new Map<string, { text: string; added: number }>();
  private readonly delays = new Map<string, number>();
  private readonly counts = new Map<string, { calls: number; aborted: number }>();
  /** The `_meta` of the last call of each tool. */
  readonly lastMeta = new Map<string, Record<string, unknown>>();

  delay(tool: string, ms: number): void {
    this.delays.set(tool, ms);
  }
  clear(): void {
    this.delays.clear();
  }
  calls(tool: string): number {
    return this.counts.get(tool)?.calls ?? 0;
  }
  aborted(tool: string): number {
    return this.counts.get(tool)?.aborted ?? 0;
  }

  /** Runs a tool the way both SDKs' handlers do: the request's signal ends a slow call. */
  async run(
    tool: 'get_note' | 'add_note',
    args: { id: string; text?: string; delay_ms?: number },
    meta: Record<string, unknown>,
    signal: AbortSignal,
  ) {
    const count = this.counts.get(tool) ?? { calls: 0, aborted: 0 };
    this.counts.set(tool, count);
    count.calls++;
    this.lastMeta.set(tool, meta);
    // `delay_ms` slows a call where the test cannot reach the server's state (a stdio child).
    const ms = Math.max(this.delays.get(tool) ?? 0, args.delay_ms ?? 0);
    if (ms) {
      try {
        await sleep(ms, undefined, { signal });
      } catch (err) {
        count.aborted++;
        throw err;
      }
    }
    if (tool === 'get_note') {
      const note = this.notes.get(args.id);
      return { content: [{ type: 'text' as const, text: note?.text ?? '' }], structuredContent: { id: args.id, text: note?.text ?? null } };
    }
    const note = this.notes.get(args.id) ?? { text: args.text ?? '', added: 0 };
    note.added++;
    this.notes.set(args.id, note);
    return { content: [{ type: 'text' as const, text: `added ${args.id}` }], structuredContent: { id: args.id, added: note.added } };
  }
}

const getNote = { description: 'Reads a note', annotations: { readOnlyHint: true } };
const addNote = { description: 'Adds a note (a side effect)', annotations: { readOnlyHint: false, idempotentHint: false } };

/** The notebook's tools on the 2.x server SDK (served on 2026-07-28, and on 2025 revisions unless strict). */
export function nextNoteServer(book: NoteBook): McpServer {
  const s = new McpServer({ name: 'notes-next', version: '2.4.0' });
  s.registerTool('get_note', { ...getNote, inputSchema: z.object({ id: z.string() }) }, (args, ctx) =>
    book.run('get_note', args, ctx.mcpReq._meta ?? {}, ctx.mcpReq.signal),
  );
  s.registerTool(
    'add_note',
    { ...addNote, inputSchema: z.object({ id: z.string(), text: z.string(), delay_ms: z.number().int().optional() }) },
    (args, ctx) => book.run('add_note', args, ctx.mcpReq._meta ?? {}, ctx.mcpReq.signal),
  );
  return s;
}

/** The same tools on the 1.32 SDK (2025 revisions only). */
export function legacyNoteServer(book: NoteBook): LegacyMcpServer {
  const s = new LegacyMcpServer({ name: 'notes-legacy', version: '1.32.2' });
  s.registerTool('get_note', { ...getNote, inputSchema: { id: z.string() } }, (args, extra) =>
    book.run('get_note', args, extra._meta ?? {}, extra.signal),
  );
  s.registerTool(
    'add_note',
    { ...addNote, inputSchema: { id: z.string(), text: z.string(), delay_ms: z.number().int().optional() } },
    (args, extra) => book.run('add_note', args, extra._meta ?? {}, extra.signal),
  );
  return s;
}
