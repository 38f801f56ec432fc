import { ChannelKey, DEFAULT_CHANNEL_KEY_TEMPLATE, isAgentId, MeshError, type AgentVisibility, type JsonObject } from '@mesh/contract';
import type { AgentContext, AgentTask, TurnOutcome } from './agent-task.js';

/** Settings every MCP server shares. */
interface McpServerCommon {
  /** Most calls in flight to this server at once per worker; further calls wait. */
  maxConcurrency?: number;
  /** MCP request timeout of one call (also bounded by the task deadline). */
  requestTimeoutMs?: number;
  /**
   * Tool that resolves an unknown outcome: called with `{ idempotency_key }`, answers structured
   * content `{ status: 'applied', result } | { status: 'not_found' }`.
   */
  reconcileTool?: string;
  /**
   * When set, each call carries a short-lived JWT minted for this audience (tenant and subject of
   * the task) in `_meta["mesh/token"]`, and over HTTP every request carries a connection token
   * (`Authorization: Bearer`, no tenant) for it too.
   */
  tokenAudience?: string;
}

/** A tool server started as a child process speaking MCP over stdio. */
export interface StdioMcpServer extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/** A tool server reached over MCP Streamable HTTP. */
export interface HttpMcpServer extends McpServerCommon {
  transport: 'http';
  url: string;
  /**
   * MCP sessions opened to this server per worker (default 1); calls go to them in turn. Each
   * session is replaced on its own when it dies or the server forgets it. An integer 1-64.
   */
  sessions?: number;
}

/** Where a tool server is and how to treat it. */
export type McpServerSpec = StdioMcpServer | HttpMcpServer;

/** How the agent's command channel is keyed and sized. */
export interface ChannelSettings {
  /**
   * Channel key template (docs/contract.md §4.2), default `{tenant}:{agent_id}:{context_id}`: one
   * tenant's conversations spread over the partitions, each one's turns in order. Left out, an
   * agent already in the directory keeps the template it has.
   */
  keyTemplate?: string;
  partitions?: number;
  visibility?: AgentVisibility;
  /** Turns of this agent in flight at once per worker. */
  maxInFlight?: number;
}

/** The handler: one turn of a task in, an outcome out. Throwing fails the task with the error message. */
export type AgentHandler = (task: AgentTask, ctx: AgentContext) => Promise<TurnOutcome>;

/** Everything the runtime needs to run an agent. */
export interface AgentDefinition {
  /** Agent id: a slug used in topic names and URLs. */
  id: string;
  /** A2A Agent Card (registered in the directory as is). */
  card: JsonObject & { name: string };
  channel: Required<Pick<ChannelSettings, 'keyTemplate' | 'partitions' | 'visibility' | 'maxInFlight'>> & {
    /** Whether the team named `keyTemplate` (false: the default, used only when the agent is first registered). */
    keyTemplateNamed?: boolean;
  };
  /** MCP servers by name; tools are addressed as `mcp__{name}__{tool}`. Config may override each spec. */
  mcpServers: Record<string, McpServerSpec>;
  handler: AgentHandler;
}

/** What a team writes. */
export interface AgentDefinitionInput {
  id: string;
  card: JsonObject & { name: string };
  channel?: ChannelSettings;
  mcpServers?: Record<string, McpServerSpec>;
  handler: AgentHandler;
}

const SERVER_NAME_RE = /^[a-z0-9][a-z0-9-]{0,40}$/;

/** Validates and fills in an agent definition. */
export function defineAgent(input: AgentDefinitionInput): AgentDefinition {
  if (!isAgentId(input.id)) throw new MeshError('CONFIG_INVALID', `invalid agent id "${input.id}"`);
  for (const name of Object.keys(input.mcpServers ?? {})) {
    // `_` separates the parts of a namespaced tool name, so a server name may not contain it.
    if (!SERVER_NAME_RE.test(name)) throw new MeshError('CONFIG_INVALID', `invalid MCP server name "${name}" (lower-case, digits, dash)`);
    const spec = input.mcpServers![name]!;
    if (
      spec.transport === 'http' &&
      spec.sessions !== undefined &&
      !(Number.isInteger(spec.sessions) && spec.sessions >= 1 && spec.sessions <= 64)
    )
      throw new MeshError('CONFIG_INVALID', `MCP server "${name}": sessions must be an integer from 1 to 64, got ${String(spec.sessions)}`);
  }
  if (input.channel?.keyTemplate !== undefined) {
    // Refused here, at start, rather than by the directory when the agent registers.
    try {
      ChannelKey.parse(input.channel.keyTemplate);
    } catch (e) {
      throw new MeshError('CONFIG_INVALID', `agent "${input.id}": ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return Object.freeze({
    id: input.id,
    card: input.card,
    channel: {
      keyTemplate: input.channel?.keyTemplate ?? DEFAULT_CHANNEL_KEY_TEMPLATE,
      keyTemplateNamed: input.channel?.keyTemplate !== undefined,
      partitions: input.channel?.partitions ?? 4,
      visibility: input.channel?.visibility ?? 'tenant',
      maxInFlight: input.channel?.maxInFlight ?? 64,
    },
    mcpServers: { ...(input.mcpServers ?? {}) },
    handler: input.handler,
  });
}

/** `mcp__{server}__{tool}`. */
export function toolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/** `mcp__{server}__{tool}` → parts; undefined when the name is not namespaced. */
export function parseToolName(name: string): { server: string; tool: string } | undefined {
  const m = /^mcp__([a-z0-9][a-z0-9-]*)__(.+)$/.exec(name);
  return m ? { server: m[1], tool: m[2] } : undefined;
}
