import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerSpec } from '@mesh/agent-sdk';
import type { JsonObject } from '@mesh/contract';
import { SpanAttr, SpanKind, traceHeaders, withSpan } from '@mesh/telemetry';

/** A tool as the gateway needs to know it. */
export interface ToolInfo {
  name: string;
  description?: string;
  inputSchema: JsonObject;
  /** True when the tool says it only reads (`readOnlyHint`) or may be repeated safely (`idempotentHint`). */
  safeToRepeat: boolean;
}

export interface McpConnectionOptions {
  clientName: string;
  clientVersion?: string;
  /** Where a stdio server's stderr goes (default: inherited). */
  stderr?: 'inherit' | 'ignore' | 'pipe';
  /** HTTP servers: a fresh bearer token for each request (the server refuses requests without one). */
  bearer?: () => Promise<string>;
}

/**
 * One MCP server, connected lazily through the official SDK client. The tool list is fetched once
 * and cached; it is dropped on `notifications/tools/list_changed` and whenever the connection closes.
 * A closed connection (a crashed stdio server, a restarted HTTP server) is re-opened on next use,
 * which for stdio means starting the command again.
 */
export class McpConnection {
  private client?: Client;
  private connecting?: Promise<Client>;
  private toolCache?: Promise<Map<string, ToolInfo>>;
  private closed = false;
  /** How many times a connection was opened (1 after the first use). */
  connects = 0;

  constructor(
    readonly name: string,
    readonly spec: McpServerSpec,
    private readonly opts: McpConnectionOptions,
  ) {}

  /** Pid of the stdio server process, when connected over stdio. */
  get pid(): number | undefined {
    const t = this.client?.transport;
    return t instanceof StdioClientTransport ? (t.pid ?? undefined) : undefined;
  }

  async tools(): Promise<Map<string, ToolInfo>> {
    this.toolCache ??= this.fetchTools().catch((err: unknown) => {
      this.toolCache = undefined;
      throw err;
    });
    return this.toolCache;
  }

  /** Calls a tool; rejects with the SDK's errors (McpError with RequestTimeout/ConnectionClosed, abort reasons, fetch errors). */
  async callTool(
    name: string,
    args: JsonObject,
    meta: JsonObject,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<CallToolResult> {
    try {
      return await this.callOnce(name, args, meta, options);
    } catch (err) {
      // 404: the server no longer knows the session (it expired while idle, or the server restarted).
      // The request was refused before it was handled, so one retry on a new session is safe.
      if (!isUnknownSession(err) || options.signal?.aborted) throw err;
      return this.callOnce(name, args, meta, options);
    }
  }

  private async callOnce(
    name: string,
    args: JsonObject,
    meta: JsonObject,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<CallToolResult> {
    const client = await this.connect(options.signal);
    const attributes = {
      'rpc.system': 'mcp',
      'mcp.method.name': 'tools/call',
      'mcp.server.name': this.name,
      [SpanAttr.genAiToolName]: name,
    };
    return withSpan(`tools/call ${name}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        // The server may continue the trace: W3C trace context travels in `_meta` (MCP has no headers over stdio).
        const result = (await whileRequest(options.signal, (signal) =>
          client.callTool({ name, arguments: args, _meta: { ...meta, ...traceHeaders() } }, undefined, {
            signal,
            timeout: options.timeoutMs,
          }),
        )) as CallToolResult;
        if (result.isError) span.setAttribute('error.type', 'tool_error');
        return result;
      } catch (err) {
        if (isConnectionFailure(err)) await this.reset(client);
        throw err;
      }
    });
  }

  /** Closes the connection (and a stdio child); the connection is not reopened afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    const c = this.client;
    this.client = undefined;
    this.toolCache = undefined;
    await c?.close().catch(() => undefined);
  }

  private async fetchTools(): Promise<Map<string, ToolInfo>> {
    try {
      return await this.listOnce();
    } catch (err) {
      // As for calls: a session the server forgot (404) is replaced once.
      if (!isUnknownSession(err)) throw err;
      return this.listOnce();
    }
  }

  private async listOnce(): Promise<Map<string, ToolInfo>> {
    const client = await this.connect();
    const out = new Map<string, ToolInfo>();
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined).catch(async (err: unknown) => {
        if (isConnectionFailure(err)) await this.reset(client);
        throw err;
      });
      for (const t of page.tools) {
        out.set(t.name, {
          name: t.name,
          description: t.description,
          inputSchema: t.inputSchema as JsonObject,
          safeToRepeat: t.annotations?.readOnlyHint === true || t.annotations?.idempotentHint === true,
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return out;
  }

  private connect(signal?: AbortSignal): Promise<Client> {
    if (this.closed) return Promise.reject(new Error(`MCP server "${this.name}" connection is closed`));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open(signal).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(signal?: AbortSignal): Promise<Client> {
    const client = new Client({ name: this.opts.clientName, version: this.opts.clientVersion ?? '0.1.0' }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      this.toolCache = undefined;
    });
    client.onclose = () => {
      // The transport is gone (child exited, session closed): forget it and its tools; reopen on next use.
      if (this.client === client) {
        this.client = undefined;
        this.toolCache = undefined;
      }
    };
    const transport =
      this.spec.transport === 'stdio'
        ? new StdioClientTransport({
            command: this.spec.command,
            args: this.spec.args ?? [],
            env: { ...getDefaultEnvironment(), ...(this.spec.env ?? {}) },
            cwd: this.spec.cwd,
            stderr: this.opts.stderr ?? 'inherit',
          })
        : new StreamableHTTPClientTransport(new URL(this.spec.url), this.opts.bearer ? { fetch: withBearer(this.opts.bearer) } : {});
    await whileRequest(signal, (s) => client.connect(transport, { signal: s, timeout: this.spec.requestTimeoutMs ?? 10000 }));
    this.connects++;
    this.client = client;
    this.toolCache = undefined;
    return client;
  }

  private async reset(client: Client): Promise<void> {
    if (this.client === client) {
      this.client = undefined;
      this.toolCache = undefined;
    }
    await client.close().catch(() => undefined);
  }
}

/** fetch that adds `Authorization: Bearer <token>` with a token made for this request. */
function withBearer(bearer: () => Promise<string>): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${await bearer()}`);
    return fetch(url, { ...init, headers });
  };
}

function isUnknownSession(err: unknown): boolean {
  return err instanceof StreamableHTTPError && err.code === 404;
}

/** Errors after which the connection cannot be trusted any more. */
function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (code === -32000) return true; // ConnectionClosed
  if (err instanceof TypeError) return true; // fetch failed
  return err instanceof StreamableHTTPError;
}

/**
 * Runs one SDK request with a signal of its own that follows `outer` only while the request runs.
 * The SDK adds an abort listener to the signal it is given and never removes it: handed a turn's
 * signal directly, every call of the turn left one behind (a MaxListeners warning past ten), and
 * aborting the turn later ran them all, sending `notifications/cancelled` for requests long answered.
 */
async function whileRequest<T>(outer: AbortSignal | undefined, request: (signal?: AbortSignal) => Promise<T>): Promise<T> {
  if (!outer) return request(undefined);
  const own = new AbortController();
  const follow = () => own.abort(outer.reason);
  if (outer.aborted) follow();
  else outer.addEventListener('abort', follow, { once: true });
  try {
    return await request(own.signal);
  } finally {
    outer.removeEventListener('abort', follow);
  }
}
