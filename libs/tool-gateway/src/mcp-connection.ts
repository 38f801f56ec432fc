import {
  Client,
  ProtocolError,
  SdkError,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type DiscoverResult,
} from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import type { McpServerSpec } from '@mesh/agent-sdk';
import { onAbort, type JsonObject } from '@mesh/contract';
import { SpanAttr, SpanKind, traceHeaders, withSpan } from '@mesh/telemetry';
import type { FetchLike } from './http-fetch.js';
import { normaliseCallResult, normaliseInputSchema, type ToolCallResult } from './mcp-shapes.js';

/** A tool as the gateway needs to know it. */
export interface ToolInfo {
  name: string;
  description?: string;
  /** JSON Schema draft-07 without `$schema`, whichever dialect the server used. */
  inputSchema: JsonObject;
  /** True when the tool says it only reads (`readOnlyHint`) or may be repeated safely (`idempotentHint`). */
  safeToRepeat: boolean;
}

/** The protocol a connection settled on: `legacy` is a 2025 revision (`initialize`), `modern` 2026-07-28 or later. */
export interface NegotiatedProtocol {
  era: 'legacy' | 'modern';
  version: string;
}

export interface McpConnectionOptions {
  clientName: string;
  clientVersion?: string;
  /** Where a stdio server's stderr goes (default: inherited). */
  stderr?: 'inherit' | 'ignore' | 'pipe';
  /** HTTP servers: a fresh bearer token for each request (the server refuses requests without one). */
  bearer?: () => Promise<string>;
  /** HTTP servers: the fetch the transport uses (default: the global fetch). */
  fetch?: FetchLike;
  /**
   * How long an "older server" verdict holds before the server is probed again (default 15 min).
   * An upgraded server keeps answering `initialize`, so without a re-check it would stay on the old
   * revision for as long as the connection lives.
   */
  legacyRecheckMs?: number;
}

/** What was learned about a server's revision, reused when the connection is re-opened. */
type Verdict = { era: 'modern'; discover: DiscoverResult } | { era: 'legacy'; checkedAt: number };

/**
 * One MCP server, connected lazily through the official SDK client, on either protocol revision:
 * the first connect probes with `server/discover` and falls back to `initialize` for an older
 * server; the verdict is remembered for later connects, and an "older server" verdict is probed
 * again once it is `legacyRecheckMs` old. A probe answered with 401/403/5xx, or not answered over
 * HTTP, is an error, never a verdict. The tool list is fetched once and cached; it is dropped when
 * the server announces a change and whenever the connection closes. A closed connection (a crashed
 * stdio server, a restarted HTTP server) is re-opened on next use, which for stdio means starting
 * the command again.
 */
export class McpConnection {
  private client?: Client;
  private connecting?: Promise<Client>;
  private rechecking?: Promise<void>;
  private verdict?: Verdict;
  private toolCache?: Promise<Map<string, ToolInfo>>;
  private closed = false;
  /** Requests in flight per client, so a client replaced after a re-check closes only once idle. */
  private readonly inFlight = new Map<Client, number>();
  private readonly retiring = new Set<Client>();
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

  /** The revision the current connection negotiated (undefined before the first use). */
  get negotiated(): NegotiatedProtocol | undefined {
    const c = this.client;
    const era = c?.getProtocolEra();
    const version = c?.getNegotiatedProtocolVersion();
    return era && version ? { era, version } : undefined;
  }

  async tools(): Promise<Map<string, ToolInfo>> {
    this.toolCache ??= this.fetchTools().catch((err: unknown) => {
      this.toolCache = undefined;
      throw err;
    });
    return this.toolCache;
  }

