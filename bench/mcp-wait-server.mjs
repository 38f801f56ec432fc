#!/usr/bin/env node
// The benchmarks' MCP tool server, a process of its own so its CPU is counted apart: the official
// SDK's Streamable HTTP server (one session per client), one read-only `wait` tool that awaits the
// given milliseconds. MCP_JSON_RESPONSE=1 answers plain JSON instead of an SSE stream per request
// (`enableJsonResponse`). Prints `{"url": ...}` as one line once listening.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const enableJsonResponse = process.env.MCP_JSON_RESPONSE === '1';
const sessions = new Map();
const app = express();
app.use(express.json());
app.post('/mcp', async (req, res) => {
  const sid = req.header('mcp-session-id');
  let t = sid ? sessions.get(sid) : undefined;
  if (!t) {
    if (sid || !isInitializeRequest(req.body))
      return void res.status(404).json({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null });
    t = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse,
      onsessioninitialized: (id) => sessions.set(id, t),
    });
    t.onclose = () => t.sessionId && sessions.delete(t.sessionId);
    const server = new McpServer({ name: 'bench-tools', version: '0.1.0' });
    server.registerTool(
      'wait',
      {
        description: 'Waits ms milliseconds',
        inputSchema: { ms: z.number().int().min(0).max(10000) },
        // Read-only: ledgered, but never "unknown".
        annotations: { readOnlyHint: true },
      },
      async ({ ms }) => {
        await new Promise((r) => setTimeout(r, ms));
        return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
      },
    );
    await server.connect(t);
  }
  await t.handleRequest(req, res, req.body);
});
// The 2026-07-28 probe (`server/discover`) is a POST too; GET (standalone SSE) and DELETE are not needed here.
app.get('/mcp', (_req, res) => void res.status(405).end());
app.delete('/mcp', async (req, res) => {
  const t = sessions.get(req.header('mcp-session-id') ?? '');
  if (!t) return void res.status(404).end();
  await t.handleRequest(req, res);
});
const server = await new Promise((resolve) => {
  const s = app.listen(0, '127.0.0.1', () => resolve(s));
});
// Many keep-alive connections from one client: never close them for idleness mid-run.
server.keepAliveTimeout = 60_000;
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/mcp`, enableJsonResponse }));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  process.exit(0);
});
