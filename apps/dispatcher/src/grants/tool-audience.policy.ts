/**
 * Which tool servers (RFC 8707 `resource`, a server's token audience) an agent's worker may get
 * tokens for. Provided under {@link TOOL_AUDIENCE_POLICY}; by default the team bindings answer it.
 */
export interface ToolAudiencePolicy {
  /** The audiences `agentId` may get tokens for, or `'any'`. */
  allowed(agentId: string): Promise<ReadonlySet<string> | 'any'>;
}

/** Injection token of the {@link ToolAudiencePolicy} the token endpoint asks. */
export const TOOL_AUDIENCE_POLICY = Symbol('dispatcher.tool-audience-policy');

/** Every agent may get tokens for every tool server. */
export const anyToolAudience: ToolAudiencePolicy = { allowed: () => Promise.resolve('any') };
