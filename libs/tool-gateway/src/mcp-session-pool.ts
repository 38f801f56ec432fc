import type { McpServerSpec } from '@mesh/agent-sdk';
import { MeshError, type JsonObject } from '@mesh/contract';
import { httpFetch } from './http-fetch.js';
import { McpConnection, type McpConnectionOptions, type NegotiatedProtocol, type ToolInfo } from './mcp-connection.js';
import type { ToolCallResult } from './mcp-shapes.js';

/**
 * The MCP sessions of one server: `spec.sessions` connections over HTTP (one for stdio, where a
 * session is a child process), each opened on first use and replaced on its own when it dies or
 * the server answers 404 for it, so one lost session never re-initialises the others. Calls go
 * to the sessions in turn; the tool list is fetched once, through the first session. Over HTTP
 * the sessions share one keep-alive socket pool (node:http, see `httpFetch`) that keeps up to
 * `idleSockets` sockets open between bursts.
 */
export class McpSessionPool {
  /** The sessions, in the order calls visit them. */
  readonly sessions: readonly McpConnection[];
  private next = 0;
  private readonly fetch?: ReturnType<typeof httpFetch>;

  constructor(
    readonly name: string,
    readonly spec: McpServerSpec,
    opts: McpConnectionOptions & { idleSockets?: number },
  ) {
    const { idleSockets, ...connOpts } = opts;
    const n = spec.transport === 'http' ? (spec.sessions ?? 1) : 1;
    // defineAgent checks this too; AGENTS_MCP_SERVERS overrides arrive here without it.
    if (!(Number.isInteger(n) && n >= 1 && n <= 64))
      throw new MeshError('CONFIG_INVALID', `MCP server "${name}": sessions must be an integer from 1 to 64, got ${String(n)}`);
    if (spec.transport === 'http' && !opts.fetch) this.fetch = httpFetch(idleSockets !== undefined ? { maxFreeSockets: idleSockets } : {});
    this.sessions = Array.from(
      { length: n },
      () => new McpConnection(name, spec, { ...connOpts, ...(this.fetch ? { fetch: this.fetch } : {}) }),
    );
  }

  /** Pid of the stdio server process, when connected over stdio. */
  get pid(): number | undefined {
    return this.sessions[0]!.pid;
  }

  /** The revision the first session negotiated (undefined before its first use). */
  get negotiated(): NegotiatedProtocol | undefined {
    return this.sessions[0]!.negotiated;
  }

  /** Sessions opened so far, over all members (each replacement counts). */
  get connects(): number {
    return this.sessions.reduce((n, s) => n + s.connects, 0);
  }

  tools(): Promise<Map<string, ToolInfo>> {
    return this.sessions[0]!.tools();
  }

  /** Calls a tool on the next session in turn; errors as `McpConnection.callTool`. */
  callTool(
    name: string,
    args: JsonObject,
    meta: JsonObject,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<ToolCallResult> {
    const session = this.sessions[this.next]!;
    this.next = (this.next + 1) % this.sessions.length;
    return session.callTool(name, args, meta, options);
  }

  async close(): Promise<void> {
    await Promise.all(this.sessions.map((s) => s.close()));
    this.fetch?.close();
  }
}