  /**
   * Calls a tool; rejects with the SDK's errors (SdkError REQUEST_TIMEOUT/CONNECTION_CLOSED,
   * ProtocolError with a JSON-RPC code, abort reasons, fetch errors). Aborting `signal` cancels
   * the request the way the negotiated revision does: `notifications/cancelled` on a 2025
   * connection, closing the request's own response stream on a 2026-07-28 HTTP connection.
   */
  async callTool(
    name: string,
    args: JsonObject,
    meta: JsonObject,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<ToolCallResult> {
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
  ): Promise<ToolCallResult> {
    const client = await this.connect(options.signal);
    const attributes = {
      'rpc.system': 'mcp',
      'mcp.method.name': 'tools/call',
      'mcp.server.name': this.name,
      ...(this.negotiated ? { 'mcp.protocol.version': this.negotiated.version } : {}),
      [SpanAttr.genAiToolName]: name,
    };
    return withSpan(`tools/call ${name}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        // The server may continue the trace: W3C trace context travels in `_meta` (MCP has no headers over stdio).
        const result = normaliseCallResult(
          await this.using(client, () =>
            whileRequest(options.signal, (signal) =>
              client.callTool({ name, arguments: args, _meta: { ...meta, ...traceHeaders() } }, { signal, timeout: options.timeoutMs }),
            ),
          ),
        );
        if (result.isError) span.setAttribute('error.type', 'tool_error');
        return result;
      } catch (err) {
        if (isConnectionFailure(err)) await this.reset(client, err);
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
    await this.rechecking;
    await Promise.all([c, ...this.retiring].map((x) => x?.close().catch(() => undefined)));
    this.retiring.clear();
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
    // Without a cursor the SDK walks every page itself.
    const listed = await this.using(client, () => client.listTools()).catch(async (err: unknown) => {
      if (isConnectionFailure(err)) await this.reset(client, err);
      throw err;
    });
    for (const t of listed.tools) {
      out.set(t.name, {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        inputSchema: normaliseInputSchema(t.inputSchema),
        safeToRepeat: t.annotations?.readOnlyHint === true || t.annotations?.idempotentHint === true,
      });
    }
    return out;
  }

  private connect(signal?: AbortSignal): Promise<Client> {
    if (this.closed) return Promise.reject(new Error(`MCP server "${this.name}" connection is closed`));
    if (this.client) {
      if (this.recheckDue()) this.rechecking ??= this.recheck().finally(() => (this.rechecking = undefined));
      return Promise.resolve(this.client);
    }
    this.connecting ??= this.open(signal).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** An HTTP server judged older long enough ago: it may have been upgraded behind the same URL. */
  private recheckDue(): boolean {
    return this.spec.transport === 'http' && this.legacyVerdictDue();
  }

  private legacyVerdictDue(): boolean {
    const v = this.verdict;
    return v?.era === 'legacy' && Date.now() - v.checkedAt >= (this.opts.legacyRecheckMs ?? 15 * 60_000);
  }

  /**
   * Probes the server again on a new connection and switches to it; the old one closes once its
   * requests are answered. A failed probe keeps the old connection and tries again after the next
   * interval (the server answered before, so a failure here says nothing about its revision).
   */
  private async recheck(): Promise<void> {
    const old = this.client;
    if (!old || this.verdict?.era !== 'legacy') return;
    this.verdict = { era: 'legacy', checkedAt: Date.now() };
    let fresh: Client;
    try {
      fresh = await this.handshake(undefined, undefined);
    } catch {
      return;
    }
    if (this.closed || this.client !== old) {
      await fresh.close().catch(() => undefined);
      return;
    }
    this.adopt(fresh);
    await this.retire(old);
  }

  private async open(signal?: AbortSignal): Promise<Client> {
    const v = this.verdict;
    // A remembered verdict skips the probe (for stdio, the probe's extra process); a due re-check does not.
    const prior =
      v?.era === 'modern'
        ? { kind: 'modern' as const, discover: v.discover }
        : v && !this.legacyVerdictDue()
          ? { kind: 'legacy' as const }
          : undefined;
    let client: Client;
    try {
      client = await this.handshake(prior, signal);
    } catch (err) {
      // The server changed revision since the verdict (upgraded to serve only the new one, or
      // downgraded): forget it and negotiate afresh, once.
      if (!prior || signal?.aborted || !isRevisionMismatch(err)) throw err;
      this.verdict = undefined;
      client = await this.handshake(undefined, signal);
    }
    this.adopt(client);
    return client;
  }

  /** Opens a client and negotiates; with `prior`, the remembered verdict instead of a probe. */
  private async handshake(
    prior: { kind: 'modern'; discover: DiscoverResult } | { kind: 'legacy' } | undefined,
    signal?: AbortSignal,
  ): Promise<Client> {
    const timeout = this.spec.requestTimeoutMs ?? 10000;
    const client = new Client(
      { name: this.opts.clientName, version: this.opts.clientVersion ?? '0.1.0' },
      {
        capabilities: {},
        versionNegotiation: { mode: 'auto', probe: { timeoutMs: timeout } },
        // On a 2025 connection this follows the server's notifications; on a 2026-07-28 one the SDK
        // opens a `subscriptions/listen` stream for them.
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 0,
            onChanged: () => {
              if (this.client === client) this.toolCache = undefined;
            },
          },
        },
      },
    );
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
        : new StreamableHTTPClientTransport(new URL(this.spec.url), this.httpOptions());
    try {
      await whileRequest(signal, (s) => client.connect(transport, { signal: s, timeout, ...(prior ? { prior } : {}) }));
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    const era = client.getProtocolEra();
    const discover = client.getDiscoverResult();
    this.verdict =
      era === 'modern' && discover
        ? { era: 'modern', discover }
        : prior?.kind === 'legacy' && this.verdict?.era === 'legacy'
          ? this.verdict
          : { era: 'legacy', checkedAt: Date.now() };
    return client;
  }

  private httpOptions(): { fetch?: FetchLike } {
    const base = this.opts.fetch;
    if (this.opts.bearer) return { fetch: withBearer(this.opts.bearer, base ?? fetch) };
    return base ? { fetch: base } : {};
  }

  private adopt(client: Client): void {
    this.connects++;
    this.client = client;
    this.toolCache = undefined;
  }

  /** Counts a request against its client, so a retiring client is closed only after it is answered. */
  private async using<T>(client: Client, request: () => Promise<T>): Promise<T> {
    this.inFlight.set(client, (this.inFlight.get(client) ?? 0) + 1);
    try {
      return await request();
    } finally {
      const n = (this.inFlight.get(client) ?? 1) - 1;
      if (n > 0) this.inFlight.set(client, n);
      else {
        this.inFlight.delete(client);
        if (this.retiring.delete(client)) await client.close().catch(() => undefined);
      }
    }
  }

  private async retire(client: Client): Promise<void> {
    if (this.inFlight.has(client)) this.retiring.add(client);
    else await client.close().catch(() => undefined);
  }

  private async reset(client: Client, err: unknown): Promise<void> {
    if (this.client === client) {
      this.client = undefined;
      this.toolCache = undefined;
      // The next open negotiates afresh after a refused revision, and after any failure on the new
      // one: reused without a round trip, a verdict gone stale would only ever fail (while a stale
      // "older server" verdict still works, and its re-check is on the schedule).
      if (this.verdict?.era === 'modern' || isRevisionMismatch(err)) this.verdict = undefined;
    }
    await client.close().catch(() => undefined);
  }
}

/** fetch that adds `Authorization: Bearer <token>` with a token made for this request. */
function withBearer(bearer: () => Promise<string>, base: FetchLike): FetchLike {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${await bearer()}`);
    return base(url, { ...init, headers });
  };
}

function isUnknownSession(err: unknown): boolean {
  return err instanceof SdkHttpError && err.status === 404;
}

/** -32022 "Unsupported protocol version", or a failed negotiation: the server serves another revision. */
function isRevisionMismatch(err: unknown): boolean {
  if (err instanceof ProtocolError) return err.code === -32022;
  if (err instanceof SdkHttpError)
    return err.status === 400 && /-32022|protocol version/i.test(`${err.message} ${String(err.data.text ?? '')}`);
  return err instanceof SdkError && err.code === 'ERA_NEGOTIATION_FAILED';
}

/** Errors after which the connection cannot be trusted any more. */
function isConnectionFailure(err: unknown): boolean {
  if (err instanceof TypeError) return true; // fetch failed
  if (err instanceof SdkHttpError) return true;
  if (err instanceof ProtocolError) return err.code === -32022;
  return err instanceof SdkError && (err.code === 'CONNECTION_CLOSED' || err.code === 'SEND_FAILED' || err.code === 'NOT_CONNECTED');
}

/**
 * Runs one SDK request with a signal of its own that follows `outer` only while the request runs.
 * The SDK adds an abort listener to the signal it is given and never removes it: handed a turn's
 * signal directly, every call of the turn left one behind (a MaxListeners warning past ten), and
 * aborting the turn later ran them all, sending `notifications/cancelled` for requests long answered.
 * Concurrent requests of one turn share a single listener on its signal (`onAbort`), removed with the last.
 */
async function whileRequest<T>(outer: AbortSignal | undefined, request: (signal?: AbortSignal) => Promise<T>): Promise<T> {
  if (!outer) return request(undefined);
  const own = new AbortController();
  const unsubscribe = onAbort(outer, () => own.abort(outer.reason));
  try {
    return await request(own.signal);
  } finally {
    unsubscribe();
  }
}
